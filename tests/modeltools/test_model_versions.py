"""A model tool run on a model version's file of the project's registry files what it makes
under that version: the default output stays beside the input with the version's name, and the
version's record gains the file with its sha256 and role, from the CLI (through its job
process) and from run_tool alike. A registry that fails never fails the tool; a model outside
the registry changes no record; a registered file is never replaced."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.modeltools.version_helpers import (
    damage_record,
    register_digits_version,
    sha256_of,
    version_record,
)
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import free_path
from workbench.modeltools.params import ToolInvocation
from workbench.modeltools.running import run_tool

REPO = Path(__file__).resolve().parents[2]
QUICK = {"repeats": "5", "layer_samples": "8", "samples": "200"}


@pytest.fixture
def models_folder(digits_project, digits_onnx) -> Path:
    """The digits project with version 0000 registered: bestmodel_0000.pt and .onnx."""
    return register_digits_version(digits_project, digits_onnx)


def quantize(model: Path, **values) -> "ToolReport":  # noqa: F821
    return run_tool(ToolInvocation("quantize", {"model": str(model), **QUICK, **values}))


def recorded(folder: Path, name: str) -> list[dict]:
    return [item for item in version_record(folder)["files"] if item["name"] == name]


def test_quantize_from_the_cli_files_the_int8_model_under_the_version_once(models_folder):
    source = models_folder / "bestmodel_0000.onnx"
    done = subprocess.run([sys.executable, "-m", "workbench", "model", "quantize", str(source),
                           "--repeats", "5", "--layer-samples", "8", "--samples", "200", "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)

    made = models_folder / "bestmodel_0000.int8.onnx"
    assert report["outputs"] == [str(made)] and made.is_file()
    assert report["figures"]["model_version"] == "0000"
    assert report["figures"]["recorded_as"] == ["bestmodel_0000.int8.onnx"]
    assert not any("not recorded" in warning for warning in report["warnings"])
    [entry] = recorded(models_folder, "bestmodel_0000.int8.onnx")
    assert entry["sha256"] == sha256_of(made) and entry["size"] == made.stat().st_size
    assert entry["role"] == "int8 quantized (static, MinMax calibration)"
    assert entry["stored"] == "in place" and entry["source"] == str(made)
    # The version's own files are as they were.
    names = [item["name"] for item in version_record(models_folder)["files"]]
    assert names == ["bestmodel_0000.pt", "bestmodel_0000.onnx", "bestmodel_0000.int8.onnx"]


def test_a_second_quantization_takes_the_next_variant_name_and_is_recorded_too(models_folder):
    source = models_folder / "bestmodel_0000.onnx"
    first = quantize(source, mode="dynamic", layer_report="false")
    second = quantize(source, mode="dynamic", layer_report="false")

    assert [Path(p).name for p in first.outputs] == ["bestmodel_0000.dynamic-int8.onnx"]
    assert [Path(p).name for p in second.outputs] == ["bestmodel_0000.dynamic-int8-2.onnx"]
    for report in (first, second):
        made = Path(report.outputs[0])
        [entry] = recorded(models_folder, made.name)
        assert entry["sha256"] == sha256_of(made) and entry["role"] == "int8 quantized (dynamic)"
        assert report.figures["recorded_as"] == [made.name]


def test_converting_a_version_s_weights_keeps_its_onnx_and_files_the_new_one(models_folder):
    registered_onnx = models_folder / "bestmodel_0000.onnx"
    before = sha256_of(registered_onnx)
    report = run_tool(ToolInvocation("convert", {"model": str(models_folder / "bestmodel_0000.pt"),
                                                 "verify_samples": "4"}))

    made = Path(report.outputs[0])
    # The run's export is version 0000's .onnx already; the conversion takes the version's next
    # name, which still says which version it is.
    assert made == models_folder / "bestmodel_0000.2.onnx"
    assert sha256_of(registered_onnx) == before
    [entry] = recorded(models_folder, made.name)
    assert entry["sha256"] == sha256_of(made) and entry["role"] == "onnx (opset 18)"
    assert report.figures["model_version"] == "0000"


def test_a_damaged_version_record_does_not_fail_the_tool(models_folder):
    damaged = damage_record(models_folder)
    text = damaged.read_text()
    report = quantize(models_folder / "bestmodel_0000.onnx", mode="dynamic", layer_report="false")

    made = models_folder / "bestmodel_0000.dynamic-int8.onnx"
    assert report.outputs == [str(made)] and made.stat().st_size > 0
    assert report.figures["model_version"] == "0000" and report.figures["recorded_as"] == []
    [warning] = [w for w in report.warnings if "not recorded" in w]
    assert warning.startswith("bestmodel_0000.dynamic-int8.onnx was made but not recorded under "
                              "model version 0000")
    assert "neural_net_info_0000.yaml is damaged" in warning and "Restore it" in warning
    assert damaged.read_text() == text


def test_a_model_written_outside_the_registry_changes_no_record(models_folder, tmp_path):
    record = (models_folder / "neural_net_info_0000.yaml").read_text()
    elsewhere = tmp_path / "elsewhere" / "digits.int8.onnx"
    outside = quantize(models_folder / "bestmodel_0000.onnx", mode="dynamic", layer_report="false",
                       output=str(elsewhere))
    copy = tmp_path / "copy" / "bestmodel_0000.onnx"
    copy.parent.mkdir()
    shutil.copy(models_folder / "bestmodel_0000.onnx", copy)
    of_no_version = quantize(copy, mode="dynamic", layer_report="false")

    assert outside.outputs == [str(elsewhere)] and elsewhere.is_file()
    assert Path(of_no_version.outputs[0]) == copy.with_name("bestmodel_0000.dynamic-int8.onnx")
    for report in (outside, of_no_version):
        assert "model_version" not in report.figures and "recorded_as" not in report.figures
    assert (models_folder / "neural_net_info_0000.yaml").read_text() == record


def test_an_output_named_over_a_registered_file_is_refused(models_folder):
    first = quantize(models_folder / "bestmodel_0000.onnx", mode="dynamic", layer_report="false")
    registered = Path(first.outputs[0])
    before = sha256_of(registered)

    with pytest.raises(ModelToolError, match="is a file of model version 0000") as caught:
        quantize(models_folder / "bestmodel_0000.onnx", mode="fp16", layer_report="false",
                 output=str(registered))
    assert "leave out --output for the next free name" in str(caught.value)
    assert sha256_of(registered) == before
    assert len(recorded(models_folder, registered.name)) == 1


def test_a_version_s_file_name_is_numbered_after_the_version_s_name(tmp_path):
    (tmp_path / "bestmodel_0003.onnx").write_bytes(b"x")
    (tmp_path / "bestmodel_0003.int8.onnx").write_bytes(b"x")
    assert free_path(tmp_path / "bestmodel_0003.onnx") == tmp_path / "bestmodel_0003.2.onnx"
    assert free_path(tmp_path / "bestmodel_0003.int8.onnx") == tmp_path / "bestmodel_0003.int8-2.onnx"
    (tmp_path / "bestmodel_0003.2.pt2").write_bytes(b"x")
    assert free_path(tmp_path / "bestmodel_0003.onnx", partners=(".pt2",)) == \
        tmp_path / "bestmodel_0003.3.onnx"
    # Another name keeps the usual numbering.
    (tmp_path / "model.onnx").write_bytes(b"x")
    assert free_path(tmp_path / "model.onnx") == tmp_path / "model-2.onnx"


def test_an_mnn_conversion_of_a_version_s_model_is_filed_under_it(models_folder):
    report = run_tool(ToolInvocation("mnn", {"model": str(models_folder / "bestmodel_0000.onnx"), "fp16": "true",
                                             "verify_samples": "8"}))
    made = models_folder / "bestmodel_0000.mnn"
    assert made.is_file() and report.figures["model_version"] == "0000"
    [entry] = recorded(models_folder, "bestmodel_0000.mnn")
    assert entry["role"] == "mnn (fp16 weights)" and entry["sha256"] == sha256_of(made)
