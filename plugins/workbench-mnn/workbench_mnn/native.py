"""MNN's compiled code, reached without the MNN package's command-line wrappers, with what it
prints caught.

Why not ``MNN.tools``: the wheel's ``mnnconvert`` / ``mnnquant`` / ``mnn`` commands live there,
and they import ``MNN.tools.utils.log``, which runs ``pip install -U aliyun-log-python-sdk``
with whatever pip is first on PATH and sends the machine id and details of the model to a
remote log service. This module never imports ``MNN.tools``. The converter is the compiled
module ``_tools`` that the wheel installs at the top of site-packages, beside ``MNN/``; it is
loaded from the file the MNN distribution lists (a project folder on ``sys.path`` holding its own
``_tools.py`` cannot stand in for it). The runtime is ``MNN.nn`` / ``MNN.expr``, whose imports
reach only MNN's compiled engine.

Why catch output: MNN's C++ code prints to the process's file descriptors 1 and 2 (a banner when
it loads, the converter's progress, shape errors). A tool job speaks JSON lines on stdout, so
every call into MNN here runs with both descriptors pointed at a temporary file, and the text
comes back to the caller to log. In the MNN worker process (``worker.py``) both descriptors
already go to the worker's log file, which outlives a crash; there ``console_caught`` reads the
block's text back from that file instead (see ``console_log``).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from workbench.modeltools import ModelToolError

MNN_DISTRIBUTION = "MNN"
CONVERTER_MODULE = "_tools"

# The file descriptors 1 and 2 of this process write to, when the MNN worker set it: what MNN
# prints then stays in that file (a crash cannot take it away) and ``console_caught`` reads the
# block's part back from it. None in every other process.
console_log: Path | None = None


@dataclass
class Console:
    """What MNN printed inside one ``console_caught()`` block (filled in when it ends)."""

    text: str = ""

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.text.splitlines() if line.strip()]


def _flush_c_streams() -> None:
    # printf and std::cout buffer in C; without this their text lands after the descriptors are
    # given back, in the job's event stream.
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass


@contextlib.contextmanager
def console_caught() -> Iterator[Console]:
    """Run the block with file descriptors 1 and 2 going to a temporary file; the yielded
    ``Console`` holds the text afterwards. Nothing is caught (and nothing breaks) where the
    process has no such descriptors."""
    console = Console()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if console_log is not None:
        with _read_back(console_log, console):
            yield console
        return
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:
        yield console
        return
    with tempfile.TemporaryFile() as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield console
        finally:
            _flush_c_streams()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            console.text = sink.read().decode("utf-8", errors="replace")


@contextlib.contextmanager
def _read_back(log: Path, console: Console) -> Iterator[None]:
    """The block's output, read back from the log file descriptors 1 and 2 already write to."""
    try:
        start = log.stat().st_size
    except OSError:
        start = 0
    try:
        yield
    finally:
        _flush_c_streams()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(OSError), open(log, "rb") as written:
            written.seek(start)
            console.text = written.read().decode("utf-8", errors="replace")


def _mnn_missing() -> ModelToolError:
    return ModelToolError(
        "MNN is not installed in Workbench's Python environment; install the plugin again "
        "(pip install -e plugins/workbench-mnn) or pip install 'MNN>=3.6.1,<3.7'")


def converter_path() -> Path:
    """The file of MNN's compiled converter module, as the installed MNN distribution lists it."""
    from importlib import metadata

    try:
        distribution = metadata.distribution(MNN_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise _mnn_missing() from None
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for file in distribution.files or ():
        name = Path(str(file)).name
        if name.startswith(CONVERTER_MODULE + ".") and name.endswith(suffixes):
            path = Path(distribution.locate_file(file))
            if path.is_file():
                return path
    raise ModelToolError(
        f"the installed MNN {distribution.version} has no compiled converter ({CONVERTER_MODULE}); "
        "reinstall it with pip install --force-reinstall 'MNN>=3.6.1,<3.7'")


def load_converter():
    """MNN's compiled converter module (``mnnconvert(argv)``), loaded once per process from the
    MNN distribution's own file."""
    path = converter_path()
    loaded = sys.modules.get(CONVERTER_MODULE)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve():
            return loaded
        raise ModelToolError(
            f"another module named {CONVERTER_MODULE} ({getattr(loaded, '__file__', '?')}) is "
            f"already loaded, so MNN's converter ({path}) cannot be; rename that module")
    loader = importlib.machinery.ExtensionFileLoader(CONVERTER_MODULE, str(path))
    spec = importlib.util.spec_from_file_location(CONVERTER_MODULE, path, loader=loader)
    with console_caught():  # the module's init function runs (and prints) in create_module
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    sys.modules[CONVERTER_MODULE] = module
    return module


def load_runtime():
    """``(MNN.nn, MNN.expr)``, MNN's Python runtime (its start-up banner caught)."""
    try:
        with console_caught():
            import MNN.expr as expr
            import MNN.nn as nn
    except ImportError:
        raise _mnn_missing() from None
    return nn, expr


def mnn_version() -> str:
    from importlib import metadata

    try:
        return metadata.version(MNN_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "?"
