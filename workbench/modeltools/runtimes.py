"""Running a model file on NumPy inputs: onnxruntime for ``.onnx``, and whatever runtime a plugin
registers for its suffix (MNN for ``.mnn``). Every tool that evaluates a model goes through
``open_model``, so a new format needs one plugin function, not changes in each tool."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from workbench.modeltools import model_files
from workbench.modeltools.errors import ModelToolError


@dataclass
class ModelSession:
    """A loaded model. ``run(x)`` returns every output for the batch ``x`` fed to the first input.
    ``input_shape`` has ints for fixed dimensions and None for free ones."""

    path: Path
    runtime: str
    input_names: list[str]
    input_shape: list[Any]
    output_names: list[str]
    _run: Callable[[np.ndarray], list[np.ndarray]] = field(repr=False, default=None)
    fixed_batch: int | None = None

    def run(self, x: np.ndarray) -> list[np.ndarray]:
        return self._run(np.ascontiguousarray(x, dtype=np.float32))

    def run_batched(self, x: np.ndarray, batch: int) -> np.ndarray:
        """The first output over all of ``x``, fed ``batch`` samples at a time (one at a time
        when the model's batch is fixed to 1)."""
        step = self.fixed_batch or batch
        outputs = [self.run(x[i:i + step])[0] for i in range(0, len(x), step)]
        if self.fixed_batch and len(x) % self.fixed_batch:
            raise ModelToolError(f"{self.path} takes batches of exactly {self.fixed_batch}")
        return np.concatenate(outputs)


# The suffixes whose files ``model_files.identify`` knows; a plugin's runtime for another
# format checks its own files.
IDENTIFIED_SUFFIXES = {".onnx": model_files.ONNX, ".mnn": model_files.MNN}


def open_model(path: Path, threads: int = 1) -> ModelSession:
    """Load ``path`` with the runtime for its suffix; ModelToolError when the file cannot run
    (for a file that is no model, or not of the kind its suffix says, the message every tool
    gives: see ``model_files.expect``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in IDENTIFIED_SUFFIXES:
        kind = IDENTIFIED_SUFFIXES[suffix]
        model_files.expect(path, (kind,))
    elif not path.is_file():
        model_files.identify(path)  # missing, or a folder: said as every tool says it
    if suffix == ".onnx":
        return open_onnx(path, threads)
    from workbench.extensions import load_extensions

    opener = load_extensions().model_runtimes.get(suffix)
    if opener is None:
        raise ModelToolError(
            f"{path}: no runtime runs {suffix or 'extension-less'} files here (runs .onnx"
            f"{''.join(', ' + s for s in sorted(load_extensions().model_runtimes))}); convert it first")
    import importlib

    module_name, _, function_name = opener.partition(":")
    return getattr(importlib.import_module(module_name), function_name)(path, threads)


def open_onnx(path: Path, threads: int = 1) -> ModelSession:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "protobuf" in first.lower():
            raise ModelToolError(model_files.damaged(path, model_files.ONNX)) from None
        raise ModelToolError(
            f"{path} cannot be run by onnxruntime ({first[:300]}); convert or export it again, "
            "perhaps at another opset") from None
    inputs = session.get_inputs()
    outputs = session.get_outputs()
    shape = [d if isinstance(d, int) else None for d in inputs[0].shape]
    first_input = inputs[0].name
    output_names = [o.name for o in outputs]

    def run(x: np.ndarray) -> list[np.ndarray]:
        return session.run(output_names, {first_input: x})

    fixed = shape[0] if shape and isinstance(shape[0], int) and shape[0] > 0 else None
    return ModelSession(path, "onnxruntime", [i.name for i in inputs], shape, output_names,
                        run, fixed_batch=fixed)
