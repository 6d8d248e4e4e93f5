"""Train DigitsNet on the digits dataset.

    python train.py                                   # uses hparams/digits.hparams
    python train.py --set num_epochs=10 --set optimizer=momentum
    python train.py --hparams my.hparams --output-dir runs/try-1

Prints "step=N loss=L acc=A" while training and "epoch=E val_loss=L val_acc=A" after each
epoch, saves checkpoint.pt after every epoch and model.pt (the trained weights) at the end.
"""

import argparse
import random
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from data import make_loaders
from hparams_file import apply_overrides, read_hparams
from model import DigitsNet, count_parameters

HERE = Path(__file__).resolve().parent

# Every key train.py reads, with the value used when the hparams file leaves it out.
DEFAULTS = {
    "dataset_name": "digits",
    "num_epochs": 5,
    "batch_size": 32,
    "learning_rate": 0.002,
    "optimizer": "adam",
    "momentum": 0.9,
    "weight_decay": 0.0001,
    "log_loss_every_n_iters": 10,
    "seed": 0,
    "model_dir": "outputs/digits",
}

KIND_NAMES = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Train DigitsNet on scikit-learn's digits.")
    parser.add_argument("--hparams", type=Path, default=HERE / "hparams" / "digits.hparams",
                        help="hyper-parameter file, one key=value a line")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one hyper-parameter (repeatable)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where to write checkpoints and model.pt (default: model_dir)")
    return parser.parse_args(argv)


def load_settings(args: argparse.Namespace) -> dict:
    """DEFAULTS, then the hparams file, then --set; checked against the types of DEFAULTS."""
    hparams = apply_overrides({**DEFAULTS, **read_hparams(args.hparams)}, args.overrides)
    for key, value in hparams.items():
        if key not in DEFAULTS:
            print(f"warning: unknown hyper-parameter {key!r} is ignored", file=sys.stderr)
            continue
        expected = type(DEFAULTS[key])
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            hparams[key] = float(value)  # "learning_rate=1" means 1.0
        elif type(value) is not expected:
            raise SystemExit(f"error: {key} must be {KIND_NAMES[expected]}, got {value!r}")
    if hparams["optimizer"] not in ("adam", "sgd", "momentum"):
        raise SystemExit(f"error: optimizer must be adam, sgd or momentum, "
                         f"got {hparams['optimizer']!r}")
    return hparams


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_optimizer(name: str, model: nn.Module, hp: dict) -> torch.optim.Optimizer:
    params, lr, decay = model.parameters(), hp["learning_rate"], hp["weight_decay"]
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=decay)
    momentum = hp["momentum"] if name == "momentum" else 0.0
    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=decay)


@torch.no_grad()
def evaluate(model: nn.Module, loader, loss_fn, device) -> tuple[float, float]:
    """Mean loss and accuracy of ``model`` over every batch of ``loader``."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        total_loss += loss_fn(logits, labels).item() * len(labels)
        correct += (logits.argmax(dim=1) == labels).sum().item()
        seen += len(labels)
    return total_loss / seen, correct / seen


def main(argv=None) -> None:
    args = parse_args(argv)
    hp = load_settings(args)
    output_dir = args.output_dir or Path(hp["model_dir"])
    output_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(hp["seed"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    loaders = make_loaders(hp["batch_size"], hp["seed"], hp["dataset_name"])
    model = DigitsNet().to(device)
    optimizer = make_optimizer(hp["optimizer"], model, hp)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training DigitsNet ({count_parameters(model):,} parameters) on "
          f"{len(loaders.train.dataset)} images, device={device}", flush=True)

    step, window_loss, window_correct, window_seen = 0, 0.0, 0, 0
    for epoch in range(1, hp["num_epochs"] + 1):
        model.train()
        for images, labels in loaders.train:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            loss = loss_fn(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            step += 1
            window_loss += loss.item() * len(labels)
            window_correct += (logits.argmax(dim=1) == labels).sum().item()
            window_seen += len(labels)
            if step % hp["log_loss_every_n_iters"] == 0:
                # Averaged over the steps since the last line, so one odd batch does not show.
                print(f"step={step} loss={window_loss / window_seen:.4f} "
                      f"acc={window_correct / window_seen:.4f}", flush=True)
                window_loss, window_correct, window_seen = 0.0, 0, 0

        val_loss, val_acc = evaluate(model, loaders.val, loss_fn, device)
        print(f"epoch={epoch} val_loss={val_loss:.4f} val_acc={val_acc:.4f}", flush=True)
        torch.save({"epoch": epoch, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "hparams": hp},
                   output_dir / "checkpoint.pt")

    test_loss, test_acc = evaluate(model, loaders.test, loss_fn, device)
    print(f"test_loss={test_loss:.4f} test_acc={test_acc:.4f}", flush=True)
    # Just the weights: load them with DigitsNet().load_state_dict(torch.load("model.pt")).
    torch.save(model.state_dict(), output_dir / "model.pt")
    print(f"saved {output_dir / 'model.pt'}", flush=True)


if __name__ == "__main__":
    main()
