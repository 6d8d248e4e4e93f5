"""Starting, interrupting and stopping the ipykernel a console talks to.

A kernel is ``INTERPRETER -m ipykernel_launcher -f CONNECTION_FILE`` in the project folder, with
matplotlib's inline backend so plots show in the console. ``launch_kernel`` starts the process
with the standard library alone (ports, key and connection file as jupyter_client writes them),
so the kernel boots while the console's widgets are still loading; ``Kernel.wait_until_ready``
(and ``start_kernel``, which does both) blocks until it answers or raises ConsoleError saying why
it never came up.

jupyter_client is imported only inside ``wait_until_ready``: it costs a third of a second and
must stay off the window's start-up path.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Callable

from workbench.console.errors import ConsoleError
from workbench.console.interpreter import SETTING, Interpreter, project_interpreter
from workbench.project import PROJECT_FILE
from workbench.tasks import Cancelled, CancelToken

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
READY_TIMEOUT_S = 60.0
STDERR_TAIL_CHARS = 4000
CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


class Kernel:
    """One kernel process: how to reach it (``connection_info``), and its life."""

    def __init__(self, process: subprocess.Popen, connection_file: Path, connection_info: dict,
                 interpreter: Interpreter, cwd: Path, stderr: IO[bytes], interrupt_event=None):
        self.process = process
        self.connection_file = connection_file
        self.connection_info = connection_info
        """Ports, transport and key, as ``KernelClient.load_connection_info`` takes them."""
        self.interpreter = interpreter
        self.cwd = cwd
        self._stderr = stderr
        self._stderr_tail_at_end = ""
        self._interrupt_event = interrupt_event
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """None while the process runs, else how it ended (negative: killed by that signal)."""
        return self.process.poll()

    def is_alive(self) -> bool:
        return self.exit_code() is None

    def interrupt(self) -> None:
        """Send the kernel a keyboard interrupt (what Ctrl+C does in a terminal), to its whole
        process group as a terminal does, so the user's child processes stop too."""
        if not self.is_alive():
            return
        if os.name == "nt":
            from jupyter_client.win_interrupt import send_interrupt  # Windows only: no signals there

            send_interrupt(self._interrupt_event)
            return
        try:
            os.killpg(self.process.pid, signal.SIGINT)
        except OSError:
            self.process.send_signal(signal.SIGINT)

    def shutdown(self) -> None:
        """End the process (and what it started) at once and remove its connection file; safe to
        call twice and from any thread."""
        with self._lock:
            if self.is_alive():
                try:
                    if os.name == "nt":
                        self.process.kill()
                    else:
                        os.killpg(self.process.pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.connection_file.unlink(missing_ok=True)
            if not self._stderr.closed:
                self._stderr_tail_at_end = self.stderr_tail()
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

    def start_failure_message(self) -> str:
        """What to tell the user when the process ended before it ever answered."""
        tail = self.stderr_tail()
        interpreter = self.interpreter
        if "No module named ipykernel" in tail:
            return (f"ipykernel is not installed for {interpreter.describe()}. Install it with "
                    f"\"{interpreter.path} -m pip install ipykernel\", then press Restart.")
        said = _last_lines(tail)
        return (f"The console's kernel exited at once (code {self.exit_code()}) with {interpreter.describe()}"
                f"{': ' + said if said else ''}. {_fix(interpreter)} Then press Restart.")

    def timeout_message(self, timeout: float) -> str:
        return (f"The console's kernel ({self.interpreter.describe()}) did not answer within {timeout:.0f} s. "
                f"{_fix(self.interpreter)} Then press Restart.")

    def death_message(self) -> str:
        """What to tell the user once the process has ended after it had answered."""
        code = self.exit_code()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
        tail = _last_lines(self.stderr_tail())
        said = f" Its last words: {tail}" if tail else ""
        return f"The console's kernel {how}; its variables are lost. Restart it to go on.{said}"

    def wait_until_ready(self, timeout: float = READY_TIMEOUT_S, cancel: CancelToken | None = None) -> None:
        """Ask for kernel_info until the kernel answers. Raises ConsoleError when it exits first
        or stays silent for ``timeout`` seconds, Cancelled when ``cancel`` is set (the process
        is left running: the caller ends it)."""
        import queue

        from jupyter_client import BlockingKernelClient

        client = BlockingKernelClient()
        client.load_connection_info(self.connection_info)
        # The shell channel is all it takes to ask; a heartbeat thread would only race the stop.
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            deadline = time.monotonic() + timeout
            asked = 0.0
            while True:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled()
                if not self.is_alive():
                    raise ConsoleError(self.start_failure_message(), details=self.stderr_tail())
                if time.monotonic() > deadline:
                    raise ConsoleError(self.timeout_message(timeout), details=self.stderr_tail())
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


def kernel_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: Workbench's, with plots drawn inline in the console."""
    env = dict(os.environ)
    env["MPLBACKEND"] = INLINE_BACKEND
    env["JPY_PARENT_PID"] = str(os.getpid())  # the kernel ends itself if Workbench goes
    # A Python started for the console must not think it is part of Workbench's own Qt app.
    env.pop("QT_API", None)
    env.update(extra or {})
    return env


def launch_kernel(interpreter: Interpreter, cwd: Path, env: dict[str, str] | None = None) -> Kernel:
    """Start a kernel process in ``cwd`` with ``interpreter`` and return at once (it answers
    about a second later). Raises ConsoleError when the interpreter cannot be run at all."""
    import tempfile

    if not interpreter.path.exists():
        raise ConsoleError(f"The console's Python interpreter {interpreter.path} does not exist. "
                           f"{_fix(interpreter)}")
    info = {**{name: port for name, port in zip(CHANNELS, _free_ports(len(CHANNELS)))},
            "ip": "127.0.0.1", "transport": "tcp", "signature_scheme": "hmac-sha256",
            "key": uuid.uuid4().hex, "kernel_name": ""}
    # mkstemp makes the file readable by this user only: the key in it lets anyone run code.
    handle, name = tempfile.mkstemp(prefix="workbench-kernel-", suffix=".json")
    connection_file = Path(name)
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        json.dump(info, file)
    stderr = tempfile.NamedTemporaryFile(prefix="workbench-kernel-", suffix=".log", delete=False)
    if os.name != "nt":
        # Unlinked at once where the platform allows: the kernel keeps writing to it, and it
        # vanishes with the last handle, whatever happens to Workbench.
        os.unlink(stderr.name)
    environment = kernel_environment(env)
    options: dict = {}
    interrupt_event = None
    if os.name == "nt":
        from jupyter_client.win_interrupt import create_interrupt_event

        interrupt_event = create_interrupt_event()
        environment["JPY_INTERRUPT_EVENT"] = str(interrupt_event)
        options["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
        options["close_fds"] = False
    else:
        options["start_new_session"] = True  # its own process group: interrupt and end it whole
    command = [str(interpreter.path), "-m", "ipykernel_launcher", "-f", str(connection_file)]
    try:
        process = subprocess.Popen(command, cwd=str(cwd), env=environment, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr, **options)
    except OSError as exc:
        stderr.close()
        connection_file.unlink(missing_ok=True)
        raise ConsoleError(f"The console's kernel could not be started with {interpreter.describe()}: "
                           f"{exc.strerror or exc}. {_fix(interpreter)}") from None
    return Kernel(process, connection_file, info, interpreter, Path(cwd), stderr, interrupt_event)


def start_kernel(interpreter: Interpreter, cwd: Path, *, on_launched: Callable[[Kernel], None] | None = None,
                 cancel: CancelToken | None = None, ready_timeout: float = READY_TIMEOUT_S,
                 env: dict[str, str] | None = None) -> Kernel:
    """Start a kernel in ``cwd`` with ``interpreter`` and wait until it answers (call it off the
    GUI thread).

    ``on_launched(kernel)`` is called as soon as the process exists. Raises ConsoleError when the
    interpreter cannot run, the kernel exits before it answers, or it stays silent for
    ``ready_timeout`` seconds; Cancelled when ``cancel`` is set. The process is ended then.
    """
    kernel = launch_kernel(interpreter, cwd, env)
    if on_launched is not None:
        on_launched(kernel)
    try:
        kernel.wait_until_ready(ready_timeout, cancel)
    except BaseException:
        kernel.shutdown()
        raise
    return kernel


def launch_project_kernel(root: Path) -> Kernel:
    """``launch_kernel`` in project folder ``root`` with the interpreter its ``workbench.toml``
    names now (read again each time, so a fixed setting takes effect on the next start)."""
    from workbench.project import ProjectError, load_project

    try:
        project = load_project(root)
    except ProjectError as exc:
        raise ConsoleError(str(exc)) from None
    return launch_kernel(project_interpreter(project), project.root)


def _free_ports(count: int) -> list[int]:
    """Ports free on the loopback interface now (held together, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if sys.platform != "win32":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _fix(interpreter: Interpreter) -> str:
    if interpreter.configured:
        return (f"Check that {SETTING} in {PROJECT_FILE} names a Python with ipykernel installed, "
                "or remove it to use Workbench's own Python.")
    return "Install ipykernel in Workbench's Python, or name another Python in " + f"{SETTING} in {PROJECT_FILE}."


def _last_lines(text: str, lines: int = 3) -> str:
    """The last few meaningful lines, minus the kernel's routine warnings."""
    kept = [line.strip() for line in text.splitlines()
            if line.strip() and "running over TCP without encryption" not in line]
    return " ".join(kept[-lines:])
