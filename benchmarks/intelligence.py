"""Figures of the console, code intelligence and debugger, as times and ratios to baselines
measured in this run.

Prints one JSON object:
- completion_p50_ms, completion_p90_ms: keystroke to the completion list shown with entries, in
  a real project window's editor (its language server capability, a real pylsp), on a 2,000-line
  file that imports torch; 50 completions once the server is warm, at lines spread over the
  file, of three kinds: after ``torch.``, after ``nn.``, and a local name's prefix (those wait
  for typing to pause, 120 ms, by design). Goal p90 <= 300 ms. Also per kind, and where the
  time goes: before the request is sent (the name pause, telling the server the edit), the
  server's answer (request written to answer read), and after it (reading it, the list).
- console_ready_ratio: the Console dock's tab brought to the front in a project window to its
  first prompt accepting input (the dock's own wait before it starts a kernel included), over
  starting a bare ipykernel with jupyter_client (``KernelManager.start_kernel``, a blocking
  client's ``wait_for_ready``) from a process that has not imported jupyter_client yet.
  Goal <= 1.3.
- breakpoint_hit_ratio: the window's Debug File command to the program stopped at a
  breakpoint on line 10 of a small script (the stop's stack in the window), over ``python -m
  debugpy --listen 127.0.0.1:PORT --wait-for-client script.py`` and a minimal DAP client of this
  file's own (initialize, attach, setBreakpoints, configurationDone, until ``stopped``) run to
  the same breakpoint. Goal <= 1.5.

Every window and every baseline runs in a fresh process of its own (a first console, a first
debug session); baseline and measured runs alternate and the medians are compared.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/intelligence.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPLETION_FILE_LINES = 2000
COMPLETIONS = 50
WARM_UP_COMPLETIONS = 6
BREAKPOINT_LINE = 10
SETTLE_S = 1.0  # after the capabilities are installed, as a person looks at the window first
PAUSE_BETWEEN_COMPLETIONS_S = 0.4
TIMEOUT_S = 90.0
WORKER_TIMEOUT_S = 600.0

# Typed on a new line inside a function, then the measured key: (kind, typed first, measured key).
COMPLETION_KINDS = (("torch.", "x = torch", "."), ("nn.", "y = nn", "."), ("local name", "z = runnin", "g"))

DEBUG_TARGET = '''"""A small script for the breakpoint benchmark."""
import math


def mean(values):
    return sum(values) / len(values)


values = [math.sqrt(i) for i in range(10)]
average = mean(values)
print(average)
'''


def completion_source(lines: int = COMPLETION_FILE_LINES) -> str:
    """A plausible training-code file of exactly ``lines`` lines that imports torch."""
    out = ['"""A long model file for the completion benchmark."""', "import math", "",
           "import torch", "import torch.nn as nn", "import torch.nn.functional as F", "", ""]
    index = 0
    while len(out) + 7 <= lines:
        out += [f"def block_{index}(x, scale=1.0):", "    running_total = x * scale",
                "    hidden = torch.relu(running_total)", "    layer = nn.Linear(8, 8)",
                "    return F.relu(layer(hidden)) + math.sqrt(scale)", "", ""]
        index += 1
    out += ["# padding"] * (lines - len(out))
    return "\n".join(out) + "\n"


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# --- in a worker process: Qt ----------------------------------------------------------------------

def wait_until(condition, timeout: float = TIMEOUT_S, what: str = "", interval_ms: int = 2):
    """Run Qt's event loop until ``condition()`` is truthy (checked every ``interval_ms``); the
    loop sleeps between events, as a window does, instead of spinning a core."""
    from PySide6.QtCore import QEventLoop, QTimer

    value = condition()
    if value:
        return value
    loop = QEventLoop()
    timer = QTimer(interval=interval_ms)
    deadline = time.monotonic() + timeout
    found: list = []

    def check() -> None:
        result = condition()
        if result or time.monotonic() > deadline:
            found.append(result)
            loop.quit()

    timer.timeout.connect(check)
    timer.start()
    loop.exec()
    timer.stop()
    if not found or not found[0]:
        raise TimeoutError(f"no {what or condition} within {timeout} s")
    return found[0]


def pause(seconds: float) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def open_window(root: Path):
    """A project window on ``root`` with every built-in capability, as `workbench open` shows
    it, once its capabilities are in and it has settled."""
    from PySide6.QtWidgets import QApplication

    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    QApplication.instance() or QApplication([])
    window = ProjectWindow(load_project(root))
    window.resize(1300, 850)
    window.show()
    wait_until(lambda: window.capabilities_installed, what="the capabilities")
    pause(SETTLE_S)
    return window


def close_window(window) -> None:
    window.discard_changes_on_close = True
    window.close()
    pause(0.3)


def worker_console(root: Path) -> dict:
    """Seconds from the Console dock's tab brought to the front to its first prompt."""
    from PySide6.QtWidgets import QDockWidget

    from workbench.console.widgets import panel_of

    window = open_window(root)
    panel = panel_of(window)
    dock = window.findChild(QDockWidget, "dock-console")
    start = time.perf_counter()
    dock.show()
    dock.raise_()
    console = wait_until(panel.current, what="a console", interval_ms=1)
    created = time.perf_counter()
    wait_until(console.accepts_input, what="the console's prompt", interval_ms=1)
    ready = time.perf_counter()
    close_window(window)
    return {"ready_s": ready - start, "console_made_s": created - start}


def worker_debug(root: Path) -> dict:
    """Seconds from Debug File to the program stopped at the breakpoint."""
    from workbench.debug.widgets import controller_of

    script = root / "debug_target.py"
    window = open_window(root)
    controller = controller_of(window)
    if not any(b.line == BREAKPOINT_LINE for b in controller.breakpoints_in(script)):  # kept per project
        controller.toggle_breakpoint(str(script), BREAKPOINT_LINE)
    start = time.perf_counter()
    window.commands.execute("debug.debugFile", path=str(script))
    # The session says "stopped" a moment before its stop (where, the stack) is in.
    wait_until(lambda: controller.current_stop is not None, what="the breakpoint", interval_ms=1)
    stopped = time.perf_counter()
    line = controller.current_stop.top.line
    if line != BREAKPOINT_LINE:
        raise RuntimeError(f"stopped on line {line}, not {BREAKPOINT_LINE}")
    controller.stop()
    wait_until(lambda: controller.session_state == "ended", what="the end of the session")
    close_window(window)
    return {"stopped_s": stopped - start}


def worker_completion(root: Path, count: int) -> dict:
    """Keystroke-to-list times (ms) of ``count`` completions, with where the time went."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QTextCursor
    from PySide6.QtTest import QTest

    from workbench.lsp.widgets import controller_of

    path = root / "long_model.py"
    window = open_window(root)
    tab = window.open_file(path)
    controller = controller_of(window)
    wait_until(lambda: controller.status.state == "running", what="the language server")
    editor = tab.editor
    window.activateWindow()
    editor.setFocus()

    marks: dict[str, list[float]] = {"sent": [], "answered": []}
    session = controller.session
    send, on_answer = session._send, session._on_answer

    def timed_send(request) -> None:  # on the protocol thread
        send(request)
        if request.kind == "completion":
            marks["sent"].append(time.perf_counter())

    def timed_answer(answer) -> None:  # on the protocol thread, as the answer is read
        marks["answered"].append(time.perf_counter())
        on_answer(answer)

    session._send, session._on_answer = timed_send, timed_answer
    blocks = [number for number, line in enumerate(completion_source().splitlines(), 1)
              if line.startswith("    hidden = ")]
    samples, missed = [], 0
    for index in range(WARM_UP_COMPLETIONS + count):
        kind, typed, key = COMPLETION_KINDS[index % len(COMPLETION_KINDS)]
        line = blocks[(index * 37) % len(blocks)]  # lines spread over the whole file
        tab.set_cursor_position(line, len(editor.document().findBlockByNumber(line - 1).text()) + 1)
        QTest.keyClick(editor, Qt.Key.Key_Return)  # the new line takes the body's indent
        QTest.keyClicks(editor, typed)
        marks["sent"].clear()
        marks["answered"].clear()
        start = time.perf_counter()
        QTest.keyClicks(editor, key)
        try:
            wait_until(editor.completions_shown, timeout=10, what="the completion list", interval_ms=1)
            shown = time.perf_counter()
        except TimeoutError:
            shown = None
        sent = next((t for t in marks["sent"] if t >= start), None)
        answered = next((t for t in marks["answered"] if sent is not None and t >= sent), None)
        if index >= WARM_UP_COMPLETIONS:
            if shown is None:
                missed += 1
            else:
                samples.append({"kind": kind, "total": shown - start, "line": line,
                                "before_send": None if sent is None else sent - start,
                                "server": None if answered is None else answered - sent,
                                "after_answer": None if answered is None else shown - answered})
        editor.assist.hide_completions()
        cursor = editor.textCursor()
        cursor.select(QTextCursor.SelectionType.BlockUnderCursor)
        cursor.removeSelectedText()  # the inserted line and its line break: the file as it was
        editor.setTextCursor(cursor)
        pause(PAUSE_BETWEEN_COMPLETIONS_S)
    if tab.text() != completion_source():
        raise RuntimeError("the file was not put back as it was between completions")
    session._send, session._on_answer = send, on_answer
    controller.shut_down(wait=5)
    close_window(window)
    return {"samples": samples, "missed": missed}


# --- in a worker process: the baselines ---------------------------------------------------------

def worker_bare_kernel(root: Path) -> dict:
    """Seconds to start a bare ipykernel and have a blocking jupyter_client ready on it."""
    start = time.perf_counter()
    from jupyter_client import KernelManager  # part of the cost: the window imports it too

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(root))
    client = manager.blocking_client()
    client.start_channels()
    client.wait_for_ready(timeout=TIMEOUT_S)
    ready = time.perf_counter()
    client.stop_channels()
    manager.shutdown_kernel(now=True)
    return {"ready_s": ready - start}


class MinimalDapClient:
    """Just enough of the Debug Adapter Protocol to run a program to a breakpoint."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.seq = 0
        self.buffer = b""

    def send(self, command: str, arguments: dict | None = None) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments or {}}).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def receive(self) -> dict:
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        header, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        length = int(next(line.split(b":")[1] for line in header.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        while len(self.buffer) < length:
            self._read()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return json.loads(body)

    def wait_for(self, predicate) -> dict:
        while True:
            message = self.receive()
            if predicate(message):
                return message

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("debugpy closed the connection")
        self.buffer += chunk


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def worker_bare_debugpy(root: Path) -> dict:
    """Seconds from starting ``python -m debugpy --wait-for-client`` to stopped at the breakpoint."""
    script = root / "debug_target.py"
    port = free_port()
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
                                "--wait-for-client", str(script)], cwd=root,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
        client = MinimalDapClient(sock)
        initialize = client.send("initialize", {"adapterID": "debugpy", "clientID": "benchmark",
                                                "pathFormat": "path", "linesStartAt1": True,
                                                "columnsStartAt1": True})
        client.wait_for(lambda m: m.get("type") == "response" and m.get("request_seq") == initialize)
        client.send("attach", {"justMyCode": True})
        client.wait_for(lambda m: m.get("type") == "event" and m.get("event") == "initialized")
        breakpoints = client.send("setBreakpoints", {"source": {"path": str(script)},
                                                     "breakpoints": [{"line": BREAKPOINT_LINE}]})
        client.wait_for(lambda m: m.get("type") == "response" and m.get("request_seq") == breakpoints)
        client.send("configurationDone")
        client.wait_for(lambda m: m.get("type") == "event" and m.get("event") == "stopped")
        stopped = time.perf_counter()
        client.send("disconnect", {"terminateDebuggee": True})
        sock.close()
    finally:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"stopped_s": stopped - start}


WORKERS = {"console": worker_console, "debug": worker_debug, "bare-kernel": worker_bare_kernel,
           "bare-debugpy": worker_bare_debugpy}


# --- the benchmark ------------------------------------------------------------------------------

def run_worker(kind: str, root: Path, base: Path, *extra: str) -> dict:
    """Run one worker in a fresh process (private config and runtime folders) and return its
    JSON answer."""
    # Each window opens the project as if for the first time: a layout saved by the one before
    # would bring the Console to the front (starting its kernel at once) or reopen a file.
    shutil.rmtree(root / ".workbench" / "hot-exit", ignore_errors=True)
    (root / ".workbench" / "window-state.json").unlink(missing_ok=True)
    runtime = Path(tempfile.mkdtemp(prefix="wb-intel-", dir="/tmp"))
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "WORKBENCH_RUNTIME_DIR": str(runtime),
           "WORKBENCH_CONFIG_DIR": str(base / f"config-{kind}-{time.monotonic_ns()}")}
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", kind, "--project", str(root), *extra],
                              env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_project(base: Path) -> Path:
    from workbench.project import create_from_template

    root = create_from_template("digits", base / "digits").root
    (root / "long_model.py").write_text(completion_source(), encoding="utf-8")
    (root / "debug_target.py").write_text(DEBUG_TARGET, encoding="utf-8")
    return root


def completion_figures(result: dict) -> dict:
    samples = result["samples"]
    if not samples:
        return {"completion_missed": result["missed"]}

    def ms(values) -> list[float]:
        return [v * 1000 for v in values if v is not None]

    totals = ms(s["total"] for s in samples)
    figures = {"completion_p50_ms": round(percentile(totals, 0.5), 1),
               "completion_p90_ms": round(percentile(totals, 0.9), 1),
               "completion_count": len(samples), "completion_missed": result["missed"]}
    for part in ("before_send", "server", "after_answer"):
        values = ms(s[part] for s in samples)
        if values:
            figures[f"completion_{part}_p50_ms"] = round(percentile(values, 0.5), 1)
            figures[f"completion_{part}_p90_ms"] = round(percentile(values, 0.9), 1)
    for kind, _, _ in COMPLETION_KINDS:
        values = ms(s["total"] for s in samples if s["kind"] == kind)
        server = ms(s["server"] for s in samples if s["kind"] == kind)
        if values:
            figures[f"completion_{kind.replace(' ', '_').rstrip('.')}_p50_p90_ms"] = [
                round(percentile(values, 0.5), 1), round(percentile(values, 0.9), 1)]
            if server:
                figures[f"completion_{kind.replace(' ', '_').rstrip('.')}_server_p50_ms"] = round(
                    percentile(server, 0.5), 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--completions", type=int, default=COMPLETIONS)
    parser.add_argument("--worker", choices=sorted([*WORKERS, "completion"]), help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "completion":
        print(json.dumps(worker_completion(args.project, args.completions)))
        return
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args.project)))
        return

    base = Path(tempfile.mkdtemp(prefix="wb-bench-intel-"))
    try:
        root = make_project(base)
        kernels, consoles, debugpys, debugs, console_made = [], [], [], [], []
        for _ in range(args.runs):  # alternated, so drift in the machine's load hits both alike
            kernels.append(run_worker("bare-kernel", root, base)["ready_s"])
            console = run_worker("console", root, base)
            consoles.append(console["ready_s"])
            console_made.append(console["console_made_s"])
            debugpys.append(run_worker("bare-debugpy", root, base)["stopped_s"])
            debugs.append(run_worker("debug", root, base)["stopped_s"])
        completion = run_worker("completion", root, base, "--completions", str(args.completions))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    kernel_s, console_s = statistics.median(kernels), statistics.median(consoles)
    debugpy_s, debug_s = statistics.median(debugpys), statistics.median(debugs)
    result = {
        **completion_figures(completion),
        "bare_kernel_ready_s": round(kernel_s, 3),
        "console_ready_s": round(console_s, 3),
        "console_started_after_s": round(statistics.median(console_made), 3),
        "console_ready_ratio": round(console_s / kernel_s, 3),
        "bare_debugpy_stopped_s": round(debugpy_s, 3),
        "debug_stopped_s": round(debug_s, 3),
        "breakpoint_hit_ratio": round(debug_s / debugpy_s, 3),
        "runs": args.runs,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
