"""The MNN plugin (plugins/workbench-mnn): ONNX to MNN with real MNN 3.6.1, checked against
onnxruntime; clear errors for what MNN cannot convert (quantized models among them); MNN's
aborts and crashes contained in the MNN worker process; the .mnn runtime; and proof that a
conversion starts no process but that worker, opens no connection and installs nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.modeltools.mnn_helpers import (convert, fixed_batch_onnx, leftovers, mlp_onnx, mnn_spec, qdq_conv_onnx,
                                         quantize, tiny_onnx)
from workbench.modeltools.errors import ModelToolError

pytest.importorskip("workbench_mnn", reason="the MNN plugin is not installed (scripts/setup.sh)")


@pytest.fixture(scope="module")
def quantized_models(digits_onnx, digits_npz, tmp_path_factory) -> dict[str, Path]:
    """The digits model and a fully connected one, quantized by the Quantize tool: "static"
    (QDQ int8, model.int8.onnx), "dynamic" (ConvInteger), "dynamic_mlp" (MatMulInteger).
    MNN's run of "dynamic_mlp" is checked against onnxruntime's, which is exact only where its
    uint8 x int8 kernels cannot saturate: on x86 CPUs without VNNI its weights get 7 bits."""
    from workbench.modeltools.quantization.host_cpu import int8_kernels_can_saturate

    folder = tmp_path_factory.mktemp("quantized")
    return {
        "static": quantize(digits_onnx, digits_npz, "static", folder / "digits.int8.onnx"),
        "dynamic": quantize(digits_onnx, digits_npz, "dynamic",
                            folder / "digits.dynamic-int8.onnx"),
        "dynamic_mlp": quantize(mlp_onnx(folder / "mlp.onnx"), digits_npz, "dynamic",
                                folder / "mlp.dynamic-int8.onnx",
                                reduce_range=int8_kernels_can_saturate()),
    }


@pytest.fixture
def onnx_copy(digits_onnx, tmp_path) -> Path:
    target = tmp_path / "models" / "digits.onnx"
    target.parent.mkdir()
    shutil.copy(digits_onnx, target)
    return target


# --- registration -----------------------------------------------------------------------------

def test_the_plugin_adds_the_mnn_tool_and_the_mnn_runtime():
    from workbench.extensions import load_extensions
    from workbench.modeltools.registry import all_tools, tools_for

    spec = all_tools()["mnn"]
    assert spec.title == "Convert to MNN"
    assert spec.plugin == "mnn"
    assert spec.applies_to == (".onnx",)
    assert "mnn" in [s.name for s in tools_for(".onnx")]
    assert load_extensions().model_runtimes[".mnn"] == "workbench_mnn.runtime:open_mnn_model"
    assert {"model", "output", "fp16", "weight_quant_bits", "weight_quant_asymmetric",
            "optimize_level", "data", "verify_samples"} <= {p.name for p in spec.params}


def test_listing_the_tools_loads_no_mnn():
    code = ("import sys; from workbench.modeltools.registry import all_tools; "
            "from workbench.extensions import load_extensions; load_extensions(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('MNN', '_tools', '_mnncengine', 'onnx', 'onnxruntime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- conversions --------------------------------------------------------------------------------

def test_the_digits_model_converts_with_outputs_matching_onnxruntime(onnx_copy, digits_npz):
    from workbench.modeltools.runtimes import open_model
    from workbench.modeltools.data import load_npz

    report, lines = convert(onnx_copy, data=digits_npz, verify_samples=200)

    target = onnx_copy.with_suffix(".mnn")
    assert report.outputs == [str(target)] and target.is_file()
    figures = report.figures
    assert figures["max_abs_diff"] <= 1e-4
    assert figures["agreement"] == 100.0
    assert abs(figures["accuracy_drop"]) < 1e-9
    assert figures["verify_samples"] == 200
    assert 0.5 < figures["size_ratio"] < 1.2
    assert "digits-test.npz" in report.tables[1].title
    assert any(line.startswith("MNNConvert ") for line in lines)
    assert "Converted Success!" in lines
    assert leftovers(target.parent) == ["digits.mnn"]

    # The .mnn file runs through the registry like any model.
    session = open_model(target)
    assert session.runtime == "mnn"
    assert session.input_shape == [None, 1, 8, 8] and session.fixed_batch is None
    x = load_npz(digits_npz).x[:37]
    reference = open_model(onnx_copy).run(x)[0]
    assert np.abs(session.run_batched(x, 16) - reference).max() <= 1e-4


def test_the_report_gives_sizes_in_bytes_and_latencies_in_ms_as_quantize_and_compare_do(
        onnx_copy, digits_npz):
    report, _ = convert(onnx_copy, data=digits_npz, verify_samples=20)

    target = onnx_copy.with_suffix(".mnn")
    figures = report.figures
    assert figures["size_bytes_onnx"] == onnx_copy.stat().st_size
    assert figures["size_bytes_mnn"] == target.stat().st_size
    assert all(type(figures[k]) is int for k in ("size_bytes_onnx", "size_bytes_mnn"))
    assert figures["size_ratio"] == round(target.stat().st_size / onnx_copy.stat().st_size, 4)
    assert figures["latency_p50_ms_onnx"] > 0 and figures["latency_p50_ms_mnn"] > 0
    assert figures["latency_ratio"] == pytest.approx(
        figures["latency_p50_ms_mnn"] / figures["latency_p50_ms_onnx"], rel=0.02)
    assert not [k for k in figures if k.endswith(("_kb", "_ms")) or "onnxruntime" in k]
    models = report.tables[0]
    assert models.columns == ["model", "runtime", "size (bytes)", "p50 (ms)", "p90 (ms)"]
    assert [row[2] for row in models.rows] == [figures["size_bytes_onnx"],
                                               figures["size_bytes_mnn"]]
    assert report.tables[1].columns == ["output", "max abs diff", "cosine distance"]


def test_the_progress_bar_names_the_work_being_done(onnx_copy, digits_npz):
    from workbench.modeltools.context import ToolContext

    spec = mnn_spec()
    events: list[tuple] = []
    context = ToolContext(stages=spec.stages, on_event=lambda event: events.append(
        (event["event"], event.get("name"), event.get("fraction"))))

    report = spec.load_runner()(spec.resolve({"model": onnx_copy, "data": digits_npz,
                                              "verify_samples": 100}), context)
    context_events = [e for e in events if e[0] in ("stage", "progress")]

    assert spec.stages == ("Load data", "Convert", "Verify", "Time")
    stages = [name for kind, name, _ in context_events if kind == "stage"]
    assert stages == list(spec.stages)
    progress_by_stage: dict[str, list[float]] = {}
    current = None
    for kind, name, fraction in context_events:
        if kind == "stage":
            current = name
        else:
            assert current is not None, "progress before the first stage"
            progress_by_stage.setdefault(current, []).append(fraction)
    for stage in spec.stages:
        fractions = progress_by_stage.get(stage, [])
        assert fractions and fractions[-1] == 1.0, (stage, fractions)
        assert fractions == sorted(fractions), (stage, fractions)
    # The check runs 100 samples in batches of 32: several steps, not one jump.
    assert len(progress_by_stage["Verify"]) >= 4
    assert report.figures["verify_samples"] == 100


def test_an_output_without_the_mnn_suffix_is_refused(onnx_copy):
    wrong = onnx_copy.with_name("x.out")

    with pytest.raises(ModelToolError, match=r"x\.out: MNN models are written as \.mnn files"
                                             r".*name it x\.mnn"):
        convert(onnx_copy, output=wrong, verify_samples=0)
    assert not wrong.exists()
    assert sorted(p.name for p in onnx_copy.parent.iterdir()) == ["digits.onnx"]

    report, _ = convert(onnx_copy, output=onnx_copy.with_name("x.MNN"), verify_samples=0)
    assert Path(report.outputs[0]).name == "x.MNN"


# Measured on the digits model (largest logit about 22): fp16 weights 0.037 (0.47x the size),
# 8-bit weights 0.10 (0.27x); fp32 1.1e-5.
@pytest.mark.parametrize("values, max_ratio, max_relative_diff", [
    ({"fp16": True}, 0.6, 0.005),
    ({"weight_quant_bits": 8}, 0.35, 0.015),
])
def test_compressed_weights_make_a_smaller_model_that_still_agrees(onnx_copy, digits_npz, values,
                                                                    max_ratio, max_relative_diff):
    from workbench.modeltools.data import load_npz
    from workbench.modeltools.runtimes import open_model

    report, _ = convert(onnx_copy, data=digits_npz, output=onnx_copy.with_name("small.mnn"),
                        verify_samples=200, **values)

    scale = np.abs(open_model(onnx_copy).run(load_npz(digits_npz).x[:200])[0]).max()
    figures = report.figures
    assert figures["size_ratio"] < max_ratio
    assert 1e-4 < figures["max_abs_diff"] < max_relative_diff * scale
    assert figures["agreement"] >= 98.0
    assert abs(figures["accuracy_drop"]) <= 2.0
    assert Path(report.outputs[0]).name == "small.mnn"


def test_a_model_in_a_project_is_checked_on_the_project_dataset(digits_project, digits_onnx):
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.running import run_tool

    model = digits_project / "runs" / "20261130-120000-digits" / "outputs" / "model.onnx"
    shutil.copy(digits_onnx, model)

    report = run_tool(ToolInvocation("mnn", {"model": str(model), "verify_samples": 50}))

    assert "test split" in report.tables[1].title
    assert report.figures["verify_samples"] == 50
    assert report.figures["max_abs_diff"] <= 1e-4
    assert not any("random" in w for w in report.warnings)


def test_without_data_the_check_uses_seeded_random_inputs_and_says_so(onnx_copy):
    report, _ = convert(onnx_copy, verify_samples=8)

    assert report.figures["max_abs_diff"] <= 1e-4
    assert "seeded random inputs" in report.tables[1].title
    assert any("random inputs" in w for w in report.warnings)


def test_a_relative_path_to_an_mnn_file_opens_that_file(onnx_copy, monkeypatch):
    from workbench.modeltools.runtimes import open_model

    convert(onnx_copy, verify_samples=0)
    monkeypatch.chdir(onnx_copy.parent)

    session = open_model(Path("digits.mnn"))

    assert session.input_shape == [None, 1, 8, 8]
    assert session.run(np.zeros((2, 1, 8, 8), np.float32))[0].shape == (2, 10)


def test_a_fixed_batch_model_runs_one_batch_at_a_time_and_refuses_others(tmp_path):
    from workbench.modeltools.runtimes import open_model

    model = fixed_batch_onnx(tmp_path / "fixed.onnx")
    report, _ = convert(model, verify_samples=5)
    assert report.figures["max_abs_diff"] <= 1e-4

    session = open_model(tmp_path / "fixed.mnn")
    assert session.fixed_batch == 1 and session.input_shape == [1, 4, 2, 2]
    x = np.random.default_rng(0).standard_normal((5, 4, 2, 2)).astype(np.float32)
    assert session.run_batched(x, 32).shape == (5, 3)
    # MNN would crash the process on this batch; the runtime says what is wrong instead.
    with pytest.raises(ModelToolError, match="batches of exactly 1"):
        session.run(x[:2])
    with pytest.raises(ModelToolError, match=r"shape \(1, 4, 2, 2\)"):
        session.run(np.zeros((1, 4, 3, 3), np.float32))


# --- what cannot be converted ------------------------------------------------------------------

@pytest.mark.parametrize("op, domain, named", [
    ("Hardmax", "", "Hardmax"),
    ("FancyBlur", "com.example.vision", "FancyBlur of domain com.example.vision"),
])
def test_an_operator_mnn_lacks_is_named_with_its_node(tmp_path, op, domain, named):
    model = tiny_onnx(tmp_path / "odd.onnx", op, domain)

    with pytest.raises(ModelToolError) as failure:
        convert(model, verify_samples=0)

    message = str(failure.value)
    assert str(model) in message
    assert f"cannot convert the operator {named} (node 'odd_one')" in message
    assert "onnxruntime" in message
    assert leftovers(tmp_path) == []


def test_the_operators_of_a_not_supported_line_are_read_whatever_separates_them():
    from workbench_mnn.convert import unsupported_operators

    lines = ["Start to Optimize the MNN Net...",
             "[12:20:37] :220: These Op Not Support: ONNX::QGemm | ONNX::QLinearConv ",
             "[12:20:37] :220: These Op Not Support: ONNX::Hardmax"]
    assert unsupported_operators(lines) == ["QGemm", "QLinearConv", "Hardmax"]


@pytest.mark.parametrize("content", [b"this is not a model\n", b"", "truncated"])
def test_a_file_that_is_not_an_onnx_model_is_refused(onnx_copy, content):
    bad = onnx_copy.with_name("bad.onnx")
    bad.write_bytes(onnx_copy.read_bytes()[:4000] if content == "truncated" else content)

    with pytest.raises(ModelToolError, match=r"bad\.onnx is not an ONNX model"):
        convert(bad)
    assert leftovers(bad.parent) == []


def test_an_mnn_file_given_as_the_model_is_refused(onnx_copy):
    convert(onnx_copy, verify_samples=0)
    with pytest.raises(ModelToolError, match=r"digits\.mnn is not an ONNX model"):
        convert(onnx_copy.with_suffix(".mnn"))
    assert leftovers(onnx_copy.parent) == ["digits.mnn"]


def test_data_of_the_wrong_shape_stops_the_tool_before_it_converts(onnx_copy, tmp_path):
    data = tmp_path / "wrong.npz"
    np.savez(data, x=np.zeros((4, 3, 8, 8), np.float32))

    with pytest.raises(ModelToolError, match=r"wrong\.npz has samples of shape \(3, 8, 8\)"):
        convert(onnx_copy, data=data)
    assert leftovers(onnx_copy.parent) == []


@pytest.mark.parametrize("values, message", [
    ({"fp16": True, "weight_quant_bits": 8}, "choose one"),
    ({"weight_quant_bits": 1}, "2 to 8 bits"),
    ({"weight_quant_bits": 9}, "above the maximum"),
    ({"weight_quant_asymmetric": True}, "needs --weight-quant-bits"),
    ({"optimize_level": 0}, "below the minimum"),
])
def test_options_that_do_not_go_together_are_refused(onnx_copy, values, message):
    with pytest.raises(ModelToolError, match=message):
        convert(onnx_copy, **values)
    assert leftovers(onnx_copy.parent) == []


def test_the_output_may_not_overwrite_the_input(onnx_copy):
    before = onnx_copy.read_bytes()
    with pytest.raises(ModelToolError, match=r"written as \.mnn files"):
        convert(onnx_copy, output=onnx_copy)
    assert onnx_copy.read_bytes() == before


@pytest.mark.parametrize("stage", ["Convert", "Verify", "Time"])
def test_cancelling_ends_the_mnn_worker_and_leaves_no_file(onnx_copy, tmp_path, monkeypatch,
                                                            stage):
    import tempfile

    from workbench.modeltools.context import ToolContext
    from workbench.modeltools.errors import ToolCancelled
    from workbench_mnn import worker_client

    workers = []
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(worker_client.MnnWorker, "__enter__", _recording_enter(workers))
    context = ToolContext(stages=mnn_spec().stages)
    with pytest.raises(ToolCancelled):
        convert(onnx_copy, context=context, verify_samples=64, on_stage={stage: context.cancel})

    assert leftovers(onnx_copy.parent) == []
    assert len(workers) == 1 and workers[0].poll() is not None
    assert not list(tmp_path.glob("workbench-mnn-*"))


def _recording_enter(processes: list):
    """MnnWorker.__enter__, noting each worker process it starts in ``processes``."""
    from workbench_mnn.worker_client import MnnWorker

    enter = MnnWorker.__enter__

    def recording(self):
        started = enter(self)
        processes.append(self._process)
        return started

    return recording


def test_the_runtime_refuses_a_file_that_is_not_an_mnn_model(tmp_path, digits_onnx):
    from workbench_mnn.runtime import open_mnn_model

    for name, content in (("text.mnn", b"hello\n"), ("empty.mnn", b""),
                          ("onnx.mnn", digits_onnx.read_bytes())):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ModelToolError, match=f"{name} is not a model MNN 3.6.1 can load"):
            open_mnn_model(tmp_path / name)


# --- quantized models (MNN 3.6.1 converts float models; see workbench_mnn/quantized.py) -----

ADVICE = ("MNN converts float models: convert the fp32 model and use --weight-quant-bits 8 or "
          "--fp16, or quantize with MNN's own tools")


def test_a_static_int8_model_from_quantize_is_refused_saying_what_to_do_and_the_job_lives(
        quantized_models, tmp_path):
    """MNN's converter aborts the process on this model (std::out_of_range): the job would die
    by SIGABRT with nothing said. It is refused before MNN sees it."""
    from workbench.modeltools.job_client import ToolJob
    from workbench.modeltools.params import ToolInvocation

    model = tmp_path / "digits.int8.onnx"
    shutil.copy(quantized_models["static"], model)
    job = ToolJob()
    job.start(ToolInvocation("mnn", {"model": str(model)}))
    with pytest.raises(ModelToolError) as failure:
        job.wait(timeout=120)

    message = str(failure.value)
    assert job.returncode == 1, job.stderr_tail
    assert message.startswith(f"{model} is a quantized (int8 QDQ) model")
    assert "the Conv nodes" in message and "the Gemm node" in message
    assert "MNN 3.6.1 cannot convert that" in message
    assert message.endswith(ADVICE)
    assert leftovers(tmp_path) == []


def test_a_dynamic_int8_model_with_convolutions_is_refused_by_mnn_with_the_same_advice(
        quantized_models, tmp_path):
    model = tmp_path / "digits.dynamic-int8.onnx"
    shutil.copy(quantized_models["dynamic"], model)

    with pytest.raises(ModelToolError) as failure:
        convert(model, verify_samples=0)

    message = str(failure.value)
    assert "MNN 3.6.1 cannot convert the operator ConvInteger (nodes " in message
    assert "ConvInteger is a quantized operator. " + ADVICE in message
    assert leftovers(tmp_path) == []


def test_a_dynamic_int8_model_of_fully_connected_layers_converts_and_agrees(
        quantized_models, tmp_path, digits_npz):
    """MNN takes DynamicQuantizeLinear + MatMulInteger: such a model is not refused."""
    import onnx

    model = tmp_path / "mlp.dynamic-int8.onnx"
    shutil.copy(quantized_models["dynamic_mlp"], model)
    assert "MatMulInteger" in {n.op_type for n in onnx.load(str(model)).graph.node}

    report, _ = convert(model, data=digits_npz, verify_samples=100)

    assert report.figures["max_abs_diff"] <= 1e-4
    assert report.figures["agreement"] == 100.0
    assert leftovers(tmp_path) == ["mlp.dynamic-int8.mnn"]
    # MNN keeps such weights as float: the report says so and what to do for a small file.
    assert report.figures["size_ratio"] > 1
    assert any("stored its weights as float" in w and "--weight-quant-bits 8" in w
               for w in report.warnings)


def test_a_qdq_model_mnn_mishandles_is_refused_before_mnn_sees_it(tmp_path):
    model = qdq_conv_onnx(tmp_path / "qdq.onnx")

    with pytest.raises(ModelToolError) as failure:
        convert(model, verify_samples=0)

    message = str(failure.value)
    assert "DequantizeLinear nodes feed the Conv node 'conv'" in message
    assert message.endswith(ADVICE)
    assert leftovers(tmp_path) == []


# A tool job in a process of its own, with the check for quantized models taken out, so that
# MNN meets models it aborts or crashes on, as it would meet one that no check foresaw.
UNCHECKED_RUNNER = r'''
import json, sys
from pathlib import Path

import numpy as np

import workbench_mnn.quantized
from workbench.modeltools.errors import ModelToolError

workbench_mnn.quantized.refuse_what_mnn_breaks = lambda graph, source, version: None

action, model, result = sys.argv[1:4]
try:
    if action == "convert":
        from workbench.modeltools.context import ToolContext
        from workbench.modeltools.registry import get_tool

        spec = get_tool("mnn")
        spec.load_runner()(spec.resolve({"model": model, "verify_samples": 4}),
                           ToolContext(stages=spec.stages))
        outcome = {"error": None}
    else:
        from workbench.modeltools.runtimes import open_model

        session = open_model(Path(model))
        session.run(np.zeros([d or 1 for d in session.input_shape], np.float32))
        outcome = {"error": None}
except ModelToolError as exc:
    outcome = {"error": str(exc)}
Path(result).write_text(json.dumps(outcome))
'''


def run_unchecked(tmp_path: Path, action: str, model: Path) -> tuple[str, Path]:
    """``action`` ("convert" or "open") on ``model`` in a child process; the error message and
    the temporary folder the child used. The child must survive whatever MNN does."""
    runner = tmp_path / "unchecked_runner.py"
    runner.write_text(UNCHECKED_RUNNER)
    result = tmp_path / "result.json"
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    child = subprocess.run([sys.executable, str(runner), action, str(model), str(result)],
                           env={**os.environ, "TMPDIR": str(temporary)}, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, f"the process died ({child.returncode}): {child.stderr[-2000:]}"
    error = json.loads(result.read_text())["error"]
    assert error, "MNN was expected to fail on this model"
    return error, temporary


def kept_log(message: str, folder: Path) -> Path:
    """The MNN log file a message names; it must lie in ``folder``, exist, and be all that is
    left of the worker's files."""
    import re

    match = re.search(r"(/\S+/mnn\.log)", message)
    assert match, message
    log = Path(match.group(1))
    assert log.is_file() and folder in log.parents
    assert [p.name for p in log.parent.iterdir()] == ["mnn.log"]  # the inputs were removed
    return log


def test_the_converter_aborting_is_an_error_quoting_mnn_and_the_job_survives(
        quantized_models, tmp_path):
    model = tmp_path / "models" / "digits.int8.onnx"
    model.parent.mkdir()
    shutil.copy(quantized_models["static"], model)

    message, temporary = run_unchecked(tmp_path, "convert", model)

    assert message.startswith(f"{model}: MNN 3.6.1's converter crashed (SIGABRT): “")
    assert "std::out_of_range" in message
    assert message.endswith(ADVICE)
    log = kept_log(message, temporary)
    assert "Error for compute convolution shape" in log.read_text()
    assert leftovers(model.parent) == []


def test_a_converted_model_that_crashes_mnn_is_an_error_and_nothing_is_written(tmp_path):
    (tmp_path / "models").mkdir()
    model = qdq_conv_onnx(tmp_path / "models" / "qdq.onnx")

    message, temporary = run_unchecked(tmp_path, "convert", model)

    # MNN mishandles this model in more than one way from run to run: it crashes while loading
    # it, or refuses to load it. Either way the user gets a message and no file.
    if "crashed" in message:
        assert message.startswith(f"{model}: the converted model crashed MNN 3.6.1 (SIG")
        assert "while loading qdq.mnn" in message and "nothing was written" in message
        kept_log(message, temporary)
    else:
        assert message.startswith(f"{model}: the converted model qdq.mnn could not be loaded by MNN 3.6.1")
        assert ".partial" not in message and "nothing was written" in message
    assert leftovers(model.parent) == []


def test_a_crash_message_quotes_what_mnn_said_went_wrong():
    from workbench_mnn.worker_client import describe_exit, last_words

    printed = ["Start to Optimize the MNN Net...",
               "Error for compute convolution shape, inputCount:16, outputCount:32",
               "terminate called after throwing an instance of 'std::out_of_range'",
               "  what():  vector::_M_range_check: __n (which is 2) >= this->size() (which is 1)"]
    assert last_words(printed) == (
        "“Error for compute convolution shape, inputCount:16, outputCount:32 / terminate "
        "called after throwing an instance of 'std::out_of_range' / what():  "
        "vector::_M_range_check: __n (which is 2) >= this->size() (which is 1)”")
    assert last_words(["The device supports: i8sdot:0"]) == (
        "no error message (its last line: “The device supports: i8sdot:0”)")
    assert last_words([]) == "no message at all"
    assert (describe_exit(-6), describe_exit(-11), describe_exit(1)) == (
        "SIGABRT", "SIGSEGV", "exit status 1")


def test_opening_an_mnn_file_that_crashes_mnn_is_an_error_not_a_dead_process(tmp_path):
    from workbench_mnn.convert import converter_arguments
    from workbench_mnn.worker_client import MnnWorker

    source = qdq_conv_onnx(tmp_path / "qdq.onnx")
    target = tmp_path / "qdq.mnn"
    with MnnWorker() as worker:  # MNN converts it without complaint
        worker.convert(converter_arguments(source, target, {}), "converting qdq.onnx")
    assert target.stat().st_size > 0

    message, temporary = run_unchecked(tmp_path, "open", target)

    assert message.startswith(f"{target}: MNN 3.6.1 crashed (SIG")
    assert "loading it" in message and "convert the float ONNX model to MNN again" in message
    kept_log(message, temporary)


# --- nothing installed, nothing sent --------------------------------------------------------------

# Installed as sitecustomize (on PYTHONPATH) in the process that converts and in every Python
# process it starts, so each records what it does, in a file of its own in AUDIT_DIR: its
# command line, every import, every process start, every connection tried (refused), and the
# modules it held at the end.
AUDIT_HOOK = r"""
import atexit, json, os, sys

_folder = os.environ.get("WORKBENCH_TEST_AUDIT_DIR")
if _folder:
    _record = open(os.path.join(_folder, f"{os.getpid()}.jsonl"), "a", buffering=1,
                   encoding="utf-8")
    PROCESS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
               "os.fork", "os.forkpty", "pty.spawn", "os.startfile")
    NETWORK = ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
               "socket.gethostbyaddr", "socket.sendto", "socket.sendmsg", "socket.bind",
               "urllib.Request", "http.client.connect", "ftplib.connect", "smtplib.connect")

    def _write(kind, detail):
        _record.write(json.dumps([kind, detail]) + "\n")

    def _audit(event, args):
        if event == "import":
            _write("import", str(args[0]))
        elif event.startswith(PROCESS):
            _write(event, [str(a) for a in args[1]] if event == "subprocess.Popen"
                   else repr(args)[:300])
        elif event.startswith(NETWORK):
            _write(event, repr(args)[:300])
            raise PermissionError("no network in this test")

    _write("argv", list(sys.orig_argv))
    sys.addaudithook(_audit)
    atexit.register(lambda: _write("modules", sorted(sys.modules)))
"""

RUNNER = r"""
import json, sys
from pathlib import Path

import numpy as np

from workbench.extensions import load_extensions
from workbench.modeltools.context import ToolContext
from workbench.modeltools.runtimes import open_model

model, data, result = sys.argv[1:4]
spec = next(tool for tool in load_extensions().model_tools if tool.name == "mnn")
values = spec.resolve({"model": model, "data": data, "verify_samples": 50})
report = spec.load_runner()(values, ToolContext(stages=spec.stages))
session = open_model(Path(report.outputs[0]))
session.run_batched(np.zeros((3, 1, 8, 8), "float32"), 2)
Path(result).write_text(json.dumps({"report": report.to_json()}))
"""

FAKE_COMMANDS = ("pip", "pip3", "pip3.11", "pip3.12", "python", "python3", "python3.11", "uv")


def installed_packages() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "list", "--format=freeze",
                          "--disable-pip-version-check"], capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def telemetry_module(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("mnn.tools") or "aliyun" in lowered or "mnn_logger" in lowered


def audited_processes(folder: Path) -> list[dict]:
    """What each audited process recorded: argv, events (besides imports), imports, modules."""
    processes = []
    for file in sorted(folder.glob("*.jsonl")):
        process = {"argv": [], "events": [], "imports": [], "modules": []}
        for line in file.read_text().splitlines():
            kind, detail = json.loads(line)
            if kind in ("argv", "modules"):
                process[kind] = detail
            elif kind == "import":
                process["imports"].append(detail)
            else:
                process["events"].append([kind, detail])
        processes.append(process)
    return processes


def is_mnn_worker(argv: list[str]) -> bool:
    from workbench_mnn.worker_client import WORKER_MODULE

    return argv[:4] == [sys.executable, "-P", "-m", WORKER_MODULE]


@pytest.mark.slow
def test_a_conversion_starts_only_the_mnn_worker_opens_no_connection_and_installs_nothing(
        onnx_copy, digits_npz, tmp_path):
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    called = tmp_path / "fake-commands-called.log"
    for name in FAKE_COMMANDS:
        fake = fake_bin / name
        fake.write_text(f'#!/bin/sh\necho "$0 $*" >> "{called}"\nexit 1\n')
        fake.chmod(0o755)
    hook = tmp_path / "audit-hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(AUDIT_HOOK)
    audit = tmp_path / "audit"
    audit.mkdir()
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    result = tmp_path / "result.json"
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
           "WORKBENCH_TEST_AUDIT_DIR": str(audit), "PYTHONDONTWRITEBYTECODE": "1"}
    before = installed_packages()

    child = subprocess.run([sys.executable, str(runner), str(onnx_copy), str(digits_npz), str(result)],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert child.returncode == 0, child.stderr[-3000:]
    processes = audited_processes(audit)
    main = [p for p in processes if str(runner) in p["argv"]]
    workers = [p for p in processes if is_mnn_worker(p["argv"])]
    assert len(main) == 1 and len(main) + len(workers) == len(processes), \
        [p["argv"] for p in processes]
    # The tool starts one MNN worker, which converts and checks the model (so open_model, which
    # tries a file in a worker first, need not try this one again). Nothing else starts.
    started = main[0]["events"]
    assert [kind for kind, _ in started] == ["subprocess.Popen"], started
    assert is_mnn_worker(started[0][1]), started
    assert len(workers) == 1
    for worker in workers:
        assert worker["events"] == [], "a worker started a process or tried a connection"
        assert worker["modules"], "a worker did not end normally"
    for process in processes:
        assert [n for n in process["imports"] + process["modules"] if telemetry_module(n)] == []
    # MNN really ran: its converter in the worker that converted, its runtime everywhere.
    assert any("_tools" in worker["modules"] for worker in workers)
    assert all("MNN" in p["modules"] for p in processes)
    assert "_tools" not in main[0]["modules"]
    assert not called.exists(), called.read_text()
    # MNN's console output went to the tool's log, not to the process's stdout.
    assert child.stdout == ""
    assert json.loads(result.read_text())["report"]["figures"]["max_abs_diff"] <= 1e-4
    after = installed_packages()
    assert after == before
    assert not any(p.lower().startswith("aliyun") for p in after)
