"""Whether running tool windows make the project window stutter, printed as one JSON object.

A real project window (offscreen, in this process, with its real window-process host and no hub)
opens tool windows the way a person does (the Models panel's command, which starts each tool
window's own process) and each tool window runs a real job at once. A 10 ms timer on the project
window's event loop records the gaps between its ticks: first with nothing else running
(``idle``), then from the moment the tool windows are asked for until every job has ended
(``busy``). A window that stutters shows long gaps; the ratio of the busy to the idle
figures is what the test holds down (tests/app/test_tool_windows.py).

Each gap is also given less the time the GUI thread was ready to run but waited for a processor
(the kernel's run-queue delay, /proc schedstat): the ``own_*`` figures. On a machine whose cores
are all taken (the tool windows' jobs, or whatever else runs there) the plain gaps grow with the
machine's load; the own gaps grow only with what the window does on its GUI thread or waits for
there (work, a blocking read, a lock), which is the stutter the window can be blamed for.

Run: python benchmarks/tool_windows.py [windows] [tool]      (defaults: 3 convert)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TICK_MS = 10
IDLE_S = 3.0

MAKE_MODEL = """
import sys, torch
from workbench.modeltools.project_code import ProjectCode
code = ProjectCode(sys.argv[1])
torch.manual_seed(0)
model = code.build_model("digits_net", code.hparams())
torch.save(model.state_dict(), sys.argv[2])
"""


def digits_project(folder: Path) -> tuple[Path, Path]:
    """A digits project with an (untrained) model.pt in a run's outputs, made in a child
    process so that torch never loads in the measuring process."""
    from workbench.project import create_from_template

    root = create_from_template("digits", folder / "digits").root
    run = root / "runs" / "20260101-090000-digits"
    (run / "outputs").mkdir(parents=True)
    (run / "digits.hparams").write_text((root / "hparams" / "digits.hparams").read_text())
    model = run / "outputs" / "model.pt"
    subprocess.run([sys.executable, "-c", MAKE_MODEL, str(root), str(model)], check=True, timeout=120)
    return root, model


class GapRecorder:
    """Ticks every TICK_MS on the GUI thread and keeps the gaps between ticks (ms). A watcher
    thread notes what the GUI thread was doing during any gap longer than LONG_GAP_S, so a
    stutter names its cause."""

    LONG_GAP_S = 0.25

    def __init__(self):
        import threading

        from PySide6.QtCore import Qt, QTimer

        self.gaps: list[float] = []
        self.own_gaps: list[float] = []
        self.long_gaps: list[str] = []
        self._last: float | None = None
        self._last_queued: float | None = None
        self._gui_thread = threading.get_ident()
        self._schedstat = _open_schedstat(threading.get_native_id())
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._watching = threading.Event()
        threading.Thread(target=self._watch, name="gap-watcher", daemon=True).start()

    def start(self) -> None:
        self.gaps, self.own_gaps, self._last = [], [], None
        self._timer.start(TICK_MS)
        self._watching.set()

    def stop(self) -> list[float]:
        self._watching.clear()
        self._timer.stop()
        return self.gaps

    def _tick(self) -> None:
        now = time.perf_counter()
        queued = _queued_ms(self._schedstat)
        if self._last is not None:
            gap = (now - self._last) * 1000
            self.gaps.append(gap)
            waited = queued - self._last_queued if queued is not None and self._last_queued is not None else 0.0
            self.own_gaps.append(max(gap - waited, 0.0))
        self._last, self._last_queued = now, queued

    def _watch(self) -> None:
        import traceback

        noted_for = None
        while True:
            self._watching.wait()
            time.sleep(0.025)
            last = self._last
            if last is not None and last != noted_for and time.perf_counter() - last > self.LONG_GAP_S:
                frame = sys._current_frames().get(self._gui_thread)
                stack = "".join(traceback.format_stack(frame)[-8:]) if frame is not None else "?"
                self.long_gaps.append(f"{time.perf_counter() - last:.2f} s into a gap, the GUI thread was at:\n{stack}")
                noted_for = last


def _open_schedstat(native_thread_id: int) -> int | None:
    """A descriptor on the thread's /proc schedstat (None where the kernel gives none)."""
    try:
        return os.open(f"/proc/self/task/{native_thread_id}/schedstat", os.O_RDONLY)
    except OSError:
        return None


def _queued_ms(schedstat: int | None) -> float | None:
    """How long (ms, all told) the thread has been ready to run but waiting for a processor."""
    if schedstat is None:
        return None
    try:
        return int(os.pread(schedstat, 128, 0).split()[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def summary(gaps: list[float], own_gaps: list[float] | None = None) -> dict:
    figures = {"ticks": len(gaps), **_figures(gaps, "gap")}
    if own_gaps:
        figures.update(_figures(own_gaps, "own_gap"))
    return figures


def _figures(gaps: list[float], name: str) -> dict:
    ordered = sorted(gaps)
    return {f"max_{name}_ms": round(ordered[-1], 2),
            f"p99_{name}_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
            f"median_{name}_ms": round(statistics.median(ordered), 2)}


def children_of(pid: int) -> set[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid and fields[0] != b"Z":
                found.add(int(entry.name))
    return found


class JobsWatcher:
    """Tells, from a thread of its own (so the GUI thread being measured does not pay for it),
    when every tool window has started its job and the job has ended."""

    def __init__(self, window_pids: list[int]):
        import threading

        self.done = threading.Event()
        self._pids = list(window_pids)
        self._started: set[int] = set()
        threading.Thread(target=self._watch, name="jobs-watcher", daemon=True).start()

    def _watch(self) -> None:
        while not self.done.is_set():
            running = {pid for pid in self._pids if children_of(pid)}
            self._started |= running
            if self._started == set(self._pids) and not running:
                self.done.set()
            time.sleep(0.1)


def _spin(app, seconds: float, until=lambda: False) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        if until():
            return True
        time.sleep(0.001)
    return until()


def measure(root: Path, model: Path, tool: str = "convert", windows: int = 3, timeout: float = 180.0,
            values: dict | None = None) -> dict:
    """The project window's event-loop gaps idle and while ``windows`` tool windows run ``tool``
    on ``model`` with ``values`` (each writing its own output beside it)."""
    from PySide6.QtWidgets import QApplication

    from workbench.app.launcher import new_window_id
    from workbench.app.window_process import ProjectWindowHost
    from workbench.modeltools.registry import get_tool
    from workbench.modeltools.widgets import opener_of, panel_of

    app = QApplication.instance() or QApplication([])
    host = ProjectWindowHost(new_window_id())
    host.open_project(root)
    window = host.window
    window.resize(1400, 900)
    if not _spin(app, 60, lambda: window.capabilities_installed and panel_of(window) is not None
                 and panel_of(window).listed):
        raise TimeoutError("the project window did not install its capabilities")
    _spin(app, 1.0)  # the first paint's follow-ups (git status, runs list) settle

    recorder = GapRecorder()
    recorder.start()
    _spin(app, IDLE_S)
    idle = summary(recorder.stop(), recorder.own_gaps)

    output = next((p for p in get_tool(tool).params if p.is_output and p.name == "output"), None)
    suffix = output.suffixes[0] if output is not None and output.suffixes else model.suffix
    outputs = [{"output": str(model.with_name(f"{model.stem}.w{i}{suffix}"))} if output else {}
               for i in range(windows)]
    opener = opener_of(window)
    pids: list[int] = []
    recorder.start()
    started = time.monotonic()
    try:
        for extra in outputs:
            window.commands.execute("modeltools.openTool", tool=tool, paths=[str(model)],
                                    values={**(values or {}), **extra}, run=True)
        pids = [entry["pid"] for entry in opener.opened]
        watcher = JobsWatcher(pids)
        done = _spin(app, timeout, watcher.done.is_set)
        busy_seconds = time.monotonic() - started
        busy = summary(recorder.stop(), recorder.own_gaps)
        busy["long_gaps"] = recorder.long_gaps[:5]
    finally:
        for pid in pids:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        window.discard_changes_on_close = True
        window.close()
        app.processEvents()
    if not done:
        raise TimeoutError(f"the {tool} jobs did not all finish within {timeout:g} s")
    missing = [extra["output"] for extra in outputs if extra and not Path(extra["output"]).is_file()]
    if missing:
        raise RuntimeError(f"the {tool} jobs ended without writing {', '.join(missing)}")
    return {"tool": tool, "windows": windows, "tool_window_pids": pids,
            "without_hub": all(entry.get("without_hub") for entry in opener.opened),
            "idle": idle, "busy": busy, "busy_seconds": round(busy_seconds, 2),
            "ratio_max_gap": round(busy["max_gap_ms"] / idle["max_gap_ms"], 2),
            "ratio_p99_gap": round(busy["p99_gap_ms"] / idle["p99_gap_ms"], 2),
            "ratio_max_own_gap": round(busy["max_own_gap_ms"] / idle["max_own_gap_ms"], 2),
            "ratio_p99_own_gap": round(busy["p99_own_gap_ms"] / idle["p99_own_gap_ms"], 2)}


def main() -> None:
    windows = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    tool = sys.argv[2] if len(sys.argv) > 2 else "convert"
    with tempfile.TemporaryDirectory(prefix="wb-toolwin-", ignore_cleanup_errors=True) as folder:
        # A runtime folder of its own: no hub of the person running this is found or disturbed.
        os.environ["WORKBENCH_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="wb-", dir="/tmp")
        os.environ.setdefault("WORKBENCH_CONFIG_DIR", str(Path(folder) / "config"))
        root, model = digits_project(Path(folder))
        print(json.dumps(measure(root, model, tool, windows)))


if __name__ == "__main__":
    main()
