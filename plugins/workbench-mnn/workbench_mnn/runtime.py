"""Running ``.mnn`` files, so Compare, Quantize's evaluation and every other tool that opens a
model through ``workbench.modeltools.open_model`` can run MNN models.

MNN crashes the whole process (a segmentation fault, not an exception) when a module is fed a
batch its graph cannot take, so the batch a model accepts is found first, on a throw-away MNN
session that only resizes (it never runs), and every call is checked against it before MNN
sees the input.

Some files crash MNN whatever the input (a damaged file; a quantized model MNN's converter got
wrong): the first time a process opens a file, it is loaded and run once in the MNN worker, a
process of its own (``worker.py``), so that such a crash becomes an error naming the file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from workbench.modeltools import ModelSession, ModelToolError

from workbench_mnn.native import console_caught, load_runtime

log = logging.getLogger(__name__)

# The files (path, size, modification time) this process saw load and run in the worker.
_tried_in_worker: set[tuple[str, int, int]] = set()


def open_mnn_model(path: Path, threads: int = 1) -> ModelSession:
    """``path`` loaded with MNN's CPU runtime at full (fp32) precision on ``threads`` threads.

    ``input_shape`` is the first input's stored shape, with None for a batch the model does not
    fix; ``fixed_batch`` is the batch size when the graph takes no other. ModelToolError when
    the file is not an MNN model, or when MNN crashes loading or running it (tried first in the
    MNN worker).
    """
    path = Path(path)
    if not path.is_file():
        raise ModelToolError(f"{path} does not exist")
    try_in_worker(path, threads)
    return load_mnn_model(path, threads)


def try_in_worker(path: Path, threads: int = 1) -> None:
    """Load ``path`` and run it once on zeros in the MNN worker (once per file and process);
    ModelToolError saying so when MNN crashes on it, or the error loading it gives."""
    from workbench_mnn.worker_client import MnnWorker, WorkerCrashed

    if _tried_key(path) in _tried_in_worker:
        return
    try:
        with MnnWorker(on_log=lambda line: log.debug("MNN: %s", line)) as worker:
            opened = worker.open(path, threads, "loading it")
            shape = opened.input_shape
            if len(opened.input_names) == 1 and shape and all(d for d in shape[1:]):
                x = np.zeros((opened.fixed_batch or 1, *shape[1:]), np.float32)
                worker.run(x, len(x), "running it once on zeros")
    except WorkerCrashed as crash:
        raise ModelToolError(
            f"{path}: MNN {_version()} crashed ({crash.how}) {crash.doing}: {crash.said}; "
            "the file is damaged or holds something this MNN mishandles (a quantized model, "
            "for example): convert the float ONNX model to MNN again. MNN's output is in "
            f"{crash.log_file}") from None
    note_tried_in_worker(path)


def note_tried_in_worker(path: Path) -> None:
    """Note that ``path``, as it is now, has loaded and run in an MNN worker (the conversion's
    check ran it), so that opening it in this process needs no second try."""
    _tried_in_worker.add(_tried_key(Path(path)))


def _tried_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def load_mnn_model(path: Path, threads: int = 1) -> ModelSession:
    """``path`` loaded in this process (see ``open_mnn_model``, which tries it in the worker
    first)."""
    path = Path(path)
    if not path.is_file():
        raise ModelToolError(f"{path} does not exist")
    nn, expr = load_runtime()
    with console_caught() as console:
        inputs = _stored_inputs(expr, path)
    if not inputs:
        raise ModelToolError(
            f"{path} is not a model MNN {_version()} can load "
            f"({_first(console.lines) or 'no graph in it'}); convert the ONNX model to MNN again")
    names = list(inputs)
    first = inputs[names[0]]
    stored = [int(d) for d in first.shape]
    data_format = first.data_format if first.data_format in (expr.NCHW, expr.NHWC) else expr.NCHW
    fixed_batch = _fixed_batch(path, stored)
    shape = [None if d <= 0 else d for d in stored]
    if shape and fixed_batch is None:
        shape[0] = None
    try:
        with console_caught() as console:
            manager = nn.create_runtime_manager(
                ({"backend": "CPU", "precision": "high", "numThread": max(1, int(threads))},))
            module = nn.load_module_from_file(str(path), [], [], runtime_manager=manager)
            info = module.get_info()
    except Exception as exc:
        raise ModelToolError(
            f"{path} could not be loaded by MNN {_version()} ({_first(console.lines) or exc}); "
            "convert the ONNX model to MNN again") from None
    if console.text:
        log.debug("MNN loading %s: %s", path, console.text.strip())
    input_names = list(info.get("inputNames") or names)
    output_names = list(info.get("outputNames") or [])

    def run(x: np.ndarray) -> list[np.ndarray]:
        _check_input(path, x, shape, fixed_batch, len(input_names))
        outputs = module.onForward([expr.const(x, list(x.shape), data_format)])
        if not outputs:
            raise ModelToolError(f"MNN could not run {path} on an input of shape {tuple(x.shape)}")
        results = []
        for value in outputs:
            if value.data_format == expr.NC4HW4:
                value = expr.convert(value, expr.NCHW)
            results.append(np.array(value.read(), dtype=np.float32, copy=True))
        return results

    return ModelSession(path, "mnn", input_names, shape, output_names, run, fixed_batch=fixed_batch)


def _stored_inputs(expr, path: Path) -> dict:
    """The model's input variables by name ({} when the file is no MNN model)."""
    try:
        graph = expr.load_as_dict(str(path))
    except Exception:
        return {}
    if not graph:
        return {}
    inputs, _ = expr.get_inputs_and_outputs(graph)
    return inputs


def _fixed_batch(path: Path, stored: list[int]) -> int | None:
    """None when the graph takes another batch than the stored one; else the stored batch.

    A session is resized (shapes computed, nothing run) to one more than the stored batch; a
    graph with a batch baked into a reshape fails that and keeps its old output shape.
    """
    if not stored or any(d <= 0 for d in stored[1:]):
        return None
    batch = stored[0] if stored[0] > 0 else 1
    trial = batch + 1
    import MNN

    try:
        with console_caught():
            interpreter = MNN.Interpreter(str(path))
            session = interpreter.createSession({"backend": "CPU", "numThread": 1})
            tensor = interpreter.getSessionInput(session)
            interpreter.resizeTensor(tensor, (trial, *stored[1:]))
            interpreter.resizeSession(session)
            output_shape = tuple(interpreter.getSessionOutput(session).getShape())
    except Exception:
        return batch
    return None if output_shape and output_shape[0] == trial else batch


def _check_input(path: Path, x: np.ndarray, shape: list, fixed_batch: int | None,
                 input_count: int) -> None:
    # MNN aborts the process on an input it cannot take; say what is wrong instead.
    if input_count != 1:
        raise ModelToolError(
            f"{path} takes {input_count} inputs; the model tools feed models with one input")
    wanted = shape[1:]
    if x.ndim != len(shape) or any(w is not None and w != s for w, s in zip(wanted, x.shape[1:])):
        shown = ", ".join("?" if w is None else str(w) for w in shape)
        raise ModelToolError(
            f"{path} takes inputs of shape ({shown}), not {tuple(x.shape)}; give data shaped "
            "for this model")
    if fixed_batch is not None and x.shape[0] != fixed_batch:
        raise ModelToolError(
            f"{path} takes batches of exactly {fixed_batch}, not {x.shape[0]}; export the ONNX "
            "model with a dynamic batch axis and convert it again to feed other batch sizes")


def _first(lines: list[str]) -> str:
    errors = [line for line in lines if "rror" in line or "ailed" in line or "nvalid" in line]
    return (errors or lines or [""])[0].strip()[:300]


def _version() -> str:
    from workbench_mnn.native import mnn_version

    return mnn_version()
