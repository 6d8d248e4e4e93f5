"""How long a metric takes from the trainer to the Runs panel's curve, printed as one JSON object.

A real run of a small script starts from a real project window (offscreen). Each record the
script writes carries the time it was written; when the panel has put the point on its curve,
the difference is one latency. Three paths are measured:

- metrics_file: the trainer appends JSON lines to metrics.jsonl itself (as workbench_trainkit's
  helpers do); the panel's worker polls the file.
- printed_line: the trainer only prints ``step=N loss=...`` lines; the run's supervisor turns
  them into metrics.jsonl records first.
- printed_keras: the trainer prints as Keras does (an ``Epoch 1/1`` header, then
  ``5/40 [====] - 0s 5ms/step - loss: 0.2 - sent: ...`` lines), read by the same supervisor
  through the table of line formats (workbench/training/log_patterns.py).
- tensorboard: the trainer logs ``add_scalar("Loss/train", ...)`` with torch's SummaryWriter, as
  an unchanged script does (no flush: its writer thread writes each event to the file at once);
  the supervisor finds the event file in the project folder and reads it with tensorboard's
  event reader. Sent is the event's wall time, taken by add_scalar.

Goal: every latency (max, not only the median) within 0.5 s.

Run: python benchmarks/metric_latency.py [records per path]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

GOAL_S = 0.5

WRITER = textwrap.dedent('''\
    import json, os, random, sys, time
    from pathlib import Path

    count, mode = int(sys.argv[1]), sys.argv[2]
    out = open(Path(os.environ["WORKBENCH_RUN_DIR"]) / "metrics.jsonl", "a") if mode == "file" else None
    if mode == "tensorboard":
        from torch.utils.tensorboard import SummaryWriter

        board = SummaryWriter()
    time.sleep(0.5)
    for step in range(1, count + 1):
        time.sleep(random.uniform(0.03, 0.13))  # not in step with the panel's polling
        if mode == "tensorboard":
            board.add_scalar("Loss/train", 1.0 / step, step)
        elif out is not None:
            out.write(json.dumps({"step": step, "time": time.time(), "loss": 1.0 / step}) + "\\n")
            out.flush()
        elif mode == "keras":
            if step == 1:
                print("Epoch 1/1", flush=True)
            print(f"{step}/{count} [==============================] - 0s 5ms/step - loss: {1.0 / step:.6f}"
                  f" - sent: {time.time():.6f}", flush=True)
        else:
            print(f"step={step} loss={1.0 / step:.6f} sent={time.time():.6f}", flush=True)
''')


def make_project(root: Path, count: int) -> Path:
    root.mkdir(parents=True)
    (root / "workbench.toml").write_text(
        '[project]\nname = "latency"\n\n[training]\nscript = "writer.py"\n')
    (root / "writer.py").write_text(WRITER.replace("int(sys.argv[1])", str(count))
                                    .replace("sys.argv[2]", "os.environ.get('LATENCY_MODE', 'file')"))
    return root


def measure(count: int = 40, mode: str = "file", timeout: float = 60.0) -> list[float]:
    """Latencies (seconds) of ``count`` records from a run writing them by ``mode`` ("file",
    "print", "keras" or "tensorboard") to the points on the panel's curve."""
    return [seen - sent for sent, seen in measure_points(count, mode, timeout)]


def measure_points(count: int = 40, mode: str = "file", timeout: float = 60.0) -> list[tuple[float, float]]:
    """``(sent, seen)`` of ``count`` records, in the order they reached the curve: when the
    trainer wrote each, and when the panel had put it on its curve (``time.time()``)."""
    from PySide6.QtWidgets import QApplication

    from workbench.project import load_project
    from workbench.training.widgets import panel_of, session_of
    from workbench.ui.project_window import ProjectWindow

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory(prefix="wb-latency-", ignore_cleanup_errors=True) as folder:
        root = make_project(Path(folder) / "project", count)
        os.environ["LATENCY_MODE"] = mode
        window = ProjectWindow(load_project(root))
        window.resize(1400, 900)
        window.show()
        deadline = time.monotonic() + timeout
        while not (window.capabilities_installed and session_of(window).listed):
            app.processEvents()
            if time.monotonic() > deadline:
                raise TimeoutError("the window did not install its capabilities")
        panel = panel_of(window)
        points: list[tuple[float, float]] = []

        def on_metrics(generation, run_id, records, _restarted) -> None:
            # Connected after the panel's own slot, so the points are on the curve by now.
            now = time.time()
            curves = panel.details.curves
            steps = set(curves.points(run_id, "loss")[0])
            for record in records:
                sent = record.get("time") if mode in ("file", "tensorboard") else record.get("sent")
                if isinstance(sent, float) and float(record.get("step", -1)) in steps:
                    points.append((sent, now))

        panel.poller.sig_metrics_read.connect(on_metrics)
        operation = window.commands.execute("training.trainLocally")
        while len(points) < count:
            app.processEvents()
            time.sleep(0.002)
            if operation.error is not None:
                raise RuntimeError(str(operation.error))
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(points)} of {count} points reached the curve")
        info = operation.result
        session_of(window).service().wait(info.id, timeout=30)
        window.close()
        window.tasks.wait(10_000)
        window.deleteLater()
        app.processEvents()
        return points


def summary(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {"count": len(ordered), "median_s": round(statistics.median(ordered), 4),
            "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 4), "max_s": round(ordered[-1], 4)}


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    figures = {"metrics_file": summary(measure(count, "file")),
               "printed_line": summary(measure(count, "print")),
               "printed_keras": summary(measure(count, "keras")),
               "tensorboard": summary(measure(count, "tensorboard"))}
    figures["goal_s"] = GOAL_S
    figures["within_goal"] = all(f["max_s"] <= GOAL_S for f in figures.values() if isinstance(f, dict))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
