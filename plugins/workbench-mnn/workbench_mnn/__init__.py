"""Workbench's MNN plugin: the "Convert to MNN" model tool (ONNX to ``.mnn``, checked against
onnxruntime) and a runtime that lets every model tool run ``.mnn`` files.

Registered through the entry point group ``workbench.plugins``; it uses only Workbench's public
model-tool API. Importing it is cheap: MNN is loaded when a tool runs or a model is opened.
"""

from __future__ import annotations

__version__ = "0.1.0"


def register(extensions) -> None:
    """Add the MNN tool and the ``.mnn`` runtime to Workbench."""
    from workbench_mnn.convert import SPEC

    extensions.add_model_tool(SPEC)
    extensions.add_model_runtime((".mnn",), "workbench_mnn.runtime:open_mnn_model")
