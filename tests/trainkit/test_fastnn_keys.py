"""FastNN's own hyper-parameter files load, and its preprocessing keys reach the DataLoader."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from workbench_trainkit import TrainingSession, TrainkitError, build_optimizer
from workbench_trainkit.hparams import HParamsError, load_hparams
from workbench_trainkit.schema import FASTNN_SCHEMA

from .conftest import make_hparams

FASTNN_FILE = """\
optimizer=ftrl
ftrl_learning_rate_power=-0.5
ftrl_initial_accumulator_value=0.1
ftrl_l1=0.0
ftrl_l2=0.01
hooks=StopAtStepHook,ProfilerHook
enable_paisoar=true
protocol=grpc
job_name=worker
profile_at_task=0
log_device_placement=false
"""
NO_EFFECT_KEYS = ["ftrl_learning_rate_power", "ftrl_initial_accumulator_value", "ftrl_l1",
                  "ftrl_l2", "hooks", "enable_paisoar", "protocol", "job_name", "profile_at_task",
                  "log_device_placement"]


def test_a_fastnn_file_loads_with_a_warning_for_each_key_without_effect(tmp_path):
    path = tmp_path / "fastnn.hparams"
    path.write_text(FASTNN_FILE)

    hp = load_hparams(path, ["protocol=grpc+verbs"], schema=FASTNN_SCHEMA)

    assert hp.optimizer == "ftrl" and hp.ftrl_l2 == 0.01 and hp.hooks == [
        "StopAtStepHook", "ProfilerHook"]
    warned = [d.key for d in hp.warnings]
    assert warned == NO_EFFECT_KEYS + ["protocol"]
    assert all(d.severity == "warning" and "has no effect here" in d.message
               for d in hp.warnings)
    assert str(hp.warnings[0]).startswith(f"{path}:2: ftrl_learning_rate_power has no effect here")
    assert str(hp.warnings[-1]).startswith("--set protocol=grpc+verbs: protocol has no effect")


def test_a_misspelt_fastnn_key_is_still_an_error_with_the_suggestion(tmp_path):
    path = tmp_path / "fastnn.hparams"
    path.write_text("enable_paisor=true\n")
    with pytest.raises(HParamsError) as caught:
        load_hparams(path, schema=FASTNN_SCHEMA)
    assert caught.value.diagnostics[0].suggestion == "enable_paisoar"
    assert "did you mean enable_paisoar?" in str(caught.value)


def test_adamweightdecay_is_adamw_and_ftrl_asks_for_another_optimizer():
    parameters = [torch.nn.Parameter(torch.zeros(2))]
    optimizer = build_optimizer(parameters, make_hparams(optimizer="adamweightdecay",
                                                         weight_decay=0.01))
    assert type(optimizer) is torch.optim.AdamW
    assert optimizer.defaults["weight_decay"] == 0.01
    with pytest.raises(TrainkitError, match="optimizer is ftrl, which PyTorch does not have; "
                                            "choose another optimizer"):
        build_optimizer(parameters, make_hparams(optimizer="ftrl"))


def session_with(tmp_path, text: str) -> TrainingSession:
    path = tmp_path / "run.hparams"
    path.write_text(text)
    return TrainingSession(load_hparams(path, schema=FASTNN_SCHEMA), tmp_path / "run")


DATA = TensorDataset(torch.arange(40.0))


def test_loaders_use_no_workers_unless_the_file_sets_them(tmp_path, capsys):
    session = session_with(tmp_path, "batch_size=8\n")
    loaders = [session.train_loader(DATA), session.eval_loader(DATA)]
    assert [loader.num_workers for loader in loaders] == [0, 0]
    assert capsys.readouterr().out == ""


def test_a_worker_count_and_prefetch_buffer_reach_the_dataloader(tmp_path, capsys):
    session = session_with(tmp_path, "num_preprocessing_threads=2\nprefetch_buffer_size=6\n")
    train, evaluation = session.train_loader(DATA), session.eval_loader(DATA)
    for loader in (train, evaluation):
        assert (loader.num_workers, loader.prefetch_factor, loader.persistent_workers) == (
            2, 3, True)
    assert sorted(float(x) for (batch,) in evaluation for x in batch) == list(range(40))
    # The script's own options win; without workers, prefetching is dropped, not refused.
    assert session.train_loader(DATA, num_workers=0).num_workers == 0
    assert capsys.readouterr().out == ""


def test_keys_without_a_pytorch_equivalent_are_noted_once(tmp_path, capsys):
    session = session_with(tmp_path, "shuffle_buffer_size=100\nnum_parallel_batches=4\n"
                                     "datasets_use_caching=true\nprefetch_buffer_size=8\n")
    for _ in range(3):
        session.train_loader(DATA)
        session.eval_loader(DATA)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("note: shuffle_buffer_size has no effect: "
                                                   "the loader shuffles the whole dataset")
    for words in ("num_parallel_batches has no effect", "datasets_use_caching has no effect",
                  "prefetch_buffer_size has no effect without loader workers"):
        assert words in lines[0]
