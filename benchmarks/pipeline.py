"""One pipeline iteration on the digits template against the same steps run by hand with the CLI.

Two fresh digits projects, in temporary folders, both run locally in this run:

- by hand: `workbench dataset version --fraction 0.5`, `workbench train --dataset-version 0000
  --set num_epochs=1 --set stop_at_step=0`, `workbench model convert` of bestmodel_0000.pt,
  `workbench model quantize` of bestmodel_0000.onnx, `workbench registry alias production 0000`,
  each a command of its own, timed end to end and summed;
- pipeline: `workbench pipeline start` with those steps declared (and a gate), timed end to end.

pipeline_ratio is the median pipeline time over the median sum by hand, of ``--rounds`` rounds
(default 3) that take turns, each with fresh projects: one round alone moved between 0.85 and
1.17 on a busy 2-CPU machine. Goal: at most 1.1 (the pipeline starts one process where the hand
runs five, so it is usually below 1).

Run: .venv/bin/python benchmarks/pipeline.py [--rounds 3]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TRAIN = ["--set", "num_epochs=1", "--set", "stop_at_step=0"]
CONVERT = ["--verify-samples", "4"]
QUANTIZE = ["--samples", "200", "--calibration-samples", "32", "--no-layer-report"]
STEPS = """
[[pipeline.steps]]
tool = "dataset"
fraction = 0.5
[[pipeline.steps]]
tool = "train"
epochs = 1
set = ["stop_at_step=0"]
[[pipeline.steps]]
tool = "convert"
verify_samples = 4
[[pipeline.steps]]
tool = "quantize"
samples = 200
calibration_samples = 32
layer_report = false
[[pipeline.steps]]
tool = "gate"
max_size_mb = 10
[[pipeline.steps]]
tool = "deploy"
"""


def _timed(*args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, env=ENV)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"workbench {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return seconds


def by_hand(project: Path) -> dict:
    models = project / "registry" / "models"
    steps = {
        "dataset": _timed("dataset", "version", str(project), "--fraction", "0.5"),
        "train": _timed("train", str(project), "--dataset-version", "0000", *TRAIN),
        "convert": _timed("model", "convert", str(models / "bestmodel_0000.pt"), *CONVERT),
        "quantize": _timed("model", "quantize", str(models / "bestmodel_0000.onnx"), *QUANTIZE),
        "alias": _timed("registry", "alias", "production", "0000", "--project", str(project)),
    }
    return {"steps_s": {k: round(v, 3) for k, v in steps.items()}, "total_s": round(sum(steps.values()), 3)}


def pipeline(project: Path) -> float:
    with open(project / "workbench.toml", "a", encoding="utf-8") as toml:
        toml.write(STEPS)
    return _timed("pipeline", "start", str(project))


def main() -> None:
    import argparse
    import statistics

    from workbench.project import create_from_template

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both, taking turns (default 3)")
    rounds = max(1, parser.parse_args().rounds)
    hands, pipes = [], []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(rounds):
            hands.append(by_hand(create_from_template("digits", Path(folder) / f"hand{index}").root))
            pipes.append(pipeline(create_from_template("digits", Path(folder) / f"piped{index}").root))
    hand_s = statistics.median(hand["total_s"] for hand in hands)
    piped_s = statistics.median(pipes)
    print(json.dumps({"by_hand": hands, "by_hand_median_s": round(hand_s, 3),
                      "pipeline_s": [round(seconds, 3) for seconds in pipes], "pipeline_median_s": round(piped_s, 3),
                      "pipeline_ratio": round(piped_s / hand_s, 3), "goal": 1.1}, indent=2))


if __name__ == "__main__":
    main()
