"""Runs of a script of the user's own (``[training] parameters = "argparse"``): the overrides
become the script's flags, checked first, and the run records every value it ran with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.training import TrainingError
from workbench.training.run_spec import prepare_run

SCRIPT = '''\
import argparse, json

parser = argparse.ArgumentParser(description="a plain PyTorch-style script")
parser.add_argument("--lr", type=float, default=0.001, help="learning rate")
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
parser.add_argument("--layers", type=int, nargs="+", default=[8, 8])
args = parser.parse_args()
print(json.dumps(vars(args)), flush=True)
for epoch in range(1, args.epochs + 1):
    print(f"Epoch {epoch}/{args.epochs} - loss: {1 / (epoch * args.lr * 1000):.4f}", flush=True)
'''

PROJECT_FILE = '''\
[project]
name = "mine"

[training]
script = "train.py"
parameters = "argparse"
'''


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "mine"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "workbench.toml").write_text(PROJECT_FILE)
    return root


def test_overrides_become_the_scripts_flags_and_the_run_records_every_value(project):
    spec = prepare_run(project, overrides=["lr=0.01", "optimizer=sgd", "shuffle=false", "layers=16,32"])
    command = spec.command("runs/r1")
    assert command[1:] == ["train.py", "--lr", "0.01", "--optimizer", "sgd", "--no-shuffle",
                           "--layers", "16", "32"]
    assert spec.hparams == {"lr": 0.01, "epochs": 3, "optimizer": "sgd", "shuffle": False, "layers": [16, 32]}
    assert spec.explicit == ["lr", "optimizer", "shuffle", "layers"]
    assert not spec.pass_hparams and "lr=0.01" in spec.hparams_text
    plain = prepare_run(project)
    assert plain.command("runs/r2")[1:] == ["train.py"]  # the script's own defaults, as the user runs it
    assert plain.hparams["epochs"] == 3


@pytest.mark.parametrize("override, words", [
    ("lrr=0.1", "train.py has no hyper-parameter 'lrr' (did you mean 'lr'?)"),
    ("epochs=three", "epochs='three': train.py's --epochs takes a whole number"),
    ("optimizer=rmsprop", "optimizer='rmsprop' is not one of sgd, adam"),
    ("lr", "'lr' is not key=value"),
])
def test_a_bad_override_is_refused_before_anything_starts_and_says_what_to_do(project, override, words):
    with pytest.raises(TrainingError) as raised:
        prepare_run(project, overrides=[override])
    assert words in str(raised.value) and str(raised.value).startswith("Not started: ")


def test_a_required_flag_nobody_set_is_named_with_how_to_set_it(project):
    (project / "train.py").write_text(SCRIPT.replace('parser.add_argument("--epochs"',
                                                     'parser.add_argument("--data", required=True)\n'
                                                     'parser.add_argument("--epochs"'))
    with pytest.raises(TrainingError, match=r"train.py needs --data: set it with --set data=VALUE or in the "
                                             r"Train dialog"):
        prepare_run(project)
    assert prepare_run(project, overrides=["data=digits.npz"]).command("r")[-2:] == ["--data", "digits.npz"]


def test_a_hparams_file_is_refused_for_a_script_that_takes_flags(project):
    (project / "other.hparams").write_text("lr=0.1\n")
    with pytest.raises(TrainingError, match="takes its hyper-parameters as argparse arguments"):
        prepare_run(project, hparams_file=project / "other.hparams")


@pytest.mark.slow
def test_workbench_train_runs_the_script_with_the_changed_flag(project):
    done = subprocess.run([sys.executable, "-m", "workbench", "train", str(project), "--set", "lr=0.5",
                           "--set", "epochs=2", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["state"] == "completed"
    assert info["hparams"]["lr"] == 0.5 and info["hparams"]["epochs"] == 2 and info["hparams"]["optimizer"] == "adam"
    printed = json.loads(done.stderr.splitlines()[0])  # the script's own view of its arguments
    assert printed["lr"] == 0.5 and printed["epochs"] == 2 and printed["shuffle"] is True


@pytest.mark.slow
def test_a_hydra_app_gets_its_overrides_in_hydras_own_syntax_and_runs(tmp_path):
    from tests.adopt.scripts import hydra_project

    root = hydra_project(tmp_path / "app")
    (root / "workbench.toml").write_text('[project]\nname = "app"\n\n[training]\nscript = "my_app.py"\n'
                                         'parameters = "hydra"\nconfig = "conf/config.yaml"\n')
    with pytest.raises(TrainingError, match=r"my_app.py needs data.path: set it with --set data.path=VALUE"):
        prepare_run(root)  # "???" in the config: Hydra's mark of a value the user must give
    spec = prepare_run(root, overrides=["optimizer.lr=0.01", "trainer.epochs=2", "data.path=my data/x.npz"])
    assert spec.command("runs/r1")[2:] == ["optimizer.lr=0.01", "trainer.epochs=2", 'data.path="my data/x.npz"']
    assert spec.hparams["optimizer.lr"] == 0.01 and spec.hparams["seed"] == 7
    done = subprocess.run([sys.executable, "-m", "workbench", "train", str(root), "--set", "optimizer.lr=0.01",
                           "--set", "data.path=x.npz", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "completed" and "lr=0.01 epochs=3" in done.stderr


def test_one_line_of_workbench_trainkit_log_gives_a_script_of_ones_own_exact_curves(project):
    from workbench.training import RunService, read_metrics

    (project / "train.py").write_text(SCRIPT + '''
import workbench_trainkit
for step in range(1, 4):
    workbench_trainkit.log(step=step, val_acc=0.25 * step, loss=1.0 / step)
''')
    service = RunService(project)
    done = service.wait(service.start(overrides=["epochs=1"]).id, timeout=60)
    assert done.state == "completed", done.error
    records = [r for r in read_metrics(Path(done.run_dir) / "metrics.jsonl") if "val_acc" in r]
    assert [(r["step"], r["val_acc"], r["loss"]) for r in records] == [(1, 0.25, 1.0), (2, 0.5, 0.5), (3, 0.75, 1 / 3)]
    # Outside a Workbench run it does nothing: the script runs the same in a terminal.
    alone = subprocess.run([sys.executable, "train.py", "--epochs", "1"], cwd=project, capture_output=True, text=True,
                           timeout=60, env={k: v for k, v in __import__("os").environ.items()
                                            if k != "WORKBENCH_RUN_DIR"})
    assert alone.returncode == 0, alone.stderr
    assert not (project / "metrics.jsonl").exists()
