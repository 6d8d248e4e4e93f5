"""Writing a torch model out: as one ONNX file with a free batch axis, and as a ``.pt2``
program (torch.export) that keeps a pruned architecture the project's factory can no longer
build."""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import Callable

from workbench.modeltools.errors import ModelToolError

OUTPUT_NAME = "output"


def input_name(model) -> str:
    """The name of the model's first forward argument (``images``), the ONNX input's name."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return "input"
    named = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return named[0] if named else "input"


def export_onnx(model, example, target: Path, what: str,
                log: Callable[[str], None] = lambda text: None) -> str:
    """Write ``model`` (eval mode) to ``target`` as a single ONNX file whose batch axis is free,
    with torch's dynamo exporter, or the TorchScript one when that fails. Returns the exporter
    used; ModelToolError naming ``what`` when neither works. What the exporters print or warn
    goes to ``log``, as Convert's does, without the messages known to be harmless."""
    import torch

    from workbench.modeltools.library_output import captured_output

    name = input_name(model)
    model.eval()
    try:
        with captured_output(log):
            torch.onnx.export(model, (example,), str(target), input_names=[name],
                              output_names=[OUTPUT_NAME], dynamo=True, external_data=False,
                              dynamic_shapes=({0: torch.export.Dim("batch")},), verbose=False)
        return "dynamo"
    except Exception as exc:
        log(f"the dynamo ONNX exporter failed on {what} ({describe(exc)}); "
            "trying the TorchScript exporter")
    _remove(target)
    try:
        with captured_output(log):
            torch.onnx.export(model, (example,), str(target), input_names=[name],
                              output_names=[OUTPUT_NAME], dynamo=False, opset_version=17,
                              dynamic_axes={name: {0: "batch"}, OUTPUT_NAME: {0: "batch"}})
        return "torchscript"
    except Exception as exc:
        _remove(target)
        raise ModelToolError(f"{what} cannot be exported to ONNX ({describe(exc)}); make its "
                             "forward traceable (no data-dependent Python branches)") from None


def load_exporter() -> None:
    """Import what the dynamo exporter imports on its first use (seconds, on a busy machine),
    so a caller can show progress before the first export starts."""
    import importlib

    with contextlib.suppress(ImportError):
        importlib.import_module("onnxscript")


def export_program(model, example):
    """``model`` as a torch.export program with a free batch axis, or the reason it cannot be."""
    import torch

    model.eval()
    try:
        return torch.export.export(model, (example,),
                                   dynamic_shapes=({0: torch.export.Dim("batch")},)), ""
    except Exception as exc:
        return None, describe(exc)


def save_program(program, target: Path) -> None:
    """Write a torch.export program; load it again with ``torch.export.load(path).module()``."""
    import torch

    from workbench.modeltools.library_output import harmless_messages_dropped

    # A file object: torch.export.save wants names ending in .pt2, the temporary one does not.
    with open(target, "wb") as stream, harmless_messages_dropped():
        torch.export.save(program, stream)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        Path(path).unlink()


def describe(exc: Exception) -> str:
    """An exception as one short line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
