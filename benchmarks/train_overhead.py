"""What training through Workbench costs over running the script by hand, printed as one JSON object.

The digits template, created from the template into a temporary folder, is trained with the same
hyper-parameter file two ways, alternating, N times each:

- workbench: ``workbench train PROJECT --hparams FILE`` (a real subprocess of the CLI, in the
  foreground: it starts the run's supervisor, follows the log and exits when the run has ended);
- plain: ``python train.py --hparams FILE`` in the project folder.

overhead_ratio is median(workbench) / median(plain) of the wall times. Goal: at most 1.03.
Training on a CPU shared with other work varies by much more than 3% from run to run, so
fixed_overhead_s is printed too: the part of a ``workbench train`` that the trainer was not
running (start-up, checks, the supervisor, noticing the end), with fixed_overhead_ratio, what
that alone adds to the plain median.

While each Workbench run trains, its metrics.jsonl is read with a MetricsTail polled every
100 ms, as the Runs panel polls it; metric_latency_s is the time from a record's "time" (when the
trainer wrote it) to its arrival there (p50 and max). stdout_metric_latency_s is the same for a
trainer that only prints ``step=N loss=…`` lines, which the supervisor turns into records.

Each run trains for as many epochs as take about 15 s here (measured first), or --epochs.

Run: python benchmarks/train_overhead.py [--runs 3] [--seconds 15 | --epochs E]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

GOAL = 1.03
MAX_EPOCHS = 200
POLL_S = 0.1


class LatencyProbe(threading.Thread):
    """Polls the metrics of the next run that appears in a project, as the Runs panel does."""

    def __init__(self, runs_dir: Path, stamp: str = "time"):
        super().__init__(daemon=True)
        self.runs_dir, self.stamp = runs_dir, stamp
        self.before = set(os.listdir(runs_dir)) if runs_dir.exists() else set()
        self.latencies: list[float] = []
        self.run_dir: Path | None = None
        self.done = threading.Event()

    def run(self) -> None:
        from workbench.training import MetricsTail

        run_dir = None
        while run_dir is None and not self.done.is_set():
            new = [n for n in (os.listdir(self.runs_dir) if self.runs_dir.exists() else []) if n not in self.before
                   and not n.startswith(".")]
            run_dir = self.runs_dir / new[0] if new else None
            time.sleep(0.01)
        if run_dir is None:
            return
        self.run_dir = run_dir
        tail = MetricsTail(run_dir / "metrics.jsonl")
        while True:
            finished = self.done.is_set()
            now = time.time()
            for record in tail.read_new():
                if isinstance(record.get(self.stamp), (int, float)):
                    self.latencies.append(now - record[self.stamp])
            if finished:
                return
            time.sleep(POLL_S)


def summary(latencies: list[float]) -> dict:
    if not latencies:
        return {"p50": None, "max": None, "count": 0}
    return {"p50": round(statistics.median(latencies), 3), "max": round(max(latencies), 3),
            "count": len(latencies)}


def make_digits(folder: Path, epochs: int) -> tuple[Path, Path]:
    from workbench.project import create_from_template

    project = create_from_template("digits", folder / "digits").root
    source = project / "hparams" / "digits.hparams"
    hparams = project / "hparams" / "bench.hparams"  # inside the project: its own keys are declared there
    text = source.read_text(encoding="utf-8")
    text, count = re.subn(r"(?m)^num_epochs=.*$", f"num_epochs={epochs}", text)
    if count == 0:
        text += f"\nnum_epochs={epochs}\n"
    hparams.write_text(text, encoding="utf-8")
    return project, hparams


def time_workbench(project: Path, hparams: Path, env: dict) -> tuple[float, float, list[float]]:
    """Wall time of ``workbench train``, the part of it the trainer itself was not running, and
    the metric latencies seen meanwhile."""
    probe = LatencyProbe(project / "runs")
    probe.start()
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "workbench", "train", str(project), "--hparams", str(hparams)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - started
    probe.done.set()
    probe.join()
    if result.returncode != 0:
        raise SystemExit(f"workbench train failed: {result.stderr[-2000:]}")
    info = json.loads((probe.run_dir / "run.json").read_text())
    return elapsed, elapsed - (info["ended_at"] - info["started_at"]), probe.latencies


def time_plain(project: Path, hparams: Path, env: dict) -> float:
    shutil.rmtree(project / "outputs", ignore_errors=True)  # no earlier run's files to find
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "train.py", "--hparams", str(hparams)], cwd=project,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"python train.py failed: {result.stderr[-2000:]}")
    return elapsed


PRINTER = textwrap.dedent('''\
    import random, time
    for step in range(1, 41):
        time.sleep(random.uniform(0.03, 0.13))  # out of step with the 100 ms polling
        print(f"step={step} loss={1.0 / step:.6f} sent={time.time():.6f}")
''')


def stdout_latency(folder: Path) -> list[float]:
    """Latencies of a trainer that only prints metric lines, started through the service."""
    from workbench.training import RunService

    project = folder / "printer"
    project.mkdir()
    (project / "workbench.toml").write_text('[project]\nname = "printer"\n\n[training]\nscript = "printer.py"\n')
    (project / "printer.py").write_text(PRINTER)
    probe = LatencyProbe(project / "runs", stamp="sent")
    probe.start()
    service = RunService(project)
    info = service.wait(service.start().id, timeout=120)
    probe.done.set()
    probe.join()
    if info.state != "completed":
        raise SystemExit(f"the printing trainer {info.state}: {info.error}")
    return probe.latencies


def calibrate(folder: Path, env: dict, seconds: float) -> int:
    """The number of epochs a plain run needs to take about ``seconds`` on this machine, from a
    2-epoch and a 20-epoch run (after one that brings torch and the dataset into the page cache).
    Start-up (importing torch) is most of a short run, so the two must be far apart."""
    _, short_file = make_digits(folder / "short", 2)
    _, long_file = make_digits(folder / "long", 20)
    time_plain(folder / "short" / "digits", short_file, env)
    short = time_plain(folder / "short" / "digits", short_file, env)
    long = time_plain(folder / "long" / "digits", long_file, env)
    per_epoch = max((long - short) / 18, 0.01)
    startup = max(short - 2 * per_epoch, 0.0)
    return max(1, min(MAX_EPOCHS, round((seconds - startup) / per_epoch)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (default 3)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs per run (default: as many as take about --seconds here)")
    parser.add_argument("--seconds", type=float, default=15.0, help="how long a run should take (default 15)")
    args = parser.parse_args()

    from workbench.training.run_spec import trainkit_root

    env = dict(os.environ)
    # One compute thread on both sides: with torch's default of one per core, a run on a busy
    # 2-core machine swings by several times, which drowns the overhead being measured.
    env.setdefault("OMP_NUM_THREADS", "1")
    # The plain script imports the training helpers the way the Workbench run does.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(trainkit_root()), env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory(prefix="wb-train-overhead-") as scratch:
        folder = Path(scratch)
        epochs = args.epochs or calibrate(folder, env, args.seconds)
        project, hparams = make_digits(folder, epochs)

        workbench_s, plain_s, fixed_s, latencies = [], [], [], []
        for index in range(args.runs):
            # Alternate which goes first, so a slow spell of the machine does not hit one side only.
            order = ("workbench", "plain") if index % 2 == 0 else ("plain", "workbench")
            for kind in order:
                if kind == "workbench":
                    elapsed, fixed, seen = time_workbench(project, hparams, env)
                    workbench_s.append(elapsed)
                    fixed_s.append(fixed)
                    latencies += seen
                else:
                    plain_s.append(time_plain(project, hparams, env))
        printed = stdout_latency(folder)

    ratio = statistics.median(workbench_s) / statistics.median(plain_s)
    print(json.dumps({
        "overhead_ratio": round(ratio, 4),
        "goal": GOAL,
        "median_workbench_s": round(statistics.median(workbench_s), 3),
        "median_plain_s": round(statistics.median(plain_s), 3),
        "workbench_s": [round(t, 3) for t in workbench_s],
        "plain_s": [round(t, 3) for t in plain_s],
        # What Workbench adds around the trainer's own life (CLI, checks, supervisor, noticing
        # the end), and the ratio it alone would give: steadier than the wall times on a busy machine.
        "fixed_overhead_s": round(statistics.median(fixed_s), 3),
        "fixed_overhead_ratio": round((statistics.median(plain_s) + statistics.median(fixed_s))
                                      / statistics.median(plain_s), 4),
        "epochs": epochs,
        "runs": args.runs,
        "metric_latency_s": summary(latencies),
        "stdout_metric_latency_s": summary(printed),
    }))


if __name__ == "__main__":
    random.seed(0)
    main()
