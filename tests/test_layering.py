"""Imports run one way (ARCHITECTURE.md; the table is in tests/layering.py): the foundation
imports no capability, each capability imports only those its row names, services import no Qt
and no widgets, widgets meet other capabilities only through their services, nothing imports
plugins, plugins import only what a package exports, and heavy libraries stay out of module tops.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tests.layering import CAPABILITY_MAY_IMPORT, layering_faults, plugin_faults

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
HEAVY = {"torch", "onnx", "onnxruntime", "onnxscript", "git", "paramiko", "jupyter_client", "qtconsole",
         "ipykernel", "sklearn", "pyqtgraph", "debugpy", "pylsp", "jedi", "matplotlib"}
MAX_LINES = 800


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


def test_every_import_in_workbench_follows_the_layering_table():
    assert layering_faults(PACKAGE) == []


def test_training_never_imports_the_cluster():
    assert "cluster" not in CAPABILITY_MAY_IMPORT["training"]


def test_the_first_party_plugins_import_only_what_workbench_exports():
    faults = []
    for plugin in sorted((ROOT / "plugins").iterdir()):
        for package in plugin.iterdir():
            if (package / "__init__.py").is_file() and package.name != "tests":
                faults += plugin_faults(package, PACKAGE)
    assert faults == []


def test_nothing_in_workbench_imports_plugins():
    plugin_packages = {package.name for plugin in (ROOT / "plugins").iterdir() if plugin.is_dir()
                       for package in plugin.iterdir() if (package / "__init__.py").is_file()}
    offenders = [f"{path.relative_to(ROOT)} imports {name}" for path in PACKAGE.rglob("*.py")
                 for name in _imports(path, False) if name.split(".")[0] in plugin_packages | {"plugins"}]
    assert offenders == []


def test_heavy_libraries_are_never_imported_at_module_top():
    offenders = [f"{path.relative_to(PACKAGE)} imports {name}" for path in PACKAGE.rglob("*.py")
                 for name in _imports(path, top_level_only=True) if name.split(".")[0] in HEAVY]
    assert offenders == []


def test_no_source_file_is_longer_than_a_reader_can_hold():
    long_files = [f"{path.relative_to(ROOT)}: {lines} lines"
                  for folder in ("workbench", "workbench_trainkit", "device_sdk", "plugins", "tests", "benchmarks")
                  for path in (ROOT / folder).rglob("*.py")
                  if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert long_files == []


def test_the_training_helpers_stand_alone():
    """workbench_trainkit runs inside users' scripts, on clusters too: it needs nothing of
    Workbench and no Qt, and its hyper-parameter parser loads neither torch nor numpy."""
    trainkit = ROOT / "workbench_trainkit"
    offenders = [f"{path.name} imports {name}" for path in trainkit.rglob("*.py")
                 for name in _imports(path, top_level_only=False)
                 if name.split(".")[0] in ("workbench", "PySide6", "pyqtgraph")]
    assert offenders == []
    for light in ("hparams.py", "schema.py"):
        heavy = [n for n in _imports(trainkit / light, False) if n.split(".")[0] in ("torch", "numpy")]
        assert heavy == [], light


# The checker itself, on small trees made to break one rule each: each must be caught, and the
# same tree mended must pass.

def _tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "workbench"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            (package / parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return package


BREAKS = {
    "a lazy import from training to the cluster": (
        {"training/service.py": "def start():\n    from workbench.cluster.remote_run import submit\n",
         "cluster/remote_run.py": "def submit(): ...\n"},
        "training/service.py:2 imports workbench.cluster.remote_run: training may not import cluster"),
    "a relative import from training to the cluster": (
        {"training/service.py": "from ..cluster import remote_run\n",
         "cluster/remote_run.py": ""},
        "training/service.py:1 imports workbench.cluster.remote_run: training may not import cluster"),
    "widgets reaching into another capability's widgets": (
        {"cluster/widgets/run_dialog.py": "from workbench.training.widgets.train_dialog import TrainDialog\n",
         "training/widgets/train_dialog.py": ""},
        "never its widgets"),
    "a service importing Qt": (
        {"git/status.py": "from PySide6.QtCore import QObject\n"},
        "a service imports no Qt and no widgets"),
    "the foundation importing a capability": (
        {"platform/locks.py": "from workbench.device import paired\n", "device/paired.py": ""},
        "the foundation imports only the foundation"),
    "the Qt-free foundation importing Qt": (
        {"platform/processes.py": "def alive():\n    from PySide6.QtCore import QProcess\n"},
        "the Qt-free foundation imports no Qt"),
    "a folder the table does not know": (
        {"telemetry/versions.py": ""},
        "workbench/telemetry is in no row of the layering table"),
}


@pytest.mark.parametrize("rule", sorted(BREAKS))
def test_the_layering_check_catches(tmp_path, rule):
    files, expected = BREAKS[rule]
    faults = layering_faults(_tree(tmp_path, files))
    assert len(faults) == 1 and expected in faults[0], faults


def test_the_layering_check_passes_a_mended_tree(tmp_path):
    bad = _tree(tmp_path / "bad", {
        "training/service.py": "def start(backend):\n    from workbench.cluster.remote_run import submit\n",
        "cluster/remote_run.py": "from workbench.training.service import start\n"})
    assert len(layering_faults(bad)) == 1
    good = _tree(tmp_path / "good", {
        "training/service.py": "def start(backend):\n    return backend.start()\n",
        "cluster/remote_run.py": "from workbench.training.service import start\n"})
    assert layering_faults(good) == []


def test_the_plugin_check_refuses_modules_inside_packages_and_unexported_names(tmp_path):
    package = _tree(tmp_path, {
        "modeltools/__init__.py": '__all__ = ["ToolSpec"]\n', "modeltools/data.py": "SPLITS = ()\n",
        "tasks.py": "class Progress: ...\n"})
    plugin = tmp_path / "plugin" / "workbench_x"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(
        "from workbench.modeltools import ToolSpec\nfrom workbench.tasks import Progress\n")
    assert plugin_faults(plugin, package) == []
    (plugin / "convert.py").write_text(
        "from workbench.modeltools.data import SPLITS\nfrom workbench.modeltools import Secret\n")
    faults = plugin_faults(plugin, package)
    assert [f.split(" imports ")[1].split(",")[0] for f in faults] == [
        "workbench.modeltools.data", "workbench.modeltools.Secret"]
