"""The model tools on a project of the user's own training code (``[training] parameters =
"argparse"``): no model or dataset registry, so a state_dict is built by a class of the
project's code, with the values its run recorded, and the input shape or data come from the
user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.modeltools import ModelToolError, ToolInvocation
from workbench.modeltools.params import in_window_words
from workbench.modeltools.project_classes import model_classes, parse_factory
from workbench.modeltools.registry import get_tool
from workbench.modeltools.running import run_tool

PROJECT_FILE = '''\
[project]
name = "mine"

[training]
script = "train.py"
parameters = "argparse"
'''

MODEL_CODE = '''\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(16, hidden), nn.ReLU(),
                                  nn.Linear(hidden, 3))

    def forward(self, x):
        return self.body(x)


class Block(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3)
'''

# The training script runs when imported: Workbench must never import it.
TRAIN_SCRIPT = '''\
import argparse
from model import Net

parser = argparse.ArgumentParser()
parser.add_argument("--hidden", type=int, default=8)
args = parser.parse_args()
raise SystemExit("the training script was imported")
'''

RUN_ID = "20261202-080000-mine"
# The TorchScript exporter takes a tenth of the dynamo exporter's time on these tiny models;
# which exporter runs is not what these tests are about.
EXPORTER = "torchscript"


def make_project(root: Path, model_code: str = MODEL_CODE, hparams: dict | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "workbench.toml").write_text(PROJECT_FILE)
    (root / "model.py").write_text(model_code)
    (root / "train.py").write_text(TRAIN_SCRIPT)
    run = root / "runs" / RUN_ID
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"id": RUN_ID, "hparams": hparams or {"hidden": 8, "lr": 0.01}}))
    (run / "arguments.hparams").write_text('hidden=8\nlr=0.01\n')
    return root


def save_net(root: Path, name: str = "model.pt", hidden: int = 8, wrap: str = "") -> Path:
    """The weights of model.py's Net(hidden) saved as ``name`` in the run folder; ``wrap`` "ckpt"
    saves a Lightning-style checkpoint whose LightningModule held the net as self.model."""
    import torch

    from workbench.modeltools.project_classes import import_class

    torch.manual_seed(0)
    net = import_class(root, "model", "Net")(hidden=hidden)
    path = root / "runs" / RUN_ID / name
    state = net.state_dict()
    if wrap == "ckpt":
        torch.save({"epoch": 3, "state_dict": {f"model.{k}": v for k, v in state.items()}}, path)
    elif path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(state, str(path))
    else:
        torch.save(state, path)
    return path


def convert(values: dict, events: list | None = None):
    sink = events.append if events is not None else (lambda event: None)
    return run_tool(ToolInvocation("convert", {"input_shape": "1,1,4,4", "verify_samples": 2,
                                               "exporter": EXPORTER, "simplify": False,
                                               **values}), sink)


def logged(events: list) -> str:
    return "\n".join(e["text"] for e in events if e["event"] == "log")


def onnx_output_size(path: Path) -> int:
    import onnx

    return onnx.load(str(path)).graph.output[0].type.tensor_type.shape.dim[1].dim_value


def test_the_model_classes_are_found_without_importing_and_skip_runs_and_tests(tmp_path):
    root = make_project(tmp_path / "mine")
    (root / "nets").mkdir()
    (root / "nets" / "resnet.py").write_text(
        "import lightning as L\nfrom model import Net\n"
        "class Tiny(Net):\n    pass\n"
        "class Lit(L.LightningModule):\n    pass\n"
        "class Helper:\n    pass\n")
    for skipped in ("tests", ".venv", "runs"):
        (root / skipped).mkdir(exist_ok=True)
        (root / skipped / "other.py").write_text("from torch import nn\nclass Hidden(nn.Module):\n    pass\n")
    assert [c.factory for c in model_classes(root)] == [
        "model:Net", "model:Block", "nets.resnet:Tiny", "nets.resnet:Lit"]
    assert parse_factory("nets/resnet.py:Tiny", root) == ("nets.resnet", "Tiny")
    with pytest.raises(ModelToolError, match="give a class of the project's code as module:Class"):
        parse_factory("model:", root)


def test_a_state_dict_with_no_factory_is_built_by_the_one_class_that_fits(tmp_path):
    root = make_project(tmp_path / "mine")
    weights = save_net(root)
    events = []
    report = convert({"model": str(weights)}, events)
    assert report.outputs == [str(weights.with_suffix(".onnx"))]
    assert "Built model:Net (its keys and shapes match model.pt); with the run's hidden=8" in logged(events)
    assert onnx_output_size(weights.with_suffix(".onnx")) == 3
    assert report.figures["max_abs_diff"] < 1e-4


def test_the_class_the_user_names_is_built_with_the_runs_values(tmp_path):
    root = make_project(tmp_path / "mine", hparams={"hidden": 5, "lr": 0.1})
    weights = save_net(root, hidden=5)
    events = []
    convert({"model": str(weights), "model_factory": "model.py:Net"}, events)
    assert "Built model:Net; with the run's hidden=5" in logged(events)


def test_two_classes_that_fit_are_both_offered_in_the_words_of_the_window(tmp_path):
    root = make_project(tmp_path / "mine", MODEL_CODE + "\n\nclass Copy(Net):\n    pass\n")
    weights = save_net(root)
    with pytest.raises(ModelToolError) as raised:
        convert({"model": str(weights)})
    message = str(raised.value)
    assert "model.pt fits 2 classes of the project; give --model-factory with one of: model:Net, model:Copy" in message
    assert "give “Model factory” with one of" in in_window_words(message, get_tool("convert"))


def test_a_required_argument_is_taken_from_the_run_and_one_nobody_has_is_named(tmp_path):
    code = MODEL_CODE.replace("def __init__(self, hidden=8)", "def __init__(self, hidden, classes=3)")
    root = make_project(tmp_path / "mine", code, hparams={"hidden": 6})
    weights = save_net(root, hidden=6)
    events = []
    convert({"model": str(weights), "model_factory": "model:Net"}, events)
    assert "with the run's hidden=6" in logged(events)

    (root / "runs" / RUN_ID / "run.json").write_text(json.dumps({"hparams": {"lr": 0.1}}))
    with pytest.raises(ModelToolError, match=r"model:Net needs hidden to be built, and the run that wrote "
                                             r"model.pt records no value for it; give it a default"):
        convert({"model": str(weights), "model_factory": "model:Net", "output": str(tmp_path / "b.onnx")})


def test_a_safetensors_file_and_a_lightning_checkpoint_load(tmp_path):
    root = make_project(tmp_path / "mine")
    for name, wrap in (("model.safetensors", ""), ("last.ckpt", "ckpt")):
        weights = save_net(root, name, wrap=wrap)
        report = convert({"model": str(weights)})
        assert report.figures["max_abs_diff"] < 1e-4, name


def test_without_an_input_shape_convert_asks_for_it_by_its_field(tmp_path):
    root = make_project(tmp_path / "mine")
    weights = save_net(root)
    with pytest.raises(ModelToolError) as raised:
        run_tool(ToolInvocation("convert", {"model": str(weights)}))
    message = str(raised.value)
    assert "its project trains with its own script" in message and "--input-shape" in message
    assert "give it with “Input shape”" in in_window_words(message, get_tool("convert"))


def test_the_training_script_that_runs_on_import_is_never_imported(tmp_path):
    root = make_project(tmp_path / "mine")
    (root / "train.py").write_text(TRAIN_SCRIPT + "\nclass Net2(__import__('torch').nn.Module):\n    pass\n")
    weights = save_net(root)
    with pytest.raises(ModelToolError, match=r"train.py runs code when imported \(line 6\)"):
        convert({"model": str(weights), "model_factory": "train:Net"})


def test_quantize_the_converted_model_dynamically_and_static_asks_for_data(tmp_path):
    root = make_project(tmp_path / "mine")
    onnx_path = Path(convert({"model": str(save_net(root))}).outputs[0])
    report = run_tool(ToolInvocation("quantize", {"model": str(onnx_path), "mode": "dynamic",
                                                  "repeats": 0, "layer_report": False}))
    assert Path(report.outputs[0]).is_file()
    assert any("accuracy" in w for w in report.warnings)
    with pytest.raises(ModelToolError) as raised:
        run_tool(ToolInvocation("quantize", {"model": str(onnx_path), "repeats": 0}))
    message = str(raised.value)
    assert "static quantization calibrates on samples" in message
    assert "--data" in message and "--mode dynamic or fp16" in message


def test_compare_and_static_quantize_take_the_samples_of_a_npz_file(tmp_path):
    import numpy as np

    root = make_project(tmp_path / "mine")
    onnx_path = Path(convert({"model": str(save_net(root))}).outputs[0])
    quantized = Path(run_tool(ToolInvocation("quantize", {"model": str(onnx_path), "mode": "dynamic",
                                                          "repeats": 0, "layer_report": False})).outputs[0])
    with pytest.raises(ModelToolError, match=r"trains with its own script, so Workbench cannot read its "
                                             r"dataset; give samples as a .npz file \(--data\)"):
        run_tool(ToolInvocation("compare", {"models": [str(onnx_path), str(quantized)], "repeats": 1}))
    samples = tmp_path / "samples.npz"
    rng = np.random.default_rng(0)
    np.savez(samples, x=rng.normal(size=(16, 1, 4, 4)).astype(np.float32), y=rng.integers(0, 3, 16))
    report = run_tool(ToolInvocation("quantize", {"model": str(onnx_path), "data": str(samples),
                                                  "repeats": 0, "layer_report": False}))
    assert report.figures["evaluation_samples"] == 16 == report.figures["calibration_samples"]
    compared = run_tool(ToolInvocation("compare", {"models": [str(onnx_path), str(quantized)],
                                                   "data": str(samples), "repeats": 1}))
    assert len(compared.tables[0].rows) == 2


def test_a_model_saved_outside_the_run_folder_gets_the_values_of_the_run_that_listed_it(tmp_path):
    root = make_project(tmp_path / "mine", hparams={"hidden": 7})
    weights = save_net(root, hidden=7)
    saved = root / "checkpoints" / "best.pt"
    saved.parent.mkdir()
    weights.rename(saved)
    (root / "runs" / RUN_ID / "products.json").write_text(
        json.dumps({"products": [{"path": "checkpoints/best.pt", "size": saved.stat().st_size}]}))
    events = []
    convert({"model": str(saved)}, events)
    assert "Built model:Net (its keys and shapes match best.pt); with the run's hidden=7" in logged(events)


LIGHTNING_CODE = '''\
import lightning as L
from model import Net


class Classifier(L.LightningModule):
    def __init__(self, hidden=8):
        super().__init__()
        self.model = Net(hidden)

    def forward(self, x):
        return self.model(x)
'''


def test_a_lightning_checkpoint_converts_the_network_its_module_holds(tmp_path):
    root = make_project(tmp_path / "mine")
    (root / "lit.py").write_text(LIGHTNING_CODE)
    weights = save_net(root, "last.ckpt", wrap="ckpt")
    events = []
    report = convert({"model": str(weights)}, events)
    assert "lit:Classifier fits too; converting the network it holds, model:Net" in logged(events)
    assert "Built model:Net (its keys and shapes match last.ckpt)" in logged(events)
    assert report.figures["max_abs_diff"] < 1e-4


# Lightning's LightningModule quickstart: the networks are built at module level and passed in,
# and the module defines training_step but no forward.
AUTOENCODER_CODE = '''\
import lightning as L
from torch import nn

encoder = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), nn.ReLU(), nn.Linear(4, 3))
decoder = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 16))


class LitAutoEncoder(L.LightningModule):
    def __init__(self, encoder, decoder, lr=1e-3):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.lr = lr

    def training_step(self, batch, batch_idx):
        return nn.functional.mse_loss(self.decoder(self.encoder(batch)), batch.flatten(1))
'''


def test_a_quickstart_autoencoder_is_built_with_its_module_s_networks_and_asked_for_a_forward(tmp_path):
    import torch

    root = make_project(tmp_path / "mine")
    (root / "lit.py").write_text(AUTOENCODER_CODE)
    torch.manual_seed(1)
    state = {f"{part}.{key}": torch.randn_like(value)
             for part, net in (("encoder", torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4),
                                                                torch.nn.ReLU(), torch.nn.Linear(4, 3))),
                               ("decoder", torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                                                torch.nn.Linear(4, 16))))
             for key, value in net.state_dict().items()}
    weights = root / "runs" / RUN_ID / "last.ckpt"
    torch.save({"epoch": 1, "state_dict": state}, weights)
    with pytest.raises(ModelToolError, match=r"LitAutoEncoder has no forward\(\), so there is nothing to run and "
                                             r"convert .* def forward\(self, x\): return self.encoder\(x\)"):
        convert({"model": str(weights)})

    # The user adds a forward (in a module of a new name: this process imported lit.py already).
    (root / "lit.py").unlink()
    (root / "autoencoder.py").write_text(AUTOENCODER_CODE + "\n    def forward(self, x):\n        return self.encoder(x)\n")
    events = []
    report = convert({"model": str(weights), "output": str(tmp_path / "encoder.onnx")}, events)
    assert "Built autoencoder:LitAutoEncoder (its keys and shapes match last.ckpt)" in logged(events)
    assert onnx_output_size(tmp_path / "encoder.onnx") == 3 and report.figures["max_abs_diff"] < 1e-4
