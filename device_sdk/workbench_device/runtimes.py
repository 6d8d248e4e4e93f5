"""The inference runtimes a session can choose: onnxruntime always, MNN when it is installed.

Both are imported only when a session uses them (onnxruntime takes a tenth of a second to
import; MNN prints a banner on the process's standard output, which is caught here).

MNN is reached through ``MNN.nn`` and ``MNN.expr`` only, never ``MNN.tools``: the package's
command-line wrappers there import a logger that installs packages with pip and sends the
machine's id and model details to a remote service.

Inputs are checked against the model's inputs (names, dtypes, ranks and fixed axes) before the
runtime sees them: MNN ends the whole process, every session with it, on an input it cannot take.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from workbench_device.protocol import Err, ProtocolError, descriptor_shape

log = logging.getLogger(__name__)

ONNXRUNTIME = "onnxruntime"
MNN = "mnn"
RUNTIMES = (ONNXRUNTIME, MNN)

# Taken while MNN's C++ code may print to the process's standard output and error, which are
# pointed at a temporary file for that time; ``logs.say`` takes it too, so no line the agent
# prints for its user lands in that file.
console_lock = threading.RLock()

_ORT_TYPES = {
    "tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
    "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16",
    "tensor(uint16)": "uint16", "tensor(int32)": "int32", "tensor(uint32)": "uint32",
    "tensor(int64)": "int64", "tensor(uint64)": "uint64", "tensor(bool)": "bool",
}
_MNN_TYPES = {"float": "float32", "double": "float64", "int": "int32", "int64": "int64",
              "uint8": "uint8", "int8": "int8"}
_MNN_NAMES = {numpy_name: mnn_name for mnn_name, numpy_name in _MNN_TYPES.items()}


def _distribution_version(*names: str) -> Optional[str]:
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def available_runtimes() -> List[Dict[str, str]]:
    """The runtimes installed here, with their versions (found without importing them)."""
    found = []
    if importlib.util.find_spec("onnxruntime") is not None:
        found.append({"name": ONNXRUNTIME,
                      "version": _distribution_version("onnxruntime", "onnxruntime-gpu") or "?"})
    if importlib.util.find_spec("MNN") is not None:
        found.append({"name": MNN, "version": _distribution_version("MNN", "mnn") or "?"})
    return found


def check_runtime(name: object) -> str:
    """``name`` when it is a runtime installed here; ProtocolError otherwise."""
    if name not in RUNTIMES:
        raise ProtocolError(Err.BAD_REQUEST, f"runtime {name!r} is not one of {', '.join(RUNTIMES)}")
    if name not in [r["name"] for r in available_runtimes()]:
        package = "onnxruntime" if name == ONNXRUNTIME else "MNN"
        raise ProtocolError(Err.RUNTIME, f"{name} is not installed on this device; "
                                         f"pip install {package} next to the agent")
    return str(name)


@contextlib.contextmanager
def caught_console() -> Iterator[List[str]]:
    """Run the block with file descriptors 1 and 2 going to a temporary file; the yielded list
    holds the lines printed, afterwards."""
    lines: List[str] = []
    with console_lock:
        import sys

        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            saved = (os.dup(1), os.dup(2))
        except OSError:
            yield lines
            return
        with tempfile.TemporaryFile() as sink:
            try:
                os.dup2(sink.fileno(), 1)
                os.dup2(sink.fileno(), 2)
                yield lines
            finally:
                with contextlib.suppress(Exception):
                    import ctypes

                    ctypes.CDLL(None).fflush(None)
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
                sink.seek(0)
                text = sink.read().decode("utf-8", errors="replace")
                lines.extend(line.rstrip() for line in text.splitlines() if line.strip())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]


class LoadedModel:
    """A model loaded in one session's runtime."""

    def __init__(self, runtime: str, path: Path, sha256: str, name: str,
                 inputs: List[Dict[str, Any]], outputs: List[Dict[str, Any]], init_ms: float):
        self.runtime = runtime
        self.path = path
        self.sha256 = sha256
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.init_ms = init_ms

    def check_feeds(self, feeds: Dict[str, Any]) -> None:
        """ProtocolError(bad_request) unless ``feeds`` are exactly the model's inputs, of their
        dtypes, ranks and fixed axis sizes."""
        wanted = [i["name"] for i in self.inputs]
        if sorted(feeds) != sorted(wanted):
            raise ProtocolError(Err.BAD_REQUEST, f"the model takes the inputs {wanted}, not "
                                                 f"{sorted(feeds)}")
        for spec in self.inputs:
            array = feeds[spec["name"]]
            if array.dtype.name != spec["dtype"]:
                raise ProtocolError(Err.BAD_REQUEST, f"input {spec['name']!r} must be "
                                    f"{spec['dtype']}, not {array.dtype.name}")
            shape = spec["shape"]
            if shape is None:
                continue
            if len(array.shape) != len(shape) or any(
                    isinstance(w, int) and w != s for w, s in zip(shape, array.shape)):
                shown = ", ".join("?" if not isinstance(w, int) else str(w) for w in shape)
                raise ProtocolError(Err.BAD_REQUEST, f"input {spec['name']!r} must have shape "
                                    f"({shown}), not {tuple(array.shape)}")

    def run(self, feeds: Dict[str, Any]) -> List[Tuple[str, Any]]:
        """The outputs, by name, for ``feeds`` (checked first)."""
        self.check_feeds(feeds)
        return self._run(feeds)

    def _run(self, feeds: Dict[str, Any]) -> List[Tuple[str, Any]]:
        raise NotImplementedError

    def describe(self) -> Dict[str, Any]:
        return {"inputs": self.inputs, "outputs": self.outputs, "init_ms": self.init_ms}

    def close(self) -> None:
        pass


class OnnxRuntimeModel(LoadedModel):
    def __init__(self, path: Path, sha256: str, name: str, threads: int):
        import onnxruntime as ort  # here, not at the top: a tenth of a second to import

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        start = time.perf_counter()
        try:
            self._session = ort.InferenceSession(str(path), options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ProtocolError(Err.RUNTIME, f"onnxruntime cannot load {name or sha256[:12]}: "
                                             f"{_first_line(exc)}") from None
        init_ms = (time.perf_counter() - start) * 1000.0
        super().__init__(ONNXRUNTIME, path, sha256, name, self._specs(self._session.get_inputs()),
                         self._specs(self._session.get_outputs()), init_ms)
        self._output_names = [o["name"] for o in self.outputs]

    @staticmethod
    def _specs(args: Any) -> List[Dict[str, Any]]:
        return [{"name": a.name, "dtype": _ORT_TYPES.get(a.type, a.type),
                 "shape": descriptor_shape(a.shape) if a.shape is not None else None}
                for a in args]

    def _run(self, feeds: Dict[str, Any]) -> List[Tuple[str, Any]]:
        try:
            values = self._session.run(self._output_names, feeds)
        except Exception as exc:
            raise ProtocolError(Err.RUNTIME, f"onnxruntime failed running the model: "
                                             f"{_first_line(exc)}") from None
        return list(zip(self._output_names, values))

    def close(self) -> None:
        self._session = None


def _load_mnn() -> Tuple[Any, Any]:
    try:
        with caught_console() as printed:
            import MNN.expr as expr
            import MNN.nn as nn
    except ImportError as exc:
        raise ProtocolError(Err.RUNTIME, f"MNN cannot be imported here ({_first_line(exc)}); "
                                         "reinstall it next to the agent") from None
    for line in printed:
        log.debug("MNN: %s", line)
    return nn, expr


class MnnModel(LoadedModel):
    def __init__(self, path: Path, sha256: str, name: str, threads: int):
        nn, expr = _load_mnn()
        self._expr = expr
        shown = name or sha256[:12]
        start = time.perf_counter()
        printed: List[str] = []
        try:
            with caught_console() as printed:
                graph = expr.load_as_dict(str(path))
                if not graph:
                    raise ValueError("no graph in the file")
                manager = nn.create_runtime_manager(
                    ({"backend": "CPU", "precision": "high", "numThread": max(1, threads)},))
                self._module = nn.load_module_from_file(str(path), [], [],
                                                        runtime_manager=manager)
                info = self._module.get_info()
        except Exception as exc:
            said = next((line for line in printed if "rror" in line), "")
            raise ProtocolError(Err.RUNTIME, f"MNN cannot load {shown} (is it an .mnn file?): "
                                             f"{said or _first_line(exc)}") from None
        init_ms = (time.perf_counter() - start) * 1000.0
        inputs_by_name, _ = expr.get_inputs_and_outputs(graph)
        input_names = list(info.get("inputNames") or inputs_by_name)
        output_names = list(info.get("outputNames") or [])
        self._formats = {}
        inputs = []
        for input_name in input_names:
            var = graph.get(input_name)
            dtype = _MNN_TYPES.get(str(getattr(var, "dtype", "dtype.float")).split(".")[-1],
                                   "float32")
            shape = [int(d) for d in var.shape] if var is not None else []
            self._formats[input_name] = var.data_format if var is not None else expr.NCHW
            inputs.append({"name": input_name, "dtype": dtype, "shape": descriptor_shape(shape)})
        outputs = []
        for output_name in output_names:
            var = graph.get(output_name)
            shape = [int(d) for d in var.shape] if var is not None else []
            outputs.append({"name": output_name, "dtype": "float32",
                            "shape": descriptor_shape(shape)})
        super().__init__(MNN, path, sha256, name, inputs, outputs, init_ms)
        self._input_names = input_names
        self._output_names = output_names

    def _run(self, feeds: Dict[str, Any]) -> List[Tuple[str, Any]]:
        import numpy as np

        expr = self._expr
        args = []
        for name in self._input_names:
            array = np.ascontiguousarray(feeds[name])
            data_format = self._formats.get(name, expr.NCHW)
            if data_format not in (expr.NCHW, expr.NHWC):
                data_format = expr.NCHW
            mnn_type = getattr(expr, _MNN_NAMES.get(array.dtype.name, "float"))
            args.append(expr.const(array, list(array.shape), data_format, mnn_type))
        try:
            values = self._module.onForward(args)
        except Exception as exc:
            raise ProtocolError(Err.RUNTIME, f"MNN failed running the model: {_first_line(exc)}") \
                from None
        results = []
        for name, value in zip(self._output_names or [f"output{i}" for i in range(len(values))],
                               values):
            if value.data_format == expr.NC4HW4:
                value = expr.convert(value, expr.NCHW)
            results.append((name, np.array(value.read(), copy=True)))
        return results

    def close(self) -> None:
        self._module = None


def load_model(runtime: str, path: Path, sha256: str, name: str = "", threads: int = 1
               ) -> LoadedModel:
    """The model file ``path`` loaded in ``runtime``; ProtocolError(runtime) when it cannot be."""
    if runtime == MNN:
        return MnnModel(path, sha256, name, threads)
    return OnnxRuntimeModel(path, sha256, name, threads)
