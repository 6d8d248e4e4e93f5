"""Printed training output → metric records: each format of the table on real output (tqdm and
Keras-like prints from real child scripts, Lightning and Hugging Face from fixtures), near
misses, the project's own patterns, and one real run whose supervisor reads both logs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.training import RunService, TrainingError, read_metrics
from workbench.training.log_patterns import PATTERNS, PrintedOutput, project_patterns, read_line, user_patterns

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _values(records: list[dict]) -> list[dict]:
    return [{name: value for name, value in record.items() if name != "time"} for record in records]


def _printed_by(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path)], capture_output=True, check=True, timeout=60)


def test_every_pattern_of_the_table_reads_the_line_it_names():
    assert len({pattern.name for pattern in PATTERNS}) == len(PATTERNS)
    examples = {
        "step=10 loss=0.52 acc=0.91": {"step": 10, "loss": 0.52, "acc": 0.91},
        "step: 5 | loss: 0.3, acc: 0.9": {"step": 5, "loss": 0.3, "acc": 0.9},
        "Epoch 3/10 - loss: 0.1200 - acc: 0.9500": {"epoch": 3, "loss": 0.12, "acc": 0.95},
        "Epoch 3/10 5/5 [====] - 1s - loss: 0.12 - acc: 0.95": {"step": 15, "epoch": 3, "loss": 0.12, "acc": 0.95},
        "Epoch [2/5], Step [100/600], Loss: 0.2235": {"epoch": 2, "step": 700, "loss": 0.2235},
        "[1,  2000] loss: 2.183": {"epoch": 1, "loss": 2.183},
        "Train Loss: 0.5, Val Acc: 81.5 %": {"train_loss": 0.5, "val_acc": 81.5},
        "100%|████| 50/50 [00:01<00:00, 40.1it/s, loss=0.123, acc=0.9]": {"step": 50, "loss": 0.123, "acc": 0.9},
        "Epoch 1:  50%|█████     | 1/2 [00:00<00:00, 33.09it/s, v_num=0, train_loss=0.452]":
            {"step": 3, "epoch": 1, "train_loss": 0.452},
        "{'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 0.5}": {"loss": 0.6931, "learning_rate": 5e-05, "epoch": 0.5},
        "2/2 ━━━━━━━━━━━━━━━━━━━━ 0s 5ms/step - accuracy: 0.5000 - loss: 0.6931": {"accuracy": 0.5, "loss": 0.6931},
    }
    for line, expected in examples.items():
        assert read_line(line) == expected, line


def test_near_misses_and_prose_give_no_record():
    for line in ("loss: nan", "step=4 loss=nan", "loss: 0.5.1", "loss: 0.5 and more", "Epoch 3/10",
                 "{'layers': 3, 'hidden': 64}", "{'lr': 'auto', 'loss': 0.5}", "{'loss': 0.5",
                 " 40%|████      | 20/50 [00:01<00:01, 40.1it/s]", "Sanity Checking: |          | 0/? [00:00<?, ?it/s]",
                 "Using 4 GPUs: 0.5", "Seed: 42", "ValueError: 0.5", "GPU available: False, used: False",
                 "Total params: 101,770 (397.54 KB)", "Epoch 0:   0%|          | 0/2 [00:00<?, ?it/s, loss=0.7]",
                 "2/2 [====] - 0s - loss: 0.69 - note: see the docs", "", "   "):
        assert read_line(line) is None, line
    assert PrintedOutput().feed("loss: nan, acc: 0.5\n") == [{"step": 1, "acc": 0.5}]  # the finite value stays


def test_a_tqdm_bar_redrawn_on_stderr_gives_one_record_a_step_however_it_arrives(tmp_path):
    printed = _printed_by("""\
        from tqdm import tqdm
        bar = tqdm(range(20), mininterval=0, desc="train")
        for step in bar:
            bar.set_postfix(loss=1.0 / (step + 1), refresh=True)
        bar.close()
    """, tmp_path).stderr.decode()
    assert printed.count("\r") > 40  # tqdm really redrew the line, more than once a step

    whole = PrintedOutput().feed(printed, "stderr", final=True)
    assert [r["step"] for r in whole] == list(range(1, 21))
    assert whole[-1]["loss"] == pytest.approx(0.05, rel=1e-3)
    # Read as it grows (a few bytes at a time), each step still gives its values once.
    output = PrintedOutput()
    pieces = [output.feed(printed[at:at + 7], "stderr") for at in range(0, len(printed), 7)]
    records = [record for piece in pieces for record in piece] + output.feed("", "stderr", final=True)
    assert sorted({r["step"] for r in records}) == list(range(1, 21))
    assert len(records) <= 2 * 20 and records[-1]["loss"] == whole[-1]["loss"]


def test_keras_like_prints_of_a_plain_script_become_records(tmp_path):
    printed = _printed_by("""\
        for epoch in range(1, 4):
            print(f"Epoch {epoch}/3 - loss: {0.7 / epoch:.4f} - acc: {0.5 + epoch / 10:.4f}")
        print("Epoch 1/2")
        print("2/2 [==============================] - 0s 5ms/step - loss: 0.3000 - accuracy: 0.8000")
        print("Epoch 2/2")
        print("1/2 [==============>...............] - ETA: 0s - loss: 0.2500 - accuracy: 0.8500", end="\\r")
        print("2/2 [==============================] - 0s 5ms/step - loss: 0.2000 - accuracy: 0.9000"
              " - val_loss: 0.2500 - val_accuracy: 0.8800")
    """, tmp_path).stdout.decode()
    records = _values(PrintedOutput().feed(printed, final=True))
    assert records[:3] == [{"step": 1, "epoch": 1, "loss": 0.7, "acc": 0.6},
                           {"step": 2, "epoch": 2, "loss": 0.35, "acc": 0.7},
                           {"step": 3, "epoch": 3, "loss": 0.2333, "acc": 0.8}]
    # Keras' batch lines: the step is the batch counted over the epochs of the headers.
    assert records[3:] == [{"step": 2, "epoch": 1, "loss": 0.3, "accuracy": 0.8},
                           {"step": 3, "epoch": 2, "loss": 0.25, "accuracy": 0.85},
                           {"step": 4, "epoch": 2, "loss": 0.2, "accuracy": 0.9, "val_loss": 0.25,
                            "val_accuracy": 0.88}]


def test_lightning_s_real_progress_and_results_table_become_records():
    output = PrintedOutput()
    stdout = (FIXTURES / "lightning_stdout.log").read_bytes().decode()
    stderr = (FIXTURES / "lightning_stderr.log").read_bytes().decode()
    records = _values(output.feed(stderr, "stderr", final=True) + output.feed(stdout, "stdout", final=True))
    assert records == [{"step": 1, "epoch": 0, "train_loss": 0.457},
                       {"step": 2, "epoch": 0, "train_loss": 0.767},
                       {"step": 2, "epoch": 0, "val_loss": 0.594},
                       {"step": 3, "epoch": 1, "train_loss": 0.452},
                       {"step": 4, "epoch": 1, "train_loss": 0.757},
                       {"step": 4, "epoch": 1, "val_loss": 0.587},
                       {"step": 4, "test_loss": 0.5870612859725952}]


def test_pytorch_examples_train_and_test_lines_become_records_stepped_by_samples_seen():
    records = _values(PrintedOutput().feed((FIXTURES / "pytorch_examples_mnist_stdout.log").read_text(), final=True))
    train = [record for record in records if "loss" in record]
    assert [record["step"] for record in train] == [epoch * 2048 + seen for epoch in (0, 1)
                                                    for seen in range(0, 2048, 256)]
    assert train[0] == {"step": 0, "epoch": 1, "loss": 2.292717}
    assert train[8] == {"step": 2048, "epoch": 2, "loss": 0.00123}
    tests = [record for record in records if "loss" not in record]
    # Each epoch's test line goes at the step of the last train line before it.
    assert tests == [{"step": 1792, "test_average_loss": 0.0, "test_accuracy": 1.0},
                     {"step": 3840, "test_average_loss": 0.0, "test_accuracy": 1.0}]
    assert read_line("Test set: Average loss: 0.0520, Accuracy: 9826/10000 (98%)") == {
        "test_average_loss": 0.052, "test_accuracy": 0.9826}
    assert read_line("Train Epoch: 0 [640/60000 (1%)]  Loss: 0.294") == {"step": 640, "epoch": 0, "loss": 0.294}
    for near_miss in ("Train Epoch: 1 [640/60000 (1%)]", "Test set: 10000 images",
                      "Test set: Average loss: 0.05, Accuracy: 9826/0 (98%)", "Test set: Seed: 42"):
        assert read_line(near_miss) is None, near_miss


def test_lightning_s_bar_read_as_it_arrives_gives_one_record_a_step_with_that_step_s_value():
    # Lightning draws a new step's count before its loss: read live, in pieces, the first state
    # of each step shows the step before's loss and must not become a record of its own.
    stdout = (FIXTURES / "lightning_stdout.log").read_bytes().decode()
    stderr = (FIXTURES / "lightning_stderr.log").read_bytes().decode()
    whole = PrintedOutput()
    expected = _values(whole.feed(stderr, "stderr", final=True) + whole.feed(stdout, "stdout", final=True))
    for size in (1, 7, 40):
        live, records = PrintedOutput(), []
        for stream, text in (("stderr", stderr), ("stdout", stdout)):
            for start in range(0, len(text), size):
                records += live.feed(text[start:start + size], stream)
            records += live.feed("", stream, final=True)
        assert _values(records) == expected, size
    bar = "Epoch 0:  {n}%|█| {n}/100 [00:01<00:04, 15.4it/s, v_num=0, train_loss={loss}]\r"
    live = PrintedOutput()
    records = live.feed(bar.format(n=23, loss=0.0859)) + live.feed(bar.format(n=24, loss=0.0859))
    records += live.feed(bar.format(n=24, loss=0.085)) + live.feed(bar.format(n=25, loss=0.085))
    records += live.feed(bar.format(n=26, loss=0.085))  # a value that stays: step 25 is recorded then
    assert _values(records) == [{"step": 23, "epoch": 0, "train_loss": 0.0859},
                                {"step": 24, "epoch": 0, "train_loss": 0.085},
                                {"step": 25, "epoch": 0, "train_loss": 0.085}]


def test_hugging_face_trainer_dicts_become_records_numbered_in_order():
    records = _values(PrintedOutput().feed((FIXTURES / "hf_trainer_stdout.log").read_text(), final=True))
    assert records == [{"step": 1, "epoch": 0.5, "loss": 0.6931, "grad_norm": 2.1843, "learning_rate": 4.5e-05},
                       {"step": 2, "epoch": 1.0, "loss": 0.6512, "grad_norm": 1.9921, "learning_rate": 4e-05},
                       {"step": 2, "epoch": 1.0, "eval_loss": 0.6203, "eval_accuracy": 0.7},
                       {"step": 3, "epoch": 1.0, "train_loss": 0.6721}]


def test_a_line_without_a_step_belongs_to_the_step_before_once_lines_give_steps():
    output = PrintedOutput(previous_step=None)
    records = _values(output.feed("step=10 loss=0.5\nepoch=1 val_loss=0.3\nloss: 0.4\nstep=20 loss=0.2\n"))
    assert [r["step"] for r in records] == [10, 10, 10, 20]
    # A resumed run goes on from the last step of metrics.jsonl.
    assert _values(PrintedOutput(previous_step=7).feed("Epoch 4/9 - loss: 0.1\n")) == [
        {"step": 8, "epoch": 4, "loss": 0.1}]


def test_the_project_s_own_patterns_come_first_and_bad_ones_are_refused_naming_them(tmp_path):
    file = tmp_path / "workbench.toml"
    patterns = user_patterns({"metric_patterns": [r"it (?P<step>\d+): val acc (?P<val_acc>[0-9.]+)"]}, file)
    output = PrintedOutput(patterns)
    assert _values(output.feed("it 30: val acc 0.91\nit 31: val acc soon\n")) == [{"step": 30, "val_acc": 0.91}]

    for bad, words in ((["val acc (?P<val_acc>[0-9.]+"], "is not a valid regular expression"),
                       (["val acc ([0-9.]+)"], "names no metric"), (["(?P<step>\\d+)"], "names no metric"),
                       ("val acc", "must be a list of regular expressions")):
        with pytest.raises(TrainingError) as raised:
            user_patterns({"metric_patterns": bad}, file)
        message = str(raised.value)
        assert words in message and str(file) in message and "\n" not in message
        if isinstance(bad, list):
            assert repr(bad[0]) in message
    file.write_text("[training]\nmetric_patterns = ['loss (?P<loss>[0-9.]+']\n")
    with pytest.raises(TrainingError, match="not a valid regular expression"):
        project_patterns(tmp_path)
    assert project_patterns(tmp_path / "nowhere") == []


def _adopted_project(root: Path, patterns: str) -> Path:
    root.mkdir()
    (root / "workbench.toml").write_text(
        f'[project]\nname = "printed"\n\n[training]\nscript = "train.py"\nmetric_patterns = {patterns}\n')
    (root / "train.py").write_text(textwrap.dedent("""\
        import sys
        from tqdm import tqdm
        for epoch in range(1, 3):
            print(f"Epoch {epoch}/2")
            print(f"2/2 [==============================] - 0s 5ms/step - loss: {1 / epoch:.4f}", flush=True)
        bar = tqdm(total=8, initial=4, mininterval=0)
        for step in range(5, 9):
            bar.update(1)
            bar.set_postfix(loss=1 / step, refresh=True)
        bar.close()
        print("after 8 steps: val acc 0.93", flush=True)
    """))
    return root


@pytest.mark.slow
def test_a_run_s_supervisor_reads_keras_lines_tqdm_on_stderr_and_the_project_s_pattern(tmp_path):
    project = _adopted_project(tmp_path / "printed", r"['after (?P<step>\d+) steps: val acc (?P<val_acc>[0-9.]+)']")
    service = RunService(project)
    info = service.wait(service.start().id, timeout=60)
    assert info.state == "completed", (Path(info.run_dir) / "stderr.log").read_text()
    records = read_metrics(Path(info.run_dir) / "metrics.jsonl")
    assert info.metrics_source == "stdout" and all(isinstance(r["time"], float) for r in records)
    losses = {r["step"]: r["loss"] for r in records if "loss" in r}
    assert losses == {2: 1.0, 4: 0.5, 5: 0.2, 6: pytest.approx(1 / 6, abs=1e-3), 7: pytest.approx(1 / 7, abs=1e-3),
                      8: 0.125}
    assert [r for r in records if "val_acc" in r][0]["step"] == 8

    # A pattern that does not compile is refused before any run folder is made.
    (project / "workbench.toml").write_text(
        '[project]\nname = "printed"\n\n[training]\nscript = "train.py"\nmetric_patterns = ["(?P<loss>"]\n')
    with pytest.raises(TrainingError, match=r"metric_patterns in .*workbench.toml: '\(\?P<loss>' is not a valid"):
        service.start()
    assert len(service.list_runs()) == 1


def test_a_cluster_run_s_mirrored_stdout_goes_through_the_same_table(tmp_path):
    from tests.cluster.this_machine import LocalSftp
    from workbench.cluster.mirror import LogMirror, start_mirror_at
    from workbench.training import RunFolder

    remote = tmp_path / "remote"
    remote.mkdir()
    folder = RunFolder(tmp_path / "local" / "runs" / "r1")
    folder.path.mkdir(parents=True)
    start_mirror_at(folder)
    (remote / "stdout.log").write_text("Epoch 1/2 - loss: 0.6931\nEpoch 2/2 - loss: 0.4")
    mirror = LogMirror(folder, str(remote))
    mirror.poll(LocalSftp())
    assert _values(read_metrics(folder.metrics)) == [{"step": 1, "epoch": 1, "loss": 0.6931}]
    mirror.poll(LocalSftp(), final=True)
    assert [r["step"] for r in read_metrics(folder.metrics)] == [1, 2] and mirror.metrics_source == "stdout"
