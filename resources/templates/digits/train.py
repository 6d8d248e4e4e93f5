"""Train DigitsNet on the digits dataset.

    python train.py                                  # the hparams file workbench.toml names
    python train.py --set num_epochs=10 --set optimizer=momentum
    python train.py --hparams my.hparams --output-dir outputs/try-1
    python train.py --resume outputs/digits          # go on from the last checkpoint
    python train.py --set task_type=finetune --set ckpt_file_name=outputs/digits/outputs/model.pt
    torchrun --standalone --nproc_per_node=2 train.py

Prints "step=N loss=L acc=A lr=R" while training, "epoch=E val_loss=L val_acc=A" after each
epoch and "test_loss=L test_acc=A" at the end. Saves a checkpoint after every epoch (and when
stopped with SIGTERM or Ctrl-C), outputs/best.pt whenever val_acc is the best yet, and
outputs/model.pt, the trained weights, at the end. On a dataset version (Workbench sets
WORKBENCH_DATASET_MANIFEST) it trains on that version's images only.
workbench_trainkit does the chores: hyper-parameters, folders, metrics, checkpoints, torchrun.
"""

import torch
from torch import nn
from workbench_trainkit import (TrainingSession, active_dataset_version, build_lr_schedule,
                                build_optimizer, datasets, models, total_steps)

import data  # noqa: F401  registers the dataset "digits"
import model  # noqa: F401  registers the model "digits_net"
from model import count_parameters


@torch.no_grad()
def evaluate(net: nn.Module, loader, loss_fn, session) -> tuple[float, float]:
    """Mean loss and accuracy of ``net`` over every batch of ``loader``."""
    net.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        images, labels = images.to(session.device), labels.to(session.device)
        with session.autocast():
            logits = net(images)
        total_loss += loss_fn(logits.float(), labels).item() * len(labels)
        correct += (logits.argmax(dim=1) == labels).sum().item()
        seen += len(labels)
    return total_loss / seen, correct / seen


def main() -> None:
    description = "Train DigitsNet on scikit-learn's digits."
    with TrainingSession.from_args(description=description) as session:
        hp = session.hparams
        splits = datasets.get(hp.dataset_name)(hp)
        # Under torchrun each process trains on its own share of the training set.
        train_loader = session.train_loader(splits.train)
        val_loader = session.eval_loader(splits.val)
        test_loader = session.eval_loader(splits.test)

        net = models.get(hp.model_name)(hp)
        optimizer = build_optimizer(net.parameters(), hp)
        scheduler = build_lr_schedule(optimizer, hp, total_steps(hp, len(train_loader)))
        net = session.prepare(net, optimizer, scheduler)  # device, resume, torchrun
        loss_fn = nn.CrossEntropyLoss()
        version = active_dataset_version()
        on_version = f" of dataset version {version.number}" if version else ""
        session.print(f"training {hp.model_name} ({count_parameters(net):,} parameters) on "
                      f"{len(splits.train)} images{on_version}, device={session.device}, "
                      f"processes={session.world_size}; writing to {session.run_dir}")

        for epoch in session.epochs():
            net.train()
            # On a stop request (SIGTERM, Ctrl-C) this checkpoints and exits between two steps.
            for images, labels in session.batches(train_loader):
                images, labels = images.to(session.device), labels.to(session.device)
                with session.autocast():
                    logits = net(images)
                    loss = loss_fn(logits, labels)
                lr = scheduler.get_last_lr()[0]  # the rate this step uses
                session.optimize(loss)  # backward, clip, step, schedule
                accuracy = (logits.argmax(dim=1) == labels).float().mean()
                session.log(loss=loss, acc=accuracy, lr=lr)

            # Evaluated without the torchrun wrapper, so ranks need not wait for each other.
            val_loss, val_acc = evaluate(session.unwrap(net), val_loader, loss_fn, session)
            session.log_eval(epoch, val_loss=val_loss, val_acc=val_acc)
            session.checkpoint()

        test_loss, test_acc = evaluate(session.unwrap(net), test_loader, loss_fn, session)
        session.log_eval(test_loss=test_loss, test_acc=test_acc)
        # Just the weights: load them with DigitsNet().load_state_dict(torch.load(path)).
        session.print(f"saved {session.save_model(net)}")


if __name__ == "__main__":
    main()
