"""Memory of Workbench's processes at rest, as ratios to a bare PySide6 window measured in this run.

Prints one JSON object. Each process is started fresh, shown offscreen, left to settle (its RSS
still for a second), then read with psutil: RSS, and USS and PSS where the system tells them
(``*_mb`` figures are medians over the runs, in MB).

- bare_window_mb: a process that shows an empty QMainWindow (1200×780), the baseline.
- hub_mb: the hub with its welcome window (no spare window).
- project_window_mb: a project window on the digits project, once its capabilities are
  installed and it has settled (the process alone; ``project_window_children_mb`` is what it
  started, a language server or a kernel, if any).
- tool_window_mb: an Inspect tool window on the digits ONNX model after its job ended
  (``quantize_window_mb``: a Quantize tool window on the same model, after its job ended).
- tool_window_rss_ratio: tool_window RSS over bare_window RSS. Goal ≤ 2.5: no torch,
  onnxruntime or onnx in a window process, and the job process that used them gone once the
  job has ended.
- project_window_rss_ratio: project_window RSS over bare_window RSS (reported; no goal yet).
- hub_rss_ratio: hub RSS over bare_window RSS (reported).
- tool_window_heavy_modules / job_processes_left: what the tool windows had loaded of the heavy
  modules (workbench.app.heavy_modules) and how many of their job processes were still alive
  after the job ended (both should be empty / 0).

Run: .venv/bin/python benchmarks/memory.py [--runs N]      (default 3)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

MB = 1024 * 1024

BARE_WINDOW = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow
    app = QApplication(sys.argv)
    window = QMainWindow()
    class Watch(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint:
                obj.removeEventFilter(self)
                QTimer.singleShot(0, lambda: print("painted", flush=True))
            return False
    watch = Watch()
    window.installEventFilter(watch)
    window.resize(1200, 780)
    window.show()
    app.exec()
""")

MAKE_ONNX = """
import sys, torch
from workbench.modeltools.project_code import ProjectCode
code = ProjectCode(sys.argv[1])
torch.manual_seed(0)
model = code.build_model("digits_net", code.hparams())
torch.save(model.state_dict(), sys.argv[2])
"""


def digits_project(folder: Path) -> tuple[Path, Path]:
    """A digits project with an (untrained) model.pt and its model.onnx in a run's outputs, both
    made in child processes so that torch never loads here."""
    from workbench.project import create_from_template

    root = create_from_template("digits", folder / "digits").root
    run = root / "runs" / "20260101-090000-digits"
    (run / "outputs").mkdir(parents=True)
    (run / "digits.hparams").write_text((root / "hparams" / "digits.hparams").read_text())
    weights = run / "outputs" / "model.pt"
    subprocess.run([sys.executable, "-c", MAKE_ONNX, str(root), str(weights)], check=True, timeout=180)
    onnx = weights.with_suffix(".onnx")
    subprocess.run([sys.executable, "-m", "workbench", "model", "convert", str(weights), "-o", str(onnx),
                    "--no-simplify", "--verify-samples", "0", "--exporter", "torchscript"],
                   cwd=root, check=True, timeout=300, stdout=subprocess.DEVNULL)
    return root, onnx


def memory_of(pid: int) -> dict:
    """RSS, USS and PSS of ``pid`` in MB (USS and PSS only where the system tells them)."""
    process = psutil.Process(pid)
    try:
        info = process.memory_full_info()
    except (psutil.AccessDenied, AttributeError):
        info = process.memory_info()
    return {name: round(getattr(info, name) / MB, 1) for name in ("rss", "uss", "pss") if hasattr(info, name)}


def settled_memory(pid: int, timeout: float = 20.0) -> dict:
    """``memory_of(pid)`` once its RSS has stayed within 1 % for a second (or after ``timeout``)."""
    deadline = time.monotonic() + timeout
    last = psutil.Process(pid).memory_info().rss
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        rss = psutil.Process(pid).memory_info().rss
        if abs(rss - last) > 0.01 * last:
            last, still_since = rss, time.monotonic()
        elif time.monotonic() - still_since >= 1.0:
            break
    return memory_of(pid)


def children_memory(pid: int) -> dict:
    """Summed RSS (MB) and count of the live descendants of ``pid``."""
    children = [c for c in psutil.Process(pid).children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]
    return {"count": len(children), "rss": round(sum(c.memory_info().rss for c in children) / MB, 1)}


def wait_until(condition, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # the hub or window is still starting
            value = None
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"{what} did not happen within {timeout:g} s")


class Session:
    """A private runtime and config folder, and the processes started in it."""

    def __init__(self, base: Path):
        self.runtime = Path(tempfile.mkdtemp(prefix="wb-mem-", dir="/tmp"))
        self.env = {**os.environ, "WORKBENCH_RUNTIME_DIR": str(self.runtime),
                    "WORKBENCH_CONFIG_DIR": str(base / "config"), "WORKBENCH_NO_SPARE": "1",
                    "QT_QPA_PLATFORM": "offscreen"}
        os.environ["WORKBENCH_RUNTIME_DIR"] = str(self.runtime)
        os.environ["WORKBENCH_CONFIG_DIR"] = str(base / "config")

    def call(self, method: str, params: dict | None = None, timeout: float = 10.0):
        from workbench.ipc.client import HubClient

        with HubClient.connect(timeout=5.0) as hub:
            return hub.call(method, params or {}, timeout=timeout)

    def describe(self, window_id: str) -> dict:
        return self.call("hub.describe_window", {"window_id": window_id})

    def close(self) -> None:
        needle = f"WORKBENCH_RUNTIME_DIR={self.runtime}".encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if needle in (entry / "environ").read_bytes().split(b"\0"):
                        os.kill(int(entry.name), signal.SIGKILL)
                except (OSError, ProcessLookupError):
                    pass
        time.sleep(0.2)
        shutil.rmtree(self.runtime, ignore_errors=True)


def bare_window() -> dict:
    process = subprocess.Popen([sys.executable, "-c", BARE_WINDOW], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    try:
        process.stdout.readline()
        return settled_memory(process.pid)
    finally:
        process.kill()
        process.wait()


def workbench_processes(base: Path, root: Path, onnx: Path) -> dict:
    """The hub, a project window and two tool windows after their jobs ended, each measured."""
    session = Session(base)
    hub = subprocess.Popen([sys.executable, "-m", "workbench.app.hub_process"], env=session.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: session.call("hub.list_windows", {}) is not None, 30, "the hub to answer")
        figures: dict = {"hub": settled_memory(hub.pid)}

        session.call("hub.open_project", {"path": str(root)})
        project = wait_until(lambda: next((w for w in session.call("hub.list_windows", {})["windows"]
                                           if w["kind"] == "project" and w["state"] == "ready"), None),
                             60, "the project window to register")
        wait_until(lambda: session.describe(project["window_id"])["heavy_modules_at_start"] is not None, 60,
                   "the project window to install its capabilities")
        time.sleep(2.0)  # what the capabilities start after the first paint (git status, the runs list)
        figures["project_window"] = settled_memory(project["pid"])
        figures["project_window_children"] = children_memory(project["pid"])
        figures["project_window_heavy_modules"] = session.describe(project["window_id"])["heavy_modules_loaded"]

        tools = [("tool_window", "inspect", {"model": str(onnx)}),
                 ("quantize_window", "quantize", {"model": str(onnx), "mode": "dynamic",
                                                  "output": str(onnx.with_name("model.dynamic-int8.onnx"))})]
        heavy: set[str] = set()
        jobs_left = 0
        for name, tool, values in tools:
            opened = session.call("hub.open_tool", {"tool": tool, "values": values, "project": str(root),
                                                    "run": True})
            window_id = opened["window_id"]
            described = wait_until(lambda: (lambda d: d if d["state"] in ("succeeded", "failed", "cancelled")
                                            else None)(session.describe(window_id)), 300,
                                   f"the {tool} job to end")
            if described["state"] != "succeeded":
                raise RuntimeError(f"the {tool} job {described['state']}: {described.get('log')}")
            time.sleep(0.5)  # the job's process is reaped just before the window hears it ended
            jobs_left += children_memory(opened["pid"])["count"]
            figures[name] = settled_memory(opened["pid"])
            heavy |= set(session.describe(window_id)["heavy_modules_loaded"])
        figures["tool_window_heavy_modules"] = sorted(heavy)
        figures["job_processes_left"] = jobs_left
        return figures
    finally:
        session.close()


def _compile_package() -> None:
    """Measure what an installed app does: with the package's bytecode already on disk."""
    import compileall

    import workbench

    compileall.compile_dir(Path(workbench.__file__).parent, quiet=1)


def _median(samples: list[dict], key: str) -> float:
    return round(statistics.median(sample[key] for sample in samples), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    _compile_package()
    base = Path(tempfile.mkdtemp(prefix="wb-membench-"))
    try:
        root, onnx = digits_project(base)
        bare, runs = [], []
        for _ in range(args.runs):  # interleaved, so drift in the machine hits both alike
            bare.append(bare_window())
            runs.append(workbench_processes(base, root, onnx))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    result: dict = {}
    bare_rss = _median(bare, "rss")
    result["bare_window_mb"] = {key: _median(bare, key) for key in bare[0]}
    for name in ("hub", "project_window", "tool_window", "quantize_window"):
        result[f"{name}_mb"] = {key: _median([run[name] for run in runs], key) for key in runs[0][name]}
    result["project_window_children_mb"] = _median([run["project_window_children"] for run in runs], "rss")
    result["tool_window_rss_ratio"] = round(result["tool_window_mb"]["rss"] / bare_rss, 3)
    result["quantize_window_rss_ratio"] = round(result["quantize_window_mb"]["rss"] / bare_rss, 3)
    result["project_window_rss_ratio"] = round(result["project_window_mb"]["rss"] / bare_rss, 3)
    result["hub_rss_ratio"] = round(result["hub_mb"]["rss"] / bare_rss, 3)
    result["project_window_heavy_modules"] = sorted({m for run in runs for m in run["project_window_heavy_modules"]})
    result["tool_window_heavy_modules"] = sorted({m for run in runs for m in run["tool_window_heavy_modules"]})
    result["job_processes_left"] = max(run["job_processes_left"] for run in runs)
    result["runs"] = args.runs
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
