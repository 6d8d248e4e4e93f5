"""The MNN plugin (plugins/workbench-mnn): ONNX to MNN with real MNN 3.6.1, checked against
onnxruntime; clear errors for what MNN cannot convert; the .mnn runtime; and proof that a
conversion neither starts a process, nor opens a connection, nor installs anything."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from workbench.modeltools.errors import ModelToolError

pytest.importorskip("workbench_mnn", reason="the MNN plugin is not installed (scripts/setup.sh)")


def mnn_spec():
    from workbench.modeltools.registry import get_tool

    return get_tool("mnn")


def convert(model: Path, context=None, on_stage: dict | None = None, **values):
    """The tool run in this process; returns (report, log lines). ``on_stage`` maps a stage name
    to a function called when the tool enters it."""
    from workbench.modeltools.context import ToolContext

    spec = mnn_spec()
    lines: list[str] = []
    context = context or ToolContext(stages=spec.stages)

    def on_event(event):
        if event["event"] == "log":
            lines.append(event["text"])
        elif event["event"] == "stage" and event["name"] in (on_stage or {}):
            on_stage[event["name"]]()

    context.on_event = on_event
    report = spec.load_runner()(spec.resolve({"model": model, **values}), context)
    return report, lines


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".mnn", ".partial"))


def tiny_onnx(path: Path, op: str, domain: str = "", name: str = "odd_one") -> Path:
    """A one-node ONNX model x (1, 4) -> op -> y (1, 4)."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x"], ["y"], name=name, domain=domain)
    graph = helper.make_graph([node], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    return path


def fixed_batch_onnx(path: Path) -> Path:
    """x (1, 4, 2, 2) -> Reshape to the constant (1, 16) -> MatMul -> y (1, 3): the batch is baked
    into the graph, as in models exported without a dynamic batch axis."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weights = numpy_helper.from_array(rng.standard_normal((16, 3)).astype(np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, 16], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["flat"]),
         helper.make_node("MatMul", ["flat", "w"], ["y"])], "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [weights, shape])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


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
    assert figures["mnn_size_kb"] == pytest.approx(target.stat().st_size / 1024)
    assert figures["latency_p50_mnn_ms"] > 0 and figures["latency_p50_onnxruntime_ms"] > 0
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
    with pytest.raises(ModelToolError, match="is also the input"):
        convert(onnx_copy, output=onnx_copy)


def test_cancelling_during_the_check_leaves_no_file(onnx_copy):
    from workbench.modeltools.context import ToolContext
    from workbench.modeltools.errors import ToolCancelled

    context = ToolContext(stages=mnn_spec().stages)
    with pytest.raises(ToolCancelled):
        convert(onnx_copy, context=context, verify_samples=64,
                on_stage={"Verify": context.cancel})
    assert leftovers(onnx_copy.parent) == []


def test_the_runtime_refuses_a_file_that_is_not_an_mnn_model(tmp_path, digits_onnx):
    from workbench.modeltools.runtimes import open_model

    for name, content in (("text.mnn", b"hello\n"), ("empty.mnn", b""),
                          ("onnx.mnn", digits_onnx.read_bytes())):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ModelToolError, match=f"{name} is not a model MNN 3.6.1 can load"):
            open_model(tmp_path / name)


# --- nothing installed, nothing sent --------------------------------------------------------------

RUNNER = r'''
import json, sys

events = []
PROCESS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
           "os.forkpty", "pty.spawn", "os.startfile")
NETWORK = ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
           "socket.sendto", "socket.sendmsg", "socket.bind", "urllib.Request",
           "http.client.connect", "ftplib.connect", "smtplib.connect")


def audit(event, args):
    if event == "import":
        events.append(["import", str(args[0])])
    elif event.startswith(PROCESS):
        events.append([event, repr(args)[:300]])
    elif event.startswith(NETWORK):
        events.append([event, repr(args)[:300]])
        raise PermissionError("no network in this test")


sys.addaudithook(audit)

from pathlib import Path

from workbench.extensions import load_extensions
from workbench.modeltools.context import ToolContext
from workbench.modeltools.runtimes import open_model

model, data, result = sys.argv[1:4]
spec = next(tool for tool in load_extensions().model_tools if tool.name == "mnn")
values = spec.resolve({"model": model, "data": data, "verify_samples": 50})
report = spec.load_runner()(values, ToolContext(stages=spec.stages))
session = open_model(Path(report.outputs[0]))
session.run_batched(__import__("numpy").zeros((3, 1, 8, 8), "float32"), 2)
Path(result).write_text(json.dumps({"events": events, "report": report.to_json(),
                                    "modules": sorted(sys.modules)}))
'''

FAKE_COMMANDS = ("pip", "pip3", "pip3.11", "pip3.12", "python", "python3", "python3.11", "uv")


def installed_packages() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "list", "--format=freeze",
                          "--disable-pip-version-check"], capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def telemetry_module(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("mnn.tools") or "aliyun" in lowered or "mnn_logger" in lowered


@pytest.mark.slow
def test_a_conversion_starts_no_process_opens_no_connection_and_installs_nothing(
        onnx_copy, digits_npz, tmp_path):
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    called = tmp_path / "fake-commands-called.log"
    for name in FAKE_COMMANDS:
        fake = fake_bin / name
        fake.write_text(f'#!/bin/sh\necho "$0 $*" >> "{called}"\nexit 1\n')
        fake.chmod(0o755)
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(RUNNER))
    result = tmp_path / "result.json"
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONDONTWRITEBYTECODE": "1"}
    before = installed_packages()

    child = subprocess.run([sys.executable, str(runner), str(onnx_copy), str(digits_npz), str(result)],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert child.returncode == 0, child.stderr[-3000:]
    outcome = json.loads(result.read_text())
    events = outcome["events"]
    started = [e for e in events if e[0] != "import"]
    assert started == [], "processes started or connections tried"
    imported = [name for kind, name in events if kind == "import"]
    assert [n for n in imported if telemetry_module(n)] == []
    assert [n for n in outcome["modules"] if telemetry_module(n)] == []
    assert "MNN" in outcome["modules"] and "_tools" in outcome["modules"]  # MNN really ran
    assert not called.exists(), called.read_text()
    # MNN's console output went to the tool's log, not to the process's stdout.
    assert child.stdout == ""
    assert outcome["report"]["figures"]["max_abs_diff"] <= 1e-4
    after = installed_packages()
    assert after == before
    assert not any(p.lower().startswith("aliyun") for p in after)
