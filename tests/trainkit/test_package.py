"""The helpers stay shippable on their own: stdlib, NumPy and torch only, and torch only on use."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import workbench_trainkit

PACKAGE = Path(workbench_trainkit.__file__).resolve().parent
ALLOWED = {"numpy", "torch", "workbench_trainkit"} | set(sys.stdlib_module_names)


def test_the_helpers_import_only_the_standard_library_numpy_torch_and_themselves():
    offenders = []
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            offenders += [f"{path.name} imports {name}" for name in names
                          if name.split(".")[0] not in ALLOWED]
    assert offenders == []


def test_reading_hyperparameters_does_not_import_torch():
    # Workbench reads hparams files through the package; torch would cost it seconds.
    code = ("import sys, workbench_trainkit, workbench_trainkit.hparams; "
            "workbench_trainkit.learning_rate_at(0, {'learning_rate': 1.0}, 10); "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_every_public_name_is_importable_from_the_package():
    for name in workbench_trainkit.__all__:
        assert getattr(workbench_trainkit, name) is not None, name
