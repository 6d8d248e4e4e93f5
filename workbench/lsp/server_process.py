"""The language server's child process: started with pipes, read by two threads of its own.

The stdout thread hands each chunk of bytes to ``on_bytes`` and ``on_exit`` at end of file; the
stderr thread keeps the last lines, which say why a server that will not start failed. Qt-free.
"""

from __future__ import annotations

import collections
import logging
import os
import subprocess
import threading
from pathlib import Path
from typing import Callable

from workbench.lsp.errors import LanguageServerError

log = logging.getLogger(__name__)

STDERR_LINES_KEPT = 40
READ_SIZE = 64 * 1024


class ServerProcess:
    """One run of the server ``command`` in ``cwd`` (at a lower priority by ``niceness``)."""

    def __init__(self, command: tuple[str, ...], cwd: Path, on_bytes: Callable[[bytes], None],
                 on_exit: Callable[[], None], niceness: int = 0):
        self.command = command
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES_KEPT)
        env = dict(os.environ)
        # The server's own output must not be buffered, or answers would wait in its pipe.
        env["PYTHONUNBUFFERED"] = "1"
        try:
            self.popen = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, cwd=str(cwd), env=env, bufsize=0)
        except FileNotFoundError:
            raise LanguageServerError(
                f"The Python language server could not start: {command[0]} was not found. Install "
                "python-lsp-server (pip install python-lsp-server) or set [lsp] command in workbench.toml "
                "to a server that is installed, then Restart Language Server.") from None
        except OSError as exc:
            raise LanguageServerError(
                f"The Python language server could not start: running {command[0]} failed ({exc.strerror or exc}). "
                "Check [lsp] command in workbench.toml, then Restart Language Server.") from None
        if niceness and hasattr(os, "setpriority"):
            try:
                os.setpriority(os.PRIO_PROCESS, self.popen.pid, niceness)
            except OSError:
                pass  # it may have ended already
        self._stdout_thread = threading.Thread(target=self._read_stdout, args=(on_bytes, on_exit),
                                               name="lsp-stdout", daemon=True)
        self._stderr_thread = threading.Thread(target=self._read_stderr, name="lsp-stderr", daemon=True)
        self._stdout_thread.start()
        self._stderr_thread.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def write(self, data: bytes) -> bool:
        """Send ``data`` to the server; False when its input is closed (it has died)."""
        if not data:
            return True
        view = memoryview(data)
        try:
            while view:
                written = self.popen.stdin.write(view)  # unbuffered: it may take only part
                view = view[written or 0:]
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def close_input(self) -> None:
        try:
            self.popen.stdin.close()
        except OSError:
            pass

    def stderr_tail(self, wait: float = 0.0) -> str:
        """The last lines the server wrote to stderr (after waiting up to ``wait`` seconds for
        the stderr thread to read to the end, when the process has ended)."""
        if wait:
            self._stderr_thread.join(wait)
        return "".join(self._stderr_tail).strip()

    def kill(self) -> None:
        if self.popen.poll() is None:
            try:
                self.popen.kill()
            except OSError:
                pass

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _read_stdout(self, on_bytes, on_exit) -> None:
        stream = self.popen.stdout
        try:
            while True:
                try:
                    data = os.read(stream.fileno(), READ_SIZE)
                except OSError:
                    break
                if not data:
                    break
                on_bytes(data)
        finally:
            on_exit()

    def _read_stderr(self) -> None:
        for raw in iter(self.popen.stderr.readline, b""):
            line = raw.decode("utf-8", "replace")
            self._stderr_tail.append(line)
            log.debug("language server: %s", line.rstrip())
