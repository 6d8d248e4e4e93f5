"""The modules no hub or window may load while starting: each costs 0.1 to 1 s (torch alone is
ten times a bare Qt window). Capabilities import them inside the functions that need them. NumPy
is one for its memory (about 15 MB in every process that has it): a tool window whose job has
ended holds none of these (benchmarks/memory.py)."""

from __future__ import annotations

import sys

HEAVY_MODULES = ("torch", "onnx", "onnxruntime", "onnxscript", "git", "paramiko", "jupyter_client",
                 "qtconsole", "ipykernel", "sklearn", "pyqtgraph", "debugpy", "pylsp",
                 "sansio_lsp_client", "jedi", "matplotlib", "numpy")


def heavy_modules_loaded() -> list[str]:
    return sorted(name for name in HEAVY_MODULES if name in sys.modules)
