"""The editor's services stay Qt-free and no editor module pulls in heavy libraries."""

import ast
from pathlib import Path

import workbench.editor

EDITOR = Path(workbench.editor.__file__).parent
FORBIDDEN_EVERYWHERE = {"torch", "onnx", "onnxruntime", "git", "paramiko"}
QT = {"PySide6", "PyQt5", "PyQt6", "shiboken6"}


def _imported_roots(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def test_service_modules_import_no_qt():
    services = sorted(EDITOR.glob("*.py"))
    assert len(services) > 5
    for path in services:
        assert not set(_imported_roots(path)) & QT, path.name


def test_no_editor_module_imports_heavy_libraries():
    for path in sorted(EDITOR.rglob("*.py")):
        assert not set(_imported_roots(path)) & FORBIDDEN_EVERYWHERE, path.name
