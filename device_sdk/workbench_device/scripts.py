"""Running a user's verification script in a child process, in the session's folder.

The script is ``python <path>`` with the agent's Python, its working folder the session's
folder, and two environment variables: ``WORKBENCH_MODEL`` (the model file, when the request
names a model) and ``WORKBENCH_SESSION_DIR``. Its result is the JSON it writes to
``result.json`` in that folder, or else the JSON on the last line it prints. A script that
outlives its time-out is killed with everything it started.
"""

from __future__ import annotations

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
from typing import Any, Dict, Optional, Set

from workbench_device.protocol import Err, ProtocolError
from workbench_device.sessions import Sandbox

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
MAX_TIMEOUT_S = 24 * 3600.0
# What of a script's output goes back in the reply's header (which is at most 64 KiB): the end,
# where the error usually is.
OUTPUT_TAIL_BYTES = 16 * 1024
MAX_RESULT_BYTES = 24 * 1024


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


def run_script(sandbox: Sandbox, relative: Any, model_file: Optional[Path] = None,
               timeout_s: Any = None, running: Optional[RunningScripts] = None) -> Dict[str, Any]:
    """Run the script ``relative`` in ``sandbox``; its exit code, the end of its output and its
    result (see the module's description)."""
    path = sandbox.resolve(relative)
    if not path.is_file():
        raise ProtocolError(Err.NOT_FOUND, f"{relative!r} is not a file in the session's folder; "
                                           "send it with file.put first")
    if timeout_s is None:
        timeout_s = 60.0
    if (not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool)
            or not 0 < timeout_s <= MAX_TIMEOUT_S):
        raise ProtocolError(Err.BAD_REQUEST, f"'timeout_s' must be a number of seconds from 0 to "
                                             f"{MAX_TIMEOUT_S:g}")
    env = dict(os.environ)
    env["WORKBENCH_SESSION_DIR"] = str(sandbox.root)
    env.pop("WORKBENCH_MODEL", None)
    if model_file is not None:
        env["WORKBENCH_MODEL"] = str(model_file)
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
            timed_out = False
            if running is not None:
                running.add(child)
            try:
                exit_code: Optional[int] = child.wait(timeout=float(timeout_s))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(child)
                child.wait()
                exit_code = None
            finally:
                if running is not None:
                    running.remove(child)
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
