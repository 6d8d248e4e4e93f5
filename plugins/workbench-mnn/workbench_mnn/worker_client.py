"""The parent side of the MNN worker (``worker.py``, protocol described there): start it, ask it
to convert, open, run and time models, and turn its death into an error that says what MNN was
doing, quotes what MNN said last and names the file holding all of it.

MNN's converter throws C++ exceptions that end the process (SIGABRT) and its runtime segfaults
on some models; in the worker that costs the worker, never the tool job or a window.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.modeltools import ModelToolError

log = logging.getLogger(__name__)

WORKER_MODULE = "workbench_mnn.worker"
# How often a waiting call looks whether the tool was cancelled.
POLL_S = 0.1
# Seconds the worker gets to end by itself once asked to.
QUIT_GRACE_S = 5.0
# Lines that say what went wrong, in what MNN prints.
TROUBLE = re.compile(r"error|fail|terminate|what\(\)|invalid|exception|abort|assert|not support",
                     re.IGNORECASE)


def worker_command(log_file: Path) -> list[str]:
    """The worker's command line. ``-P``: the current folder (perhaps a project holding its own
    ``numpy.py`` or ``MNN.py``) does not go on ``sys.path``."""
    return [sys.executable, "-P", "-m", WORKER_MODULE, str(log_file)]


class WorkerCrashed(ModelToolError):
    """The worker died during a call: ``how`` ("SIGABRT", "exit status 1"), ``said`` (MNN's last
    words, quoted, see ``last_words``), ``log_file`` (everything it printed, kept)."""

    def __init__(self, doing: str, how: str, said: str, log_file: Path):
        self.doing, self.how, self.said, self.log_file = doing, how, said, log_file
        super().__init__(f"MNN crashed ({how}) while {doing}: {said}; its output is in "
                         f"{log_file}")


@dataclass
class OpenedModel:
    """What the worker reports of an ``.mnn`` file it opened (see ``ModelSession``)."""

    input_names: list[str]
    input_shape: list
    output_names: list[str]
    fixed_batch: int | None


class MnnWorker:
    """One worker process, used as a context manager.

    ``on_log`` gets every line MNN prints (after each call); ``check_cancelled`` is called while
    a call waits, and whatever it raises ends the worker at once and is raised again. Each call
    takes ``doing``, what it does in the words of an error message ("converting model.onnx").
    A worker that died keeps its log file (named in the WorkerCrashed error); otherwise the
    worker's folder goes when the block ends.
    """

    def __init__(self, on_log: Callable[[str], None] = log.debug,
                 check_cancelled: Callable[[], None] = lambda: None):
        self.on_log = on_log
        self.check_cancelled = check_cancelled
        self.folder: Path | None = None
        self.log_file: Path | None = None
        self._process: subprocess.Popen | None = None
        self._read_to = 0
        self._pending = b""
        self._crashed = False

    def __enter__(self) -> "MnnWorker":
        # Absolute: the worker runs in this folder, so relative paths would mean other files.
        self.folder = Path(tempfile.mkdtemp(prefix="workbench-mnn-")).resolve()
        self.log_file = self.folder / "mnn.log"
        with open(self.log_file, "wb") as log_file:
            self._process = subprocess.Popen(
                worker_command(self.log_file), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log_file, cwd=self.folder, close_fds=True)
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- calls ---------------------------------------------------------------------------------

    def convert(self, argv: list[str], doing: str) -> list[str]:
        """Run MNNConvert with ``argv``; the lines it printed."""
        _, lines = self._call({"call": "convert", "argv": list(argv)}, doing)
        return lines

    def open(self, path: Path, threads: int, doing: str) -> OpenedModel:
        """Load the ``.mnn`` file ``path`` on ``threads`` threads, for ``run`` and ``latency``."""
        reply, _ = self._call({"call": "open", "path": str(Path(path).resolve()),
                               "threads": int(threads)}, doing)
        return OpenedModel(list(reply["input_names"]), list(reply["input_shape"]),
                           list(reply["output_names"]), reply.get("fixed_batch"))

    def run(self, x: np.ndarray, step: int, doing: str,
            on_progress: Callable[[float], None] = lambda fraction: None) -> list[np.ndarray]:
        """Every output of the opened model over ``x``, fed ``step`` samples at a time."""
        inputs, outputs = self.folder / "inputs.npy", self.folder / "outputs.npz"
        np.save(inputs, np.ascontiguousarray(x, dtype=np.float32))
        reply, _ = self._call({"call": "run", "inputs": str(inputs), "step": int(step),
                               "outputs": str(outputs)}, doing, on_progress)
        with np.load(outputs) as saved:
            results = [saved[f"arr_{i}"] for i in range(reply["count"])]
        inputs.unlink(missing_ok=True)
        outputs.unlink(missing_ok=True)
        return results

    def latency(self, one: np.ndarray, budget_s: float, doing: str,
                on_progress: Callable[[float], None] = lambda fraction: None) -> dict:
        """Milliseconds per run of the opened model on ``one`` (p50, p90, p99, mean)."""
        inputs = self.folder / "inputs.npy"
        np.save(inputs, np.ascontiguousarray(one, dtype=np.float32))
        reply, _ = self._call({"call": "latency", "inputs": str(inputs),
                               "budget_s": float(budget_s)}, doing, on_progress)
        inputs.unlink(missing_ok=True)
        return {key: float(reply[key]) for key in ("p50", "p90", "p99", "mean")}

    # --- the process ---------------------------------------------------------------------------

    def close(self) -> None:
        """End the worker (asked first, killed if it will not) and remove its folder, except the
        log file of a worker that crashed."""
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
            try:
                process.wait(QUIT_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with contextlib.suppress(OSError):
                process.stdout.close()
            self._process = None
        if self.folder is None:
            return
        if not self._crashed:
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        for item in self.folder.iterdir():
            if item != self.log_file:
                with contextlib.suppress(OSError):
                    item.unlink()

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def _call(self, request: dict, doing: str,
              on_progress: Callable[[float], None] = lambda fraction: None
              ) -> tuple[dict, list[str]]:
        """Send ``request``, wait for its reply (passing progress on); the reply and the lines
        MNN printed meanwhile. ModelToolError for an error the worker reports, WorkerCrashed
        when it dies."""
        if self._process is None:
            raise RuntimeError("the MNN worker is not running (use it in a with block)")
        try:
            self._process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self._process.stdin.flush()
            reply = self._wait_for_reply(on_progress)
        except (BrokenPipeError, ConnectionResetError):
            reply = None
        except BaseException:
            self._kill()  # a cancel: the worker may be deep in a C call that never returns
            self._forward_log()
            raise
        lines = self._forward_log()
        if reply is None:
            raise self._crash(doing, lines)
        if reply["reply"] == "error":
            message = reply.get("message") or "no message"
            if reply.get("bug"):
                self._crashed = True  # keep the log: it holds the traceback
                raise ModelToolError(f"the MNN worker failed unexpectedly while {doing} "
                                     f"({message}); the traceback is in {self.log_file}")
            raise ModelToolError(message)
        return reply, lines

    def _wait_for_reply(self, on_progress: Callable[[float], None]) -> dict | None:
        """The call's last reply; None when the worker died first."""
        stdout = self._process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                self.check_cancelled()
                for line in self._complete_lines():
                    reply = json.loads(line)
                    if reply.get("reply") == "progress":
                        on_progress(float(reply.get("fraction", 0.0)))
                    else:
                        return reply
                if not selector.select(POLL_S):
                    continue
                data = os.read(stdout.fileno(), 65536)
                if not data:
                    return None
                self._pending += data

    def _complete_lines(self) -> list[bytes]:
        *lines, self._pending = self._pending.split(b"\n")
        return [line for line in lines if line.strip()]

    def _forward_log(self) -> list[str]:
        """The lines added to the log file since the last call, each passed to ``on_log``."""
        try:
            with open(self.log_file, "rb") as written:
                written.seek(self._read_to)
                text = written.read()
        except OSError:
            return []
        self._read_to += len(text)
        lines = [line.rstrip() for line in text.decode("utf-8", errors="replace").splitlines()
                 if line.strip()]
        for line in lines:
            self.on_log(line)
        return lines

    def _crash(self, doing: str, lines: list[str]) -> WorkerCrashed:
        self._crashed = True
        try:
            code = self._process.wait(QUIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self._kill()
            code = self._process.returncode
        return WorkerCrashed(doing, describe_exit(code), last_words(lines), self.log_file)


def describe_exit(code: int | None) -> str:
    """"SIGABRT" for a process killed by signal 6, "exit status 3" for one that ended itself."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def last_words(lines: list[str], count: int = 3, limit: int = 400) -> str:
    """What MNN said before it died, for a message: the last ``count`` lines of ``lines`` that
    say what went wrong, quoted and joined; else that it gave no error message, and its last
    line."""
    trouble = [line.strip() for line in lines if TROUBLE.search(line)][-count:]
    if trouble:
        return f"“{_shortened(' / '.join(trouble), limit)}”"
    if lines:
        return f"no error message (its last line: “{_shortened(lines[-1].strip(), limit)}”)"
    return "no message at all"


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
