"""Starting, interrupting and stopping the ipykernel a console talks to.

A kernel is ``INTERPRETER -m ipykernel_launcher -f CONNECTION_FILE`` in the project folder,
started through jupyter_client's KernelManager, with matplotlib's inline backend so plots show in
the console. ``start_kernel`` blocks until the kernel answers (call it off the GUI thread) and
either returns a ready ``Kernel`` or raises ConsoleError saying why it never came up.

jupyter_client is imported inside the functions that use it: it costs a third of a second and
must stay off the window's start-up path.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

from workbench.console.errors import ConsoleError
from workbench.console.interpreter import SETTING, Interpreter, project_interpreter
from workbench.project import PROJECT_FILE
from workbench.tasks import Cancelled, CancelToken

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
READY_TIMEOUT_S = 60.0
STDERR_TAIL_CHARS = 4000


class Kernel:
    """One running kernel process: how to reach it (``connection_info``), and its life."""

    def __init__(self, manager: Any, interpreter: Interpreter, cwd: Path, stderr: IO[bytes]):
        self._manager = manager
        self._stderr = stderr
        self._lock = threading.Lock()
        self._stderr_tail_at_end = ""
        self.interpreter = interpreter
        self.cwd = cwd

    @property
    def connection_info(self) -> dict:
        """Ports, transport and key, as ``KernelClient.load_connection_info`` takes them."""
        return self._manager.get_connection_info()

    @property
    def pid(self) -> int | None:
        process = self._process()
        return process.pid if process is not None else None

    def _process(self):
        provisioner = self._manager.provisioner
        return getattr(provisioner, "process", None) if provisioner is not None else None

    def exit_code(self) -> int | None:
        """None while the process runs, else how it ended (negative: killed by that signal)."""
        process = self._process()
        return None if process is None else process.poll()

    def is_alive(self) -> bool:
        return self._process() is not None and self.exit_code() is None

    def interrupt(self) -> None:
        """Send the kernel a keyboard interrupt (what Ctrl+C does in a terminal)."""
        if self.is_alive():
            self._manager.interrupt_kernel()

    def shutdown(self) -> None:
        """End the process at once and remove its connection file; safe to call twice and from
        any thread."""
        with self._lock:
            if self._manager.has_kernel:
                try:
                    self._manager.shutdown_kernel(now=True)
                except Exception:  # the process may be gone already; the file must still go
                    self._manager.cleanup_resources()
            self._stderr_tail_at_end = self.stderr_tail()
            if not self._stderr.closed:
                self._stderr.close()
                if os.name == "nt":  # elsewhere the file was unlinked as soon as it was made
                    Path(self._stderr.name).unlink(missing_ok=True)

    def stderr_tail(self) -> str:
        """The last few thousand characters the kernel wrote to stderr."""
        if self._stderr.closed:
            return self._stderr_tail_at_end
        try:
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - STDERR_TAIL_CHARS)
            if hasattr(os, "pread"):
                # pread leaves the file offset alone: the kernel shares it, and writes there.
                data = os.pread(fd, size - start, start)
            else:
                with open(self._stderr.name, "rb") as file:
                    file.seek(start)
                    data = file.read()
        except OSError:
            return ""
        return data.decode("utf-8", "replace")

    def death_message(self) -> str:
        """What to tell the user once the process has ended."""
        code = self.exit_code()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
        tail = _last_lines(self.stderr_tail())
        said = f" Its last words: {tail}" if tail else ""
        return f"The console's kernel {how}; its variables are lost. Restart it to go on.{said}"


def kernel_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: Workbench's, with plots drawn inline in the console."""
    env = dict(os.environ)
    env["MPLBACKEND"] = INLINE_BACKEND
    # A Python started for the console must not think it is part of Workbench's own Qt app.
    env.pop("QT_API", None)
    env.update(extra or {})
    return env


def start_kernel(interpreter: Interpreter, cwd: Path, *, on_launched: Callable[[Kernel], None] | None = None,
                 cancel: CancelToken | None = None, ready_timeout: float = READY_TIMEOUT_S,
                 env: dict[str, str] | None = None) -> Kernel:
    """Start a kernel in ``cwd`` with ``interpreter`` and wait until it answers.

    ``on_launched(kernel)`` is called as soon as the process exists (so whoever started it can
    end it even if this call is abandoned). Raises ConsoleError when the interpreter cannot run,
    the kernel exits before it answers, or it stays silent for ``ready_timeout`` seconds; the
    process is ended then. Raises Cancelled (and ends the process) when ``cancel`` is set.
    """
    # Leave these imports here: jupyter_client and its zmq stay off the window's start-up path.
    import tempfile

    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpec

    if not interpreter.path.exists():
        raise ConsoleError(_interpreter_missing(interpreter))
    manager = KernelManager()
    # The spec is given, not looked up: the kernel must run in the project's interpreter, not in
    # whichever Python a "python3" kernelspec on this machine names.
    manager._kernel_spec = KernelSpec(
        argv=[str(interpreter.path), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        display_name="Python (Workbench console)", language="python", interrupt_mode="signal")
    stderr = tempfile.NamedTemporaryFile(prefix="workbench-kernel-", suffix=".log", delete=False)
    if os.name != "nt":
        # Unlinked at once where the platform allows: the kernel keeps writing to it, and it
        # vanishes with the last handle, whatever happens to Workbench.
        os.unlink(stderr.name)
    try:
        manager.start_kernel(cwd=str(cwd), env=kernel_environment(env), stderr=stderr,
                             stdout=subprocess.DEVNULL)
    except (OSError, RuntimeError) as exc:
        stderr.close()
        manager.cleanup_resources()
        raise ConsoleError(f"The console's kernel could not be started with {interpreter.describe()}: "
                           f"{getattr(exc, 'strerror', None) or exc}. {_fix(interpreter)}") from None
    kernel = Kernel(manager, interpreter, cwd, stderr)
    if on_launched is not None:
        on_launched(kernel)
    try:
        _wait_until_ready(kernel, manager, cancel, ready_timeout)
    except BaseException:
        kernel.shutdown()
        raise
    return kernel


def start_project_kernel(root: Path, *, on_launched: Callable[[Kernel], None] | None = None,
                         cancel: CancelToken | None = None, ready_timeout: float = READY_TIMEOUT_S) -> Kernel:
    """``start_kernel`` in project folder ``root`` with the interpreter its ``workbench.toml``
    names now (read again each time, so a fixed setting takes effect on the next start)."""
    from workbench.project import ProjectError, load_project

    try:
        project = load_project(root)
    except ProjectError as exc:
        raise ConsoleError(str(exc)) from None
    return start_kernel(project_interpreter(project), project.root, on_launched=on_launched, cancel=cancel,
                        ready_timeout=ready_timeout)


def _wait_until_ready(kernel: Kernel, manager, cancel: CancelToken | None, timeout: float) -> None:
    """Ask for kernel_info until the kernel answers, it exits, the time is up or ``cancel``."""
    import queue

    client = manager.client()
    # The shell channel is all it takes to ask; a heartbeat thread would only race the stop.
    client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        deadline = time.monotonic() + timeout
        asked = 0.0
        while True:
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if not kernel.is_alive():
                raise ConsoleError(_exited_message(kernel), details=kernel.stderr_tail())
            if time.monotonic() > deadline:
                raise ConsoleError(
                    f"The console's kernel ({kernel.interpreter.describe()}) did not answer within "
                    f"{timeout:.0f} s. {_fix(kernel.interpreter)} Then press Restart.",
                    details=kernel.stderr_tail())
            if time.monotonic() - asked > 1.0:
                client.kernel_info()  # asked again: the first may go before the kernel listens
                asked = time.monotonic()
            try:
                reply = client.shell_channel.get_msg(timeout=0.1)
            except queue.Empty:
                continue
            if reply.get("msg_type") == "kernel_info_reply":
                return
    finally:
        client.stop_channels()


def _exited_message(kernel: Kernel) -> str:
    tail = kernel.stderr_tail()
    code = kernel.exit_code()
    interpreter = kernel.interpreter
    if "No module named ipykernel" in tail:
        return (f"ipykernel is not installed for {interpreter.describe()}. Install it with "
                f"\"{interpreter.path} -m pip install ipykernel\", then press Restart.")
    said = _last_lines(tail)
    return (f"The console's kernel exited at once (code {code}) with {interpreter.describe()}"
            f"{': ' + said if said else ''}. {_fix(interpreter)} Then press Restart.")


def _fix(interpreter: Interpreter) -> str:
    if interpreter.configured:
        return (f"Check that {SETTING} in {PROJECT_FILE} names a Python with ipykernel installed, "
                "or remove it to use Workbench's own Python.")
    return "Install ipykernel in Workbench's Python, or name another Python in " + f"{SETTING} in {PROJECT_FILE}."


def _interpreter_missing(interpreter: Interpreter) -> str:
    return f"The console's Python interpreter {interpreter.path} does not exist. {_fix(interpreter)}"


def _last_lines(text: str, lines: int = 3) -> str:
    """The last few meaningful lines, minus the kernel's routine warnings."""
    kept = [line.strip() for line in text.splitlines()
            if line.strip() and "running over TCP without encryption" not in line]
    return " ".join(kept[-lines:])
