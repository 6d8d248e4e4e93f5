"""A trainer without torch, for run tests: prints ``step=N loss=… acc=…`` lines, checkpoints
every few steps and on SIGTERM (as the training helpers do), resumes from
WORKBENCH_RESUME_FROM, and can fail, ignore SIGTERM, start a grandchild, write metrics.jsonl
itself or take a while to start. Its behaviour comes from its hyper-parameter file."""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def read_hparams(path):
    values = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def save_checkpoint(run_dir, step):
    folder = run_dir / "checkpoints"
    folder.mkdir(exist_ok=True)
    name = f"step-{step:08d}.pt"
    for target, text in ((folder / name, json.dumps({"step": step})),
                         (folder / "latest.json", json.dumps({"file": name, "step": step, "epoch": 1,
                                                              "time": time.time()}))):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, target)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hparams", required=True)
    args = parser.parse_args()
    hp = read_hparams(args.hparams)
    steps = int(hp.get("stop_at_step", 20))
    delay = float(hp.get("step_seconds", 0.02))
    fail_at = int(hp.get("fail_at_step", 0))
    run_dir = Path(os.environ.get("WORKBENCH_RUN_DIR", "."))
    rank = os.environ.get("RANK", "0")  # under torchrun only rank 0 reports and checkpoints
    print(f"run id {os.environ.get('WORKBENCH_RUN_ID')} unbuffered={os.environ.get('PYTHONUNBUFFERED')} "
          f"rank {rank} of {os.environ.get('WORLD_SIZE', '1')}")
    report = print if rank == "0" else (lambda *args: None)
    checkpoint = save_checkpoint if rank == "0" else (lambda *args: None)

    # A script still importing its libraries has no SIGTERM handler yet.
    time.sleep(float(hp.get("startup_seconds", 0)))
    stop = []
    if hp.get("ignore_sigterm") == "true":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    if hp.get("spawn_child") == "true":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"grandchild pid {child.pid}")
    metrics = None
    if hp.get("write_metrics_file") == "true":
        metrics = open(run_dir / "metrics.jsonl", "a")

    start = 0
    resume = os.environ.get("WORKBENCH_RESUME_FROM")
    if resume:
        start = json.loads(Path(resume).read_text())["step"]
        report(f"resumed from step {start}")
    for step in range(start + 1, steps + 1):
        time.sleep(delay)
        if step == fail_at:
            if hp.get("fail_message"):  # as a message cut short by a full disk: no newline
                sys.stderr.write(hp["fail_message"])
                sys.stderr.flush()
                sys.exit(2)
            raise ValueError(f"boom at step {step}")
        loss, acc = 1.0 / step, step / steps
        report(f"step={step} loss={loss:.4f} acc={acc:.3f}")
        if metrics is not None:
            metrics.write(json.dumps({"step": step, "time": time.time(), "loss": loss, "acc": acc}) + "\n")
            metrics.flush()
        if step % 5 == 0:
            checkpoint(run_dir, step)
        if stop:
            checkpoint(run_dir, step)
            report(f"stopped at step {step}")
            return
    report("epoch=1 val_loss=0.25 val_acc=0.9")
    (run_dir / "outputs").mkdir(exist_ok=True)
    (run_dir / "outputs" / "model.pt").write_text("weights")


if __name__ == "__main__":
    main()
