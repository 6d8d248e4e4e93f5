"""Real training scripts, in the shapes found in public repositories, written into test folders."""

from __future__ import annotations

import textwrap
from pathlib import Path

PLAIN_ARGPARSE = '''
import argparse

def add_model_args(p):
    p.add_argument("--hidden", type=int, default=128, help="hidden units")

def main():
    parser = argparse.ArgumentParser(description="A small PyTorch-style trainer")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--data", required=True, help="the data folder")
    parser.add_argument("--amp", action="store_true", help="mixed precision")
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    group = parser.add_argument_group("schedule")
    group.add_argument("--milestones", nargs="+", type=int, default=[30, 60])
    add_model_args(parser)
    args = parser.parse_args()
    for epoch in range(1, args.epochs + 1):
        print(f"Epoch {epoch}/{args.epochs} - loss: 0.6931")

if __name__ == "__main__":
    main()
'''

MODULE_LEVEL_PARSER = '''
from argparse import ArgumentParser
parser = ArgumentParser()
parser.add_argument("-b", "--batch-size", default=64, type=int, help="input batch size")
parser.add_argument("--seed", type=int, default=1, metavar="S")
parser.add_argument("data_dir", help="where the images are")
if __name__ == "__main__":
    args = parser.parse_args()
'''

# Flags made in a loop: the code does not say them, --help does.
DYNAMIC_FLAGS = '''
import argparse
DEFAULTS = {"lr": 0.01, "momentum": 0.9, "epochs": 5}

def main():
    parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for name, value in DEFAULTS.items():
        parser.add_argument(f"--{name}", type=type(value), default=value, help=f"the {name}")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--verbose", action="store_true")
    parser.parse_args()

if __name__ == "__main__":
    main()
'''

HANGING_HELP = '''
import argparse, time
time.sleep(60)
parser = argparse.ArgumentParser()
for name in ("a", "b"):
    parser.add_argument("--" + name)
if __name__ == "__main__":
    parser.parse_args()
'''

MISSING_MODULE = '''
import argparse
import a_module_nobody_installed
parser = argparse.ArgumentParser()
for name in ("a", "b"):
    parser.add_argument("--" + name)
if __name__ == "__main__":
    parser.parse_args()
'''

HYDRA_APP = '''
import hydra
from omegaconf import DictConfig

@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    print(f"lr={cfg.optimizer.lr} epochs={cfg.trainer.epochs}")

if __name__ == "__main__":
    main()
'''

HYDRA_CONFIG = '''
defaults:
  - optimizer: adam
  - _self_
trainer:
  epochs: 3
  precision: 32
data:
  path: ???
  batch_size: 64
seed: 7
'''

HYDRA_OPTIMIZER = '''
name: adam
lr: 0.001
betas: [0.9, 0.999]
'''


def write(folder: Path, relative: str, text: str) -> Path:
    path = Path(folder) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def hydra_project(folder: Path) -> Path:
    write(folder, "my_app.py", HYDRA_APP)
    write(folder, "conf/config.yaml", HYDRA_CONFIG)
    write(folder, "conf/optimizer/adam.yaml", HYDRA_OPTIMIZER)
    return folder
