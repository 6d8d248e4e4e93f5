"""Running a user's verification script in a child process, in the session's folder.

The script is ``python <path>`` with the agent's Python, its working folder the session's
folder, and two environment variables: ``WORKBENCH_MODEL`` (the model file, when the request
names a model) and ``WORKBENCH_SESSION_DIR``. Its result is the JSON it writes to
``result.json`` in that folder, or else the JSON on the last line it prints. A script that
outlives its time-out, or whose host hangs up, is killed with everything it started.

Its output goes to files, never to a pipe the agent must drain: a host that reads slowly never
slows the script. When the host asks for it, what the script writes is also sent while it runs
as ``script.output`` events (``OutputForwarder``), bounded in size and rate.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Set

from workbench_device.protocol import ConnectionClosed, Err, Msg, ProtocolError
from workbench_device.sessions import Sandbox

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
MAX_TIMEOUT_S = 24 * 3600.0
# What of a script's output goes back in the reply's header (which is at most 64 KiB): the end,
# where the error usually is.
OUTPUT_TAIL_BYTES = 16 * 1024
MAX_RESULT_BYTES = 24 * 1024
# Streamed output: at most this many bytes of a stream per event (a header stays far below its
# 64 KiB limit even when every byte is a control character JSON escapes in six), one event per
# stream every tick (so at most 160 KiB/s each), and no more than this much kept waiting: a
# script that writes faster has the middle of its output skipped (the event says how much).
OUTPUT_EVENT_BYTES = 8 * 1024
OUTPUT_TICK_S = 0.05
OUTPUT_BACKLOG_BYTES = 64 * 1024
# How often a script that streams nothing is checked on (its host hung up, its time is up).
QUIET_TICK_S = 0.25


class RunningScripts:
    """The scripts running now, so that stopping the agent stops them as well (they run in
    sessions of their own, which a signal to the agent does not reach)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: Set[subprocess.Popen] = set()

    def add(self, child: subprocess.Popen) -> None:
        with self._lock:
            self._children.add(child)

    def remove(self, child: subprocess.Popen) -> None:
        with self._lock:
            self._children.discard(child)

    def kill_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for child in children:
            _kill_group(child)


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            child.kill()
        except OSError:
            pass


class _OutputFile:
    """One of a script's output files, read from where the last event ended."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self.path = path
        self.position = 0
        self._file = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def take(self, final: bool) -> Optional[Dict[str, Any]]:
        """The fields of the next event (``stream``, ``text`` and ``skipped`` when the backlog
        was too long), None when nothing new was written."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return None
        pending = size - self.position
        if pending <= 0:
            return None
        skipped = 0
        if pending > OUTPUT_BACKLOG_BYTES:
            skipped = pending - OUTPUT_BACKLOG_BYTES
            self.position += skipped
            self._decoder.reset()
        if self._file is None:
            self._file = open(self.path, "rb")
        self._file.seek(self.position)
        data = self._file.read(min(OUTPUT_EVENT_BYTES, size - self.position))
        self.position += len(data)
        if skipped:
            # The cut may fall inside a character: drop its continuation bytes.
            cut = 0
            while cut < min(3, len(data)) and data[cut] & 0xC0 == 0x80:
                cut += 1
            data = data[cut:]
        text = self._decoder.decode(data, final=final and self.position >= size)
        event: Dict[str, Any] = {"stream": self.name, "text": text}
        if skipped:
            event["skipped"] = skipped
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class OutputForwarder:
    """Sends what a script writes to its output files as ``script.output`` events through
    ``emit`` (each event also carries ``fields``: which run it belongs to)."""

    def __init__(self, stdout: Path, stderr: Path, emit: Callable[[Dict[str, Any]], None],
                 fields: Optional[Dict[str, Any]] = None):
        self.files = [_OutputFile("stdout", stdout), _OutputFile("stderr", stderr)]
        self.emit = emit
        self.fields = dict(fields or {})

    def pump(self, final: bool = False) -> None:
        """One event per stream with what is new; with ``final`` (the script ended), all that
        is left, up to the backlog limit."""
        # Bounded even when the script left behind a process that goes on writing.
        events = OUTPUT_BACKLOG_BYTES // OUTPUT_EVENT_BYTES + 1 if final else 1
        for output in self.files:
            for _ in range(events):
                event = output.take(final)
                if event is None:
                    break
                if event["text"] or event.get("skipped"):
                    self.emit({"type": Msg.SCRIPT_OUTPUT, **self.fields, **event})

    def close(self) -> None:
        for output in self.files:
            output.close()


def script_env(sandbox: Sandbox, model_file: Optional[Path]) -> Dict[str, str]:
    """The environment a script runs in: the agent's, the session's folder and the model, and
    unbuffered output so that what it prints can be streamed as it prints it."""
    env = dict(os.environ)
    env["WORKBENCH_SESSION_DIR"] = str(sandbox.root)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("WORKBENCH_MODEL", None)
    if model_file is not None:
        env["WORKBENCH_MODEL"] = str(model_file)
    return env


def check_timeout(timeout_s: Any, default: float = 60.0) -> float:
    if timeout_s is None:
        return default
    if (not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool)
            or not 0 < timeout_s <= MAX_TIMEOUT_S):
        raise ProtocolError(Err.BAD_REQUEST, f"'timeout_s' must be a number of seconds from 0 to "
                                             f"{MAX_TIMEOUT_S:g}")
    return float(timeout_s)


def kill_group(child: subprocess.Popen) -> None:
    """Kill ``child`` and every process of its session."""
    _kill_group(child)


def _tail(path: Path, limit: int) -> tuple:
    size = path.stat().st_size
    with open(path, "rb") as stream:
        if size > limit:
            stream.seek(size - limit)
        data = stream.read()
    return data.decode("utf-8", errors="replace"), size > limit


def _result_of(sandbox: Sandbox, stdout: str) -> tuple:
    """(result, problem): the script's JSON result, and why there is none when it is unusable."""
    result, problem = _parsed_result(sandbox, stdout)
    try:
        json.dumps(result, allow_nan=False)
    except ValueError:
        return None, "the result holds NaN or Infinity, which JSON cannot carry"
    return result, problem


def _parsed_result(sandbox: Sandbox, stdout: str) -> tuple:
    result_file = sandbox.root / RESULT_FILE
    if result_file.is_file() and not result_file.is_symlink():
        if result_file.stat().st_size > MAX_RESULT_BYTES:
            return None, f"{RESULT_FILE} is over {MAX_RESULT_BYTES} bytes; fetch it with file.get"
        try:
            return json.loads(result_file.read_text(encoding="utf-8")), None
        except (ValueError, UnicodeDecodeError) as exc:
            return None, f"{RESULT_FILE} is not JSON: {exc}"
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None, None
    try:
        result = json.loads(lines[-1])
    except ValueError:
        return None, None
    if len(lines[-1].encode()) > MAX_RESULT_BYTES:
        return None, f"the result is over {MAX_RESULT_BYTES} bytes; write it to a file"
    return result, None


def script_file(sandbox: Sandbox, relative: Any) -> Path:
    """The script ``relative`` names in ``sandbox``; ProtocolError not_found when it is not a
    file there."""
    path = sandbox.resolve(relative)
    if not path.is_file():
        raise ProtocolError(Err.NOT_FOUND, f"{relative!r} is not a file in the session's folder; "
                                           "send it with file.put first")
    return path


def run_script(sandbox: Sandbox, relative: Any, model_file: Optional[Path] = None,
               timeout_s: Any = None, running: Optional[RunningScripts] = None,
               on_output: Optional[Callable[[Dict[str, Any]], None]] = None,
               hung_up: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
    """Run the script ``relative`` in ``sandbox``; its exit code, the end of its output and its
    result (see the module's description). ``on_output`` gets the ``script.output`` events
    while it runs; ``hung_up()`` says whether the host is gone (the script is then killed and
    ConnectionClosed raised)."""
    path = script_file(sandbox, relative)
    timeout_s = check_timeout(timeout_s)
    env = script_env(sandbox, model_file)
    try:
        (sandbox.root / RESULT_FILE).unlink()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        pass
    with tempfile.TemporaryDirectory(prefix="wb-script-") as scratch:
        out_path, err_path = Path(scratch) / "stdout", Path(scratch) / "stderr"
        started = time.perf_counter()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                child = subprocess.Popen([sys.executable, str(path)], cwd=str(sandbox.root),
                                         env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, start_new_session=True)
            except OSError as exc:
                raise ProtocolError(Err.RUNTIME, f"cannot start {sys.executable}: {exc}") from None
            if running is not None:
                running.add(child)
            forwarder = (OutputForwarder(out_path, err_path, on_output)
                         if on_output is not None else None)
            try:
                exit_code, timed_out = _wait(child, started + timeout_s, forwarder, hung_up)
            except BaseException:
                _kill_group(child)  # the host is gone, or streaming failed: end the script too
                child.wait()
                raise
            finally:
                if running is not None:
                    running.remove(child)
                if forwarder is not None:
                    forwarder.close()
        seconds = time.perf_counter() - started
        stdout, stdout_cut = _tail(out_path, OUTPUT_TAIL_BYTES)
        stderr, stderr_cut = _tail(err_path, OUTPUT_TAIL_BYTES)
    result, problem = (None, None) if timed_out else _result_of(sandbox, stdout)
    log.info("script %s %s in %.2f s", relative,
             f"was stopped after {timeout_s:g} s" if timed_out else f"exited with {exit_code}",
             seconds)
    reply: Dict[str, Any] = {
        "exit_code": exit_code, "stdout": stdout, "stderr": stderr, "result": result,
        "timed_out": timed_out, "seconds": round(seconds, 3),
        "stdout_truncated": stdout_cut, "stderr_truncated": stderr_cut,
    }
    if problem:
        reply["result_error"] = problem
    return reply


def _wait(child: subprocess.Popen, deadline: float, forwarder: Optional[OutputForwarder],
          hung_up: Optional[Callable[[], bool]]) -> tuple:
    """(exit code, timed out) once ``child`` ended or was killed at ``deadline``, its output
    forwarded meanwhile."""
    tick = OUTPUT_TICK_S if forwarder is not None else QUIET_TICK_S
    while True:
        left = deadline - time.perf_counter()
        try:
            exit_code: Optional[int] = child.wait(timeout=max(0.0, min(tick, left)))
            break
        except subprocess.TimeoutExpired:
            pass
        if left <= 0:
            _kill_group(child)
            child.wait()
            if forwarder is not None:
                forwarder.pump(final=True)
            return None, True
        if hung_up is not None and hung_up():
            raise ConnectionClosed("the host hung up while its script ran")
        if forwarder is not None:
            forwarder.pump()
    if forwarder is not None:
        forwarder.pump(final=True)
    return exit_code, False


def tails(stdout: Path, stderr: Path) -> Dict[str, Any]:
    """The last OUTPUT_TAIL_BYTES of each output file, as a reply carries them."""
    out, out_cut = _tail(stdout, OUTPUT_TAIL_BYTES)
    err, err_cut = _tail(stderr, OUTPUT_TAIL_BYTES)
    return {"stdout": out, "stderr": err, "stdout_truncated": out_cut,
            "stderr_truncated": err_cut}
