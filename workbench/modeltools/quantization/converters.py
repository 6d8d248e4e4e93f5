"""The three ways the Quantize tool makes a model smaller: static int8 (calibrated, QDQ format),
dynamic int8 (weights only; activations quantized at run time) and float16."""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.quantization.calibration import CalibrationReader
from workbench.modeltools.quantization.model_file import first_line


@dataclass
class StaticSettings:
    """What static quantization is asked to do (see the Quantize tool's parameters)."""

    calibration_method: str = "MinMax"
    per_channel: bool = True
    activation_type: str = "uint8"
    reduce_range: bool = False
    exclude_nodes: list[str] = field(default_factory=list)


class _LogLines(io.TextIOBase):
    """A text stream that hands each complete line to ``log``: onnxruntime's quantizer prints
    its progress, and a terminal's standard output belongs to the CLI's own output. What ``log``
    itself prints goes to the stream that was there before."""

    def __init__(self, log: Callable[[str], None], previous):
        self._log = log
        self._previous = previous
        self._pending = ""
        self._logging = False
        self._last = None

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self._logging:
            return self._previous.write(text)
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        self._logging = True
        try:
            for line in lines:
                # The calibrator prints the same line for every batch: once is enough.
                if line.strip() and line.strip() != self._last:
                    self._last = line.strip()
                    self._log(self._last)
        finally:
            self._logging = False
        return len(text)


@contextlib.contextmanager
def quiet_stdout(log: Callable[[str], None]):
    with contextlib.redirect_stdout(_LogLines(log, sys.stdout)):
        yield


def _failed(what: str, source: Path, exc: Exception) -> ModelToolError:
    return ModelToolError(
        f"onnxruntime could not {what} {source} ({first_line(exc)}); exclude the node the message "
        "names with --exclude-nodes, or try another --mode")


def quantize_static(prepared: Path, target: Path, source: Path, reader: CalibrationReader,
                    settings: StaticSettings, log: Callable[[str], None]) -> None:
    """Calibrate on ``reader`` and write the int8 QDQ model of ``prepared`` to ``target``."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    activation = QuantType.QUInt8 if settings.activation_type == "uint8" else QuantType.QInt8
    try:
        with quiet_stdout(log):
            ort_quantize_static(
                str(prepared), str(target), reader, quant_format=QuantFormat.QDQ,
                per_channel=settings.per_channel, reduce_range=settings.reduce_range,
                activation_type=activation, weight_type=QuantType.QInt8,
                nodes_to_exclude=list(settings.exclude_nodes),
                calibrate_method=getattr(CalibrationMethod, settings.calibration_method),
                # One batch per calibration pass keeps memory bounded (see CalibrationReader).
                extra_options={"CalibStridedMinMax": 1})
    except (ModelToolError, ToolCancelled):
        raise
    except Exception as exc:
        raise _failed("quantize", source, exc) from None


def quantize_dynamic(prepared: Path, target: Path, source: Path, per_channel: bool,
                     reduce_range: bool, exclude_nodes: list[str], excluded_gemms: list[str],
                     log: Callable[[str], None]) -> None:
    """Write ``prepared`` with int8 weights and run-time quantized activations to ``target``.
    ``excluded_gemms`` are the Gemm nodes among ``exclude_nodes``: onnxruntime turns each Gemm
    into a MatMul named ``<name>_MatMul`` and an Add before it looks at the exclusions, so the
    MatMul is excluded by that name too."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic

    try:
        with quiet_stdout(log):
            ort_quantize_dynamic(str(prepared), str(target), per_channel=per_channel,
                                 reduce_range=reduce_range, weight_type=QuantType.QInt8,
                                 nodes_to_exclude=[*exclude_nodes,
                                                   *(f"{name}_MatMul" for name in excluded_gemms)])
    except Exception as exc:
        raise _failed("quantize", source, exc) from None


def convert_fp16(model, target: Path, source: Path, exclude_nodes: list[str],
                 log: Callable[[str], None]) -> None:
    """Write ``model`` (a ModelProto) with float16 weights and arithmetic to ``target``; its
    inputs and outputs stay float32 so callers feed it as before."""
    import onnx

    try:
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError:
        raise ModelToolError(
            "this onnxruntime has no float16 converter (onnxruntime.transformers.float16); "
            "update onnxruntime, or use --mode static") from None
    try:
        with quiet_stdout(log):
            converted = convert_float_to_float16(model, keep_io_types=True,
                                                 node_block_list=list(exclude_nodes) or None)
        onnx.save(converted, str(target))
    except Exception as exc:
        raise _failed("convert to float16", source, exc) from None


def strip_debug_metadata(path: Path) -> int:
    """Remove the per-node debugging notes exporters leave (torch.onnx writes each node's stack
    trace, FX node and module path) and doc strings from the model at ``path``; runtimes never
    read them, and in a small model they weigh as much as its int8 weights. Returns the bytes
    saved."""
    import onnx

    model = onnx.load(str(path))
    before = path.stat().st_size
    changed = False
    for node in model.graph.node:
        if len(node.metadata_props) or node.doc_string:
            del node.metadata_props[:]
            node.doc_string = ""
            changed = True
    if not changed:
        return 0
    onnx.save(model, str(path))
    return max(0, before - path.stat().st_size)
