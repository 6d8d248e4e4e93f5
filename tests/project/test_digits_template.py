"""The digits template is a real project: it trains, logs and saves a model."""

import re
import subprocess
import sys

import pytest

from workbench.project import create_from_template

pytestmark = pytest.mark.slow


@pytest.mark.timeout(300)
def test_digits_project_trains_logs_steps_and_saves_an_accurate_model(tmp_path):
    project = create_from_template("digits", tmp_path / "digits")

    # The project's own interpreter is the one Workbench runs with: the venv's.
    result = subprocess.run(
        [sys.executable, "train.py", "--set", "num_epochs=2", "--output-dir", "out"],
        cwd=project.root, capture_output=True, text=True, timeout=280,
    )

    assert result.returncode == 0, result.stderr
    steps = re.findall(r"^step=(\d+) loss=(\d+\.\d{4}) acc=(\d\.\d{4}) lr=\S+$",
                       result.stdout, re.M)
    assert len(steps) >= 5
    epochs = re.findall(r"^epoch=(\d+) val_loss=\d+\.\d{4} val_acc=(\d\.\d{4})$",
                        result.stdout, re.M)
    assert [e for e, _ in epochs] == ["1", "2"]
    assert float(epochs[-1][1]) > 0.85
    assert re.search(r"^test_loss=\d+\.\d{4} test_acc=\d\.\d{4}$", result.stdout, re.M)
    out = project.root / "out"
    assert (out / "outputs" / "model.pt").is_file()
    assert (out / "checkpoints" / "latest.json").is_file()
    assert (out / "metrics.jsonl").is_file()


@pytest.mark.timeout(120)
def test_digits_training_rejects_a_mistyped_override_with_a_clear_message(tmp_path):
    project = create_from_template("digits", tmp_path / "digits")
    result = subprocess.run(
        [sys.executable, "train.py", "--set", "num_epochs=two"],
        cwd=project.root, capture_output=True, text=True, timeout=110,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert "num_epochs must be a whole number" in result.stderr


def test_digits_model_is_small_and_maps_8x8_images_to_ten_scores(tmp_path):
    project = create_from_template("digits", tmp_path / "digits")
    code = ("import torch; from model import DigitsNet, count_parameters; m = DigitsNet().eval();"
            "print(count_parameters(m), tuple(m(torch.zeros(3, 1, 8, 8)).shape))")
    result = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True,
                            text=True, timeout=110)
    assert result.returncode == 0, result.stderr
    params, shape = result.stdout.split(" ", 1)
    assert 30_000 <= int(params) <= 50_000
    assert shape.strip() == "(3, 10)"
