"""Fine-tuning from earlier weights, and the best model a run keeps by its chosen metric."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch
from torch import nn

from workbench_trainkit import TrainingSession, TrainkitError
from workbench_trainkit.hparams import load_hparams

ENVIRONMENT = ("WORKBENCH_BEST_METRIC", "WORKBENCH_RUN_DIR", "WORKBENCH_RESUME_FROM")


@pytest.fixture(autouse=True)
def no_run_environment(monkeypatch):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def hparams(tmp_path, *overrides: str):
    return load_hparams(None, list(overrides), project_dir=tmp_path)


@contextlib.contextmanager
def started(hp, run_dir, **options):
    session = TrainingSession(hp, run_dir, **options)
    session.start()
    try:
        yield session
    finally:
        session.finish(completed=False)


def net(width: int = 16) -> nn.Module:
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 2))


def same_weights(model: nn.Module, state: dict) -> bool:
    mine = model.state_dict()
    return mine.keys() == state.keys() and all(torch.equal(mine[k], state[k]) for k in state)


def trained_weights(tmp_path) -> dict:
    torch.manual_seed(99)
    state = net().state_dict()
    torch.save(state, tmp_path / "model.pt")
    return state


# --- fine-tuning ------------------------------------------------------------------------

def test_finetune_starts_from_the_weights_file_relative_to_the_project(tmp_path, capsys):
    saved = trained_weights(tmp_path)
    hp = hparams(tmp_path, "task_type=finetune", "ckpt_file_name=model.pt")
    with started(hp, tmp_path / "run", project_dir=tmp_path) as session:
        model = net()
        assert not same_weights(model, saved)
        model = session.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
        assert same_weights(model, saved)
    assert f"fine-tuning from {tmp_path / 'model.pt'}" in capsys.readouterr().out


def test_finetune_from_a_checkpoint_takes_only_its_model(tmp_path):
    hp = hparams(tmp_path)
    with started(hp, tmp_path / "first") as session:
        model = net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model = session.prepare(model, optimizer)
        session.step, session.epoch = 40, 2
        session.checkpoint()
        saved = {k: v.clone() for k, v in model.state_dict().items()}

    for ckpt in ("first", "first/checkpoints/step-00000040.pt"):
        hp = hparams(tmp_path, "task_type=finetune", f"ckpt_file_name={ckpt}")
        with started(hp, tmp_path / "second", project_dir=tmp_path) as session:
            model = session.prepare(net(), None)
            assert same_weights(model, saved)
            assert (session.step, session.epoch) == (0, 0)


def test_a_resumed_finetuning_run_restores_its_checkpoint_not_the_weights_file(tmp_path):
    trained_weights(tmp_path)
    hp = hparams(tmp_path, "task_type=finetune", "ckpt_file_name=model.pt")
    with started(hp, tmp_path / "run", project_dir=tmp_path) as session:
        model = session.prepare(net())
        with torch.no_grad():
            model[0].weight.add_(1.0)
        session.step = 5
        session.checkpoint()
        at_checkpoint = {k: v.clone() for k, v in model.state_dict().items()}
    with started(hp, tmp_path / "run", project_dir=tmp_path,
                 resume_from=tmp_path / "run") as session:
        model = session.prepare(net())
        assert same_weights(model, at_checkpoint) and session.step == 5


@pytest.mark.parametrize("make, words", [
    (lambda folder: None, "does not exist"),
    (lambda folder: (folder / "model.pt").write_text("not weights"), "is not a file of PyTorch"),
    (lambda folder: torch.save([1, 2], folder / "model.pt"), "holds no model weights"),
    (lambda folder: torch.save(net(width=5).state_dict(), folder / "model.pt"),
     "the shapes of 0.weight (weights [5, 8], model [16, 8]), 0.bias (weights [5], model [16]), "
     "2.weight (weights [2, 5], model [2, 16]) differ"),
    (lambda folder: torch.save({"1.weight": torch.zeros(1)}, folder / "model.pt"),
     "they lack 0.weight, 0.bias, 2.weight and 1 more and have 1.weight"),
])
def test_finetune_from_weights_that_cannot_fit_says_what_to_do(tmp_path, make, words):
    make(tmp_path)
    hp = hparams(tmp_path, "task_type=finetune", "ckpt_file_name=model.pt")
    with started(hp, tmp_path / "run", project_dir=tmp_path) as session:
        with pytest.raises(TrainkitError) as caught:
            session.prepare(net())
    message = str(caught.value)
    assert words in message, message
    assert "task_type=pretrain" in message


def test_finetune_without_a_weights_file_is_refused_at_start(tmp_path):
    session = TrainingSession(hparams(tmp_path, "task_type=finetune"), tmp_path / "run")
    try:
        with pytest.raises(TrainkitError, match="task_type is finetune but ckpt_file_name is"):
            session.start()
    finally:
        session.finish(completed=False)


# --- the best model ---------------------------------------------------------------------

def evaluate_epochs(session, model, values: list[dict]) -> dict[int, dict]:
    """log_eval each epoch's values after changing the weights; the weights at each epoch."""
    weights = {}
    for epoch, logged in enumerate(values, start=1):
        with torch.no_grad():
            model[0].bias.fill_(float(epoch))
        session.step = epoch * 10
        session.log_eval(epoch, **logged)
        weights[epoch] = {k: v.clone() for k, v in model.state_dict().items()}
    return weights


def best_record(run_dir) -> dict:
    return json.loads((run_dir / "outputs" / "best.json").read_text())


def test_the_best_val_acc_is_kept_across_epochs(tmp_path):
    run_dir = tmp_path / "run"
    with started(hparams(tmp_path), run_dir, project_dir=tmp_path) as session:
        model = session.prepare(net())
        weights = evaluate_epochs(session, model, [
            {"val_loss": 0.9, "val_acc": 0.5}, {"val_loss": 0.5, "val_acc": 0.8},
            {"val_loss": 0.4, "val_acc": 0.7}])
    assert best_record(run_dir) == {"metric": "val_acc", "mode": "max", "value": 0.8,
                                    "epoch": 2, "step": 20}
    best = torch.load(run_dir / "outputs" / "best.pt", weights_only=True)
    assert best.keys() == weights[2].keys()
    assert all(torch.equal(best[k], weights[2][k]) for k in best)


def test_val_loss_is_the_fallback_and_lower_wins(tmp_path):
    run_dir = tmp_path / "run"
    with started(hparams(tmp_path), run_dir, project_dir=tmp_path) as session:
        evaluate_epochs(session, session.prepare(net()),
                        [{"val_loss": 0.9}, {"val_loss": 0.5}, {"val_loss": 0.6}])
    assert best_record(run_dir) == {
        "metric": "val_loss", "mode": "min", "value": 0.5, "epoch": 2, "step": 20}


def test_the_environment_then_the_project_choose_the_metric(tmp_path, monkeypatch):
    (tmp_path / "workbench.toml").write_text('[registry]\nmetric = "val_acc"\nmode = "min"\n')
    values = [{"val_acc": 0.5, "f1_error": 0.3}, {"val_acc": 0.4, "f1_error": 0.2},
              {"val_acc": 0.6, "f1_error": 0.4}]
    with started(hparams(tmp_path), tmp_path / "a", project_dir=tmp_path) as session:
        evaluate_epochs(session, session.prepare(net()), values)
    assert best_record(tmp_path / "a")["epoch"] == 2  # the project's mode: lowest val_acc

    monkeypatch.setenv("WORKBENCH_BEST_METRIC", "f1_error")  # an error: lower is better
    with started(hparams(tmp_path), tmp_path / "b", project_dir=tmp_path) as session:
        evaluate_epochs(session, session.prepare(net()), values)
    assert best_record(tmp_path / "b") == {"metric": "f1_error", "mode": "min", "value": 0.2,
                                           "epoch": 2, "step": 20}

    monkeypatch.setenv("WORKBENCH_BEST_METRIC", "f1_error:best")
    session = TrainingSession(hparams(tmp_path), tmp_path / "c", project_dir=tmp_path)
    with pytest.raises(TrainkitError, match="'best' is neither max nor min"):
        session.start()
    session.finish(completed=False)


def test_no_best_model_without_the_metric_or_before_prepare(tmp_path):
    with started(hparams(tmp_path), tmp_path / "a", project_dir=tmp_path) as session:
        session.log_eval(1, val_acc=0.9)  # no prepared model yet: nothing to save
        model = session.prepare(net())
        evaluate_epochs(session, model, [{"test_acc": 0.9}, {"accuracy": 0.8}])
    assert not (tmp_path / "a" / "outputs" / "best.pt").exists()
    assert not (tmp_path / "a" / "outputs" / "best.json").exists()


def test_a_resumed_run_keeps_the_best_recorded_before(tmp_path):
    run_dir = tmp_path / "run"
    with started(hparams(tmp_path), run_dir, project_dir=tmp_path) as session:
        model = session.prepare(net())
        evaluate_epochs(session, model, [{"val_acc": 0.9}])
        session.checkpoint()
    with started(hparams(tmp_path), run_dir, project_dir=tmp_path, resume_from=run_dir) as session:
        model = session.prepare(net())
        session.log_eval(2, val_acc=0.8)
        assert best_record(run_dir)["value"] == 0.9
        session.log_eval(3, val_acc=0.95)
    assert best_record(run_dir)["value"] == 0.95 and best_record(run_dir)["epoch"] == 3
