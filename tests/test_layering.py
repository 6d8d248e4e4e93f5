"""Imports run one way (ARCHITECTURE.md): services import no Qt and no widgets, capabilities
do not import the shell, nothing imports plugins, and heavy libraries stay out of module tops."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"
HEAVY = {"torch", "onnx", "onnxruntime", "onnxscript", "git", "paramiko", "jupyter_client", "qtconsole",
         "ipykernel", "sklearn", "pyqtgraph"}
CAPABILITIES = {"ipc", "project", "editor", "git", "training", "cluster", "modeltools", "device", "registry",
                "console"}


def _imports(path: Path, top_level_only: bool) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules():
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        yield path, parts


def test_service_modules_import_no_qt_and_no_widgets():
    offenders = []
    for path, parts in _modules():
        if parts[0] in CAPABILITIES and "widgets" not in parts and parts[0] != "ipc":
            for name in _imports(path, top_level_only=False):
                if name.startswith("PySide6") or ".widgets" in name:
                    offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_ipc_qt_modules_are_only_the_connection_and_server():
    qt_users = {path.name for path, parts in _modules() if parts[0] == "ipc"
                and any(n.startswith("PySide6") for n in _imports(path, False))}
    assert qt_users <= {"connection.py", "server.py"}


def test_capabilities_do_not_import_the_shell_or_the_app():
    offenders = []
    for path, parts in _modules():
        if parts[0] in CAPABILITIES:
            for name in _imports(path, top_level_only=False):
                if name.startswith(("workbench.ui", "workbench.app", "workbench.cli")):
                    offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_nothing_in_workbench_imports_plugins():
    offenders = [str(path) for path, _ in _modules() if any(n.startswith("plugins") for n in _imports(path, False))]
    assert offenders == []


def test_heavy_libraries_are_never_imported_at_module_top():
    offenders = []
    for path, _ in _modules():
        for name in _imports(path, top_level_only=True):
            if name.split(".")[0] in HEAVY:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_the_training_helpers_stand_alone():
    """workbench_trainkit runs inside users' scripts, on clusters too: it needs nothing of
    Workbench and no Qt, and its hyper-parameter parser loads neither torch nor numpy."""
    trainkit = PACKAGE.parent / "workbench_trainkit"
    offenders = [f"{path.name} imports {name}" for path in trainkit.rglob("*.py")
                 for name in _imports(path, top_level_only=False)
                 if name.split(".")[0] in ("workbench", "PySide6", "pyqtgraph")]
    assert offenders == []
    for light in ("hparams.py", "schema.py"):
        heavy = [n for n in _imports(trainkit / light, False) if n.split(".")[0] in ("torch", "numpy")]
        assert heavy == [], light
