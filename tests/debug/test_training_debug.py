"""The digits project's training run under the debugger, as `workbench train` would start it:
a stop inside the training loop with the loss tensor read there."""

from __future__ import annotations

import pytest

from tests.debug.conftest import Recorder
from workbench.debug import ArraySummary, Breakpoint, DebugError, DebugSession, training_launch
from workbench.project import create_from_template

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def digits_project(tmp_path_factory):
    return create_from_template("digits", tmp_path_factory.mktemp("debug") / "digits").root


def line_of(path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.timeout(240)
def test_the_training_run_stops_inside_its_loop_with_the_loss_tensor_readable(digits_project):
    config = training_launch(digits_project, overrides=["num_epochs=1", "stop_at_step=3"])
    assert config.program == str(digits_project / "train.py")
    assert config.args[0] == "--hparams" and config.args[1].endswith("digits.hparams")
    assert (digits_project / config.args[1]).is_file()  # the run's copy, as `workbench train` writes it
    assert config.env["WORKBENCH_RUN_DIR"].startswith(str(digits_project / ".workbench"))
    train = digits_project / "train.py"
    line = line_of(train, "session.optimize(loss)")
    recorder = Recorder()
    session = DebugSession(config, [Breakpoint(str(train), line)], recorder)
    try:
        session.start(timeout=120)
        stop = session.next_stop(180)
        assert (stop.top.path, stop.top.line, stop.top.name) == (str(train), line, "main")
        scope = next(s for s in session.scopes(stop.top.id) if s.name == "Locals")
        loss = {v.name: v for v in session.variables(scope.reference, stop.top.id)}["loss"]
        assert loss.type == "Tensor"
        assert isinstance(loss.summary, ArraySummary)
        assert loss.summary.shape == () and loss.summary.dtype == "float32" and loss.summary.device == "cpu"
        assert loss.summary.requires_grad and 0 < loss.summary.mean < 10
        images = session.evaluate("images.shape", stop.top.id).variable.value
        assert images.startswith("torch.Size([32, 1, 8, 8]")
        session.terminate()
        end = session.wait_ended(30)
        assert end is not None and "was stopped" in end.message
    finally:
        session.close()


def test_a_project_that_cannot_train_is_refused_with_the_training_message(tmp_path):
    (tmp_path / "workbench.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(DebugError, match="names no training script"):
        training_launch(tmp_path)
