"""Telling what kind of model a file holds from its content: real files saved by torch, onnx
and MNN, under misleading names too, and files that are no model at all."""

from __future__ import annotations

import io
import pickle
import shutil
import warnings
import zipfile
from pathlib import Path

import pytest

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.model_files import (EXPORTED_PROGRAM, MNN, ONNX, STATE_DICT, TORCHSCRIPT,
                                              identify)


def tiny_model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 3)).eval()


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """One real file of each kind, saved the way people save them."""
    folder = tmp_path_factory.mktemp("model-files")
    with warnings.catch_warnings():
        # torch.jit and the TorchScript-based ONNX exporter warn that they are deprecated.
        warnings.simplefilter("ignore", DeprecationWarning)
        return save_each_kind(folder)


def save_each_kind(folder: Path) -> dict[str, Path]:
    import torch

    from workbench_trainkit.checkpoint import Checkpointer

    model = tiny_model()
    example = torch.zeros(2, 1, 8, 8)
    files = {"state_dict": folder / "weights.pt", "traced": folder / "traced.pt",
             "scripted": folder / "scripted.pt", "program": folder / "program.pt2",
             "onnx": folder / "model.onnx", "whole": folder / "whole.pt"}
    torch.save(model.state_dict(), files["state_dict"])
    torch.save(model, files["whole"])
    torch.jit.save(torch.jit.trace(model, example), files["traced"])
    torch.jit.save(torch.jit.script(model), files["scripted"])
    torch.export.save(torch.export.export(model, (example,)), files["program"])
    buffer = io.BytesIO()
    torch.onnx.export(model, (example,), buffer, dynamo=False, opset_version=17)
    files["onnx"].write_bytes(buffer.getvalue())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    files["checkpoint"] = Checkpointer(folder / "checkpoints", hparams={"seed": 0}).save(
        3, 1, model, optimizer)
    return files


@pytest.mark.parametrize("name, kind", [
    ("state_dict", STATE_DICT), ("checkpoint", STATE_DICT), ("traced", TORCHSCRIPT),
    ("scripted", TORCHSCRIPT), ("program", EXPORTED_PROGRAM), ("onnx", ONNX)])
def test_each_kind_of_model_file_is_recognised(saved, name, kind):
    identified = identify(saved[name])
    assert identified.kind == kind
    assert identified.path == saved[name]
    assert identified.is_pytorch == (kind != ONNX)


@pytest.mark.parametrize("name, misleading, kind", [
    ("traced", "model.pth", TORCHSCRIPT), ("program", "model.pt", EXPORTED_PROGRAM),
    ("state_dict", "model.pt2", STATE_DICT), ("onnx", "model.bin", ONNX),
    ("scripted", "model.onnx", TORCHSCRIPT)])
def test_the_content_decides_not_the_name(saved, tmp_path, name, misleading, kind):
    renamed = tmp_path / misleading
    shutil.copy(saved[name], renamed)
    assert identify(renamed).kind == kind


def test_an_mnn_model_is_recognised_by_its_suffix_and_header(saved, tmp_path):
    tools = pytest.importorskip("_tools")  # MNN's compiled converter, without its CLI wrapper
    target = tmp_path / "model.mnn"
    tools.mnnconvert(["mnnconvert", "-f", "ONNX", "--modelFile", str(saved["onnx"]),
                      "--MNNModel", str(target), "--bizCode", "workbench"])
    assert identify(target).kind == MNN
    damaged = tmp_path / "damaged.mnn"
    damaged.write_bytes(target.read_bytes()[:12])
    with pytest.raises(ModelToolError, match=r"damaged\.mnn is not a valid MNN model"):
        identify(damaged)


def test_a_text_file_renamed_pt_is_not_a_model(tmp_path):
    text = tmp_path / "model.pt"
    text.write_text("epoch 1: loss 0.53\nepoch 2: loss 0.31\n")
    with pytest.raises(ModelToolError) as caught:
        identify(text)
    message = str(caught.value)
    assert str(text) in message
    assert "is not a model file: it is a text file (it starts with 'epoch 1: loss 0.53')" in message
    assert "give PyTorch weights, TorchScript" in message


def test_an_empty_file_says_it_was_not_saved_completely(tmp_path):
    empty = tmp_path / "model.pt"
    empty.touch()
    with pytest.raises(ModelToolError, match=r"model\.pt is empty \(0 bytes\).*save the model again"):
        identify(empty)


@pytest.mark.parametrize("name", ["state_dict", "traced", "program"])
def test_a_truncated_pytorch_file_is_reported_as_damaged(saved, tmp_path, name):
    truncated = tmp_path / saved[name].name
    truncated.write_bytes(saved[name].read_bytes()[: saved[name].stat().st_size // 2])
    with pytest.raises(ModelToolError) as caught:
        identify(truncated)
    assert f"{truncated} is a damaged or truncated PyTorch file" in str(caught.value)
    assert "save or copy it again" in str(caught.value)


def test_a_truncated_onnx_file_is_reported_as_truncated(saved, tmp_path):
    truncated = tmp_path / "model.onnx"
    truncated.write_bytes(saved["onnx"].read_bytes()[:-200])
    with pytest.raises(ModelToolError, match=r"model\.onnx is a truncated ONNX model"):
        identify(truncated)


def test_a_whole_pickled_module_is_refused_without_unpickling_it(saved):
    with pytest.raises(ModelToolError) as caught:
        identify(saved["whole"])
    message = str(caught.value)
    assert "whole pickled Python object (torch.nn.modules.container.Sequential)" in message
    assert "Save model.state_dict()" in message


def test_a_pickle_of_a_class_of_the_users_own_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("model/data.pkl", pickle.dumps(Path("x"), protocol=2))
        archive.writestr("model/version", "3\n")
    with pytest.raises(ModelToolError, match=r"whole pickled Python object \(pathlib\.PosixPath\)"):
        identify(path)


@pytest.mark.parametrize("content, expected", [
    (pickle.dumps({"weights": [1.0, 2.0]}), "a Python pickle but not a PyTorch file"),
    (b"\x89HDF\r\n\x1a\n" + bytes(100), "a Keras / HDF5 file"),
    (bytes(range(7, 200)) * 3, "no model format Workbench knows"),
])
def test_other_formats_are_named(tmp_path, content, expected):
    path = tmp_path / "model.pt"
    path.write_bytes(content)
    with pytest.raises(ModelToolError) as caught:
        identify(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_a_safetensors_file_is_weights(tmp_path):
    path = tmp_path / "model.safetensors"
    header = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    assert identify(path).kind == "state_dict"


def test_a_zip_that_is_no_pytorch_file(tmp_path):
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(ModelToolError, match=r"is a zip archive but not a PyTorch file"):
        identify(path)


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(ModelToolError, match=r"missing\.pt does not exist"):
        identify(tmp_path / "missing.pt")
    with pytest.raises(ModelToolError, match=r"is a folder; give a model file"):
        identify(tmp_path)


# --- every tool says it the same way ------------------------------------------------------------

def bad_files(folder: Path, saved: dict[str, Path]) -> dict[str, Path]:
    files = {"text": folder / "notes.onnx", "empty": folder / "empty.onnx",
             "truncated": folder / "half.onnx"}
    files["text"].write_text("best epoch: 4, accuracy 95 %\n")
    files["empty"].touch()
    files["truncated"].write_bytes(saved["onnx"].read_bytes()[:-200])
    return files


@pytest.mark.parametrize("bad", ["text", "empty", "truncated"])
def test_every_tool_gives_the_same_message_for_a_file_that_is_no_model(saved, tmp_path,
                                                                      monkeypatch, bad):
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.running import run_tool

    monkeypatch.chdir(tmp_path)
    relative = bad_files(tmp_path, saved)[bad].relative_to(tmp_path)
    with pytest.raises(ModelToolError) as caught:
        identify(relative)
    expected = str(caught.value)
    assert expected.startswith(f"{relative} is ")  # the path as the user gave it
    reference = shutil.copy(saved["onnx"], tmp_path / "reference.onnx")
    invocations = [ToolInvocation("convert", {"model": str(relative)}),
                   ToolInvocation("quantize", {"model": str(relative)}),
                   ToolInvocation("sparsify", {"model": str(relative)}),
                   ToolInvocation("inspect", {"model": str(relative)}),
                   ToolInvocation("compare", {"models": [reference, str(relative)],
                                              "data": "data.npz"})]
    for invocation in invocations:
        with pytest.raises(ModelToolError) as caught:
            run_tool(invocation)
        assert str(caught.value) == expected, invocation.tool
        assert "Wire format" not in str(caught.value) and "protobuf" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["notes.onnx", "empty.onnx", "half.onnx", "reference.onnx"])


def test_a_tool_given_the_wrong_kind_says_what_the_file_is_and_what_to_do(saved):
    from workbench.modeltools.model_files import expect

    with pytest.raises(ModelToolError) as caught:
        expect(saved["state_dict"], (ONNX,), "Quantize")
    assert str(caught.value) == (
        f"{saved['state_dict']} is PyTorch weights (a state_dict, or a checkpoint holding one); "
        f"Quantize takes ONNX models: convert it to ONNX first (workbench model convert "
        f"{saved['state_dict']})")
    with pytest.raises(ModelToolError) as caught:
        expect(saved["onnx"], (STATE_DICT, TORCHSCRIPT))
    assert str(caught.value) == (f"{saved['onnx']} is an ONNX model, not PyTorch weights or a "
                                 "TorchScript model; give the PyTorch model it was exported from")
    assert expect(saved["program"], (EXPORTED_PROGRAM,)).kind == EXPORTED_PROGRAM
