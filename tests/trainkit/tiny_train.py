"""A tiny training script for the tests: a small network with dropout on made-up data.

It uses TrainingSession the way a real script does. Test-only knobs come from the environment:
TINY_STOP_AT (request a stop so the run stops after that step), TINY_STEP_SECONDS (slow each
step down), TINY_WIDTH (hidden units, to make checkpoints big), TINY_EXIT_DIR (each rank
writes its exit status there).
"""

import os
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import TensorDataset
from workbench_trainkit import TrainingSession, build_lr_schedule, build_optimizer, total_steps


def main(argv=None) -> None:
    stop_at = int(os.environ.get("TINY_STOP_AT", "0"))
    step_seconds = float(os.environ.get("TINY_STEP_SECONDS", "0"))
    width = int(os.environ.get("TINY_WIDTH", "16"))
    with TrainingSession.from_args(argv) as session:
        hp = session.hparams
        # The data is fixed by its own generator: the session's seed is for the training.
        inputs = torch.randn(96, 8, generator=torch.Generator().manual_seed(1234))
        labels = (inputs.sum(dim=1) > 0).long()
        loader = session.train_loader(TensorDataset(inputs, labels))
        net = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Dropout(0.3), nn.Linear(width, 2))
        optimizer = build_optimizer(net.parameters(), hp)
        scheduler = build_lr_schedule(optimizer, hp, total_steps(hp, len(loader)))
        net = session.prepare(net, optimizer, scheduler)
        loss_fn = nn.CrossEntropyLoss()
        for epoch in session.epochs():
            net.train()
            for batch_inputs, batch_labels in session.batches(loader):
                if stop_at and session.step + 1 == stop_at:
                    session.stop_flag.request()
                with session.autocast():
                    loss = loss_fn(net(batch_inputs), batch_labels)
                lr = scheduler.get_last_lr()[0]
                session.optimize(loss)
                session.log(loss=loss, lr=lr)
                time.sleep(step_seconds)
            net.eval()
            with torch.no_grad():
                val_loss = loss_fn(session.unwrap(net)(inputs), labels).item()
            session.log_eval(epoch, val_loss=val_loss)
            session.checkpoint()
        session.save_model(net)
        session.print(f"done at step {session.step}")


def record_exit(status: int) -> None:
    exit_dir = os.environ.get("TINY_EXIT_DIR")
    if exit_dir:
        Path(exit_dir, f"rank-{os.environ.get('RANK', '0')}").write_text(str(status))


if __name__ == "__main__":
    status = 1
    try:
        main()
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        raise
    finally:
        record_exit(status)
