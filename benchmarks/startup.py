"""Start-up figures of the hub and project windows, as ratios to baselines measured in this run.

Prints one JSON object:
- hub_cold_start_ratio: hub process start → welcome window painted, over a bare PySide6 process
  that shows an empty QMainWindow (start → painted). Goal ≤ 1.3.
- open_project_ratio: hub.open_project request → project window painted, over the same bare
  cold start. Goal ≤ 0.5.
- cold_open_project_ratio: `workbench open PATH` with no hub → project window painted with a
  file in the editor, over the same bare cold start. Goal ≤ 3.
- ipc_roundtrip_ratio: a request/response through the hub, over the same bytes echoed by a
  raw QLocalSocket server. Goal ≤ 1.5.

With ``--installed PYTHON`` (an installed Workbench's interpreter, e.g. /opt/workbench/bin/python
of the .deb, or a pipx venv's) it measures only installed_cold_start_ratio: that installation's
hub cold start over a bare PySide6 window started by the same interpreter, with nothing of this
checkout on its path. Goal ≤ 1.3.

Run: .venv/bin/python benchmarks/startup.py [--runs N] [--installed PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from workbench.ipc.client import HubClient
from workbench.ipc.framing import FrameDecoder, encode_frame
from workbench.project import create_from_template

BARE_WINDOW = textwrap.dedent("""
    import os, sys, time
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow
    app = QApplication(sys.argv)
    window = QMainWindow()
    class Watch(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint:
                obj.removeEventFilter(self)
                QTimer.singleShot(0, done)
            return False
    def done():
        with open(os.environ["WORKBENCH_PAINT_MARKER"], "a") as f:
            f.write(f"bare {os.getpid()} {time.monotonic():.6f}\\n")
        app.quit()
    watch = Watch()
    window.installEventFilter(watch)
    window.resize(1200, 780)
    window.show()
    app.exec()
""")

ECHO_SERVER = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtNetwork import QLocalServer
    app = QCoreApplication(sys.argv)
    server = QLocalServer()
    sockets = []
    def accept():
        while server.hasPendingConnections():
            s = server.nextPendingConnection()
            s.readyRead.connect(lambda s=s: (s.write(s.readAll()), s.flush()))
            sockets.append(s)
    server.newConnection.connect(accept)
    server.listen(sys.argv[1])
    print("listening", flush=True)
    app.exec()
""")


class Session:
    """A private runtime folder and marker file, and the processes started in it."""

    def __init__(self, base: Path, name: str):
        self.runtime = Path(tempfile.mkdtemp(prefix=f"wb-{name}-", dir="/tmp"))
        self.marker = base / f"{name}.marker"
        self.marker.write_text("")
        self.env = {**os.environ, "WORKBENCH_RUNTIME_DIR": str(self.runtime),
                    "WORKBENCH_CONFIG_DIR": str(base / "config"), "WORKBENCH_PAINT_MARKER": str(self.marker),
                    "QT_QPA_PLATFORM": "offscreen"}

    def wait_for_mark(self, label: str, count: int = 1, timeout: float = 30.0) -> tuple[int, float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = [line.split() for line in self.marker.read_text().splitlines()]
            marks = [(int(pid), float(t)) for name, pid, t in lines if name == label]
            if len(marks) >= count:
                return marks[count - 1]
            time.sleep(0.002)
        raise TimeoutError(f"no '{label}' paint within {timeout} s")

    def hub(self) -> HubClient:
        os.environ["WORKBENCH_RUNTIME_DIR"] = str(self.runtime)
        return HubClient.connect()

    def close(self) -> None:
        needle = f"WORKBENCH_RUNTIME_DIR={self.runtime}".encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if needle in (entry / "environ").read_bytes().split(b"\0"):
                        os.kill(int(entry.name), signal.SIGKILL)
                except (OSError, ProcessLookupError):
                    pass
        time.sleep(0.2)
        shutil.rmtree(self.runtime, ignore_errors=True)


def bare_cold_start(base: Path, python: str = sys.executable) -> float:
    session = Session(base, "bare")
    if python != sys.executable:
        session.env.pop("PYTHONPATH", None)
    start = time.monotonic()
    process = subprocess.Popen([python, "-c", BARE_WINDOW], env=session.env)
    _, painted = session.wait_for_mark("bare")
    process.wait()
    session.close()
    return painted - start


def hub_cold_start(base: Path, python: str = sys.executable) -> float:
    session = Session(base, "hub")
    session.env["WORKBENCH_NO_SPARE"] = "1"
    if python != sys.executable:
        session.env.pop("PYTHONPATH", None)  # the installation's own package, not this checkout
    start = time.monotonic()
    subprocess.Popen([python, "-m", "workbench.app.hub_process"], env=session.env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, painted = session.wait_for_mark("welcome")
    session.close()
    return painted - start


def open_project_times(base: Path, projects: list[Path]) -> list[float]:
    session = Session(base, "open")
    subprocess.Popen([sys.executable, "-m", "workbench.app.hub_process", "--no-welcome"], env=session.env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    try:
        for count, project in enumerate(projects, start=1):
            _wait_for_spare(session)
            time.sleep(0.3)  # let the spare settle, as it would between two user clicks
            with session.hub() as hub:
                start = time.monotonic()
                hub.call("hub.open_project", {"path": str(project)})
            _, painted = session.wait_for_mark("project", count)
            times.append(painted - start)
    finally:
        session.close()
    return times


def _wait_for_spare(session: Session, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with session.hub() as hub:
                windows = hub.call("hub.list_windows", {"all": True})["windows"]
            if any(w["kind"] == "spare" and w["state"] == "ready" for w in windows):
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise TimeoutError("no spare window became ready")


def cold_open_project(base: Path, project: Path) -> float:
    session = Session(base, "cold")
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "workbench", "open", str(project)], env=session.env, check=True,
                   stdout=subprocess.DEVNULL)
    _, painted = session.wait_for_mark("project")
    session.close()
    return painted - start


def _roundtrips(sock: socket.socket, frame: bytes, count: int) -> float:
    decoder = FrameDecoder()
    start = time.perf_counter()
    for _ in range(count):
        sock.sendall(frame)
        messages: list = []
        while not messages:
            messages = decoder.feed(sock.recv(65536))
    return (time.perf_counter() - start) / count


def ipc_roundtrip_ratio(base: Path, count: int) -> tuple[float, float]:
    frame = encode_frame({"jsonrpc": "2.0", "id": 1, "method": "hub.ping", "params": {}})
    echo_path = Path(tempfile.mkdtemp(prefix="wb-echo-", dir="/tmp")) / "echo.sock"
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(echo_path)], stdout=subprocess.PIPE, text=True)
    echo.stdout.readline()
    session = Session(base, "ipc")
    session.env["WORKBENCH_NO_SPARE"] = "1"
    subprocess.Popen([sys.executable, "-m", "workbench.app.hub_process", "--no-welcome"], env=session.env,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (session.runtime / "hub.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        echo_sock = socket.socket(socket.AF_UNIX)
        echo_sock.connect(str(echo_path))
        hub_sock = socket.socket(socket.AF_UNIX)
        hub_sock.connect(str(session.runtime / "hub.sock"))
        echo_times, hub_times = [], []
        for _ in range(5):  # interleaved rounds, so drift in machine load hits both alike
            echo_times.append(_roundtrips(echo_sock, frame, count))
            hub_times.append(_roundtrips(hub_sock, frame, count))
        return statistics.median(echo_times), statistics.median(hub_times)
    finally:
        echo.kill()
        session.close()


def _compile_package() -> None:
    """Measure what an installed app does: with the package's bytecode already on disk."""
    import compileall

    import workbench

    compileall.compile_dir(Path(workbench.__file__).parent, quiet=1)


def installed_cold_start(python: str, runs: int) -> dict:
    """The installed app's hub cold start over a bare window of the same interpreter."""
    where = subprocess.run([python, "-c", "import workbench; print(workbench.__file__)"], capture_output=True,
                           text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, check=True,
                           cwd="/")
    base = Path(tempfile.mkdtemp(prefix="wb-bench-installed-"))
    bare, hub = [], []
    for _ in range(runs):  # interleaved, as the clone's
        bare.append(bare_cold_start(base, python))
        hub.append(hub_cold_start(base, python))
    shutil.rmtree(base, ignore_errors=True)
    bare_s, hub_s = statistics.median(bare), statistics.median(hub)
    return {"installed_python": python, "installed_package": where.stdout.strip(),
            "bare_window_cold_start_s": round(bare_s, 4), "installed_hub_cold_start_s": round(hub_s, 4),
            "installed_cold_start_ratio": round(hub_s / bare_s, 3), "goal": 1.3, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--roundtrips", type=int, default=2000)
    parser.add_argument("--installed", metavar="PYTHON", help="an installed Workbench's interpreter")
    args = parser.parse_args()
    if args.installed:
        print(json.dumps(installed_cold_start(args.installed, args.runs), indent=2))
        return
    _compile_package()
    base = Path(tempfile.mkdtemp(prefix="wb-bench-"))
    projects = [create_from_template("digits", base / f"digits{i}").root for i in range(args.runs + 1)]

    bare, hub, cold = [], [], []
    for run in range(args.runs):  # interleaved, for the same reason as above
        bare.append(bare_cold_start(base))
        hub.append(hub_cold_start(base))
        cold.append(cold_open_project(base, projects[run]))
    opened = open_project_times(base, projects[: args.runs])
    echo_rt, hub_rt = ipc_roundtrip_ratio(base, args.roundtrips)
    bare_s = statistics.median(bare)
    result = {
        "bare_window_cold_start_s": round(bare_s, 4),
        "hub_cold_start_s": round(statistics.median(hub), 4),
        "open_project_s": round(statistics.median(opened), 4),
        "cold_open_project_s": round(statistics.median(cold), 4),
        "raw_echo_roundtrip_us": round(echo_rt * 1e6, 1),
        "hub_roundtrip_us": round(hub_rt * 1e6, 1),
        "hub_cold_start_ratio": round(statistics.median(hub) / bare_s, 3),
        "open_project_ratio": round(statistics.median(opened) / bare_s, 3),
        "cold_open_project_ratio": round(statistics.median(cold) / bare_s, 3),
        "ipc_roundtrip_ratio": round(hub_rt / echo_rt, 3),
        "runs": args.runs,
    }
    shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
