"""Compare: variants of the digits model on the same data, in one table, with exports; and
clear errors for models that cannot take part."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.modeltools.conftest import RUN_ID
from workbench.modeltools.compare import SPEC, TABLE, run_compare
from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError, ToolCancelled
from workbench.modeltools.report import ToolReport

QUICK = {"samples": 64, "batch": 16, "repeats": 3}


def compare(models: list[Path], context: ToolContext | None = None, **values) -> ToolReport:
    context = context or ToolContext()
    context.stages = SPEC.stages
    report = run_compare(SPEC.resolve({"models": [str(m) for m in models], **values}), context)
    assert ToolReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    return report


def rows_by_model(report: ToolReport) -> dict[str, dict]:
    table = report.table(TABLE)
    return {row[0]: dict(zip(table.columns, row)) for row in table.rows}


# --- variants made without the other tools ----------------------------------------------------


def int8_variant(source: Path, target: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)
    return target


def pruned_variant(source: Path, target: Path, fraction: float = 0.5) -> Path:
    """Each weight matrix with its smallest ``fraction`` of entries set to zero."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    for i, init in enumerate(model.graph.initializer):
        weights = numpy_helper.to_array(init)
        if weights.ndim >= 2 and weights.dtype == np.float32:
            cut = np.quantile(np.abs(weights), fraction)
            model.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(np.where(np.abs(weights) < cut, 0, weights).astype(np.float32), init.name))
    onnx.save(model, str(target))
    return target


def fixed_batch_variant(source: Path, target: Path, batch: int) -> Path:
    import onnx

    model = onnx.load(str(source))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = batch
    del model.graph.value_info[:]
    onnx.save(model, str(target))
    return target


def linear_onnx(target: Path, channels: int = 1, classes: int = 10) -> Path:
    """A one-layer classifier of (N, channels, 8, 8) images into ``classes`` classes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(1).standard_normal((classes, channels * 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Flatten", ["images"], ["flat"], axis=1),
         helper.make_node("Gemm", ["flat", "w"], ["logits"], transB=1)], "linear",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", channels, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        [numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(target))
    return target


@pytest.fixture(scope="module")
def variants(digits_onnx, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("variants")
    reference = shutil.copy(digits_onnx, folder / "digits.onnx")
    return {"fp32": Path(reference),
            "int8": int8_variant(digits_onnx, folder / "digits.int8.onnx"),
            "pruned": pruned_variant(digits_onnx, folder / "digits.pruned.onnx"),
            "batch1": fixed_batch_variant(digits_onnx, folder / "digits.b1.onnx", 1),
            "batch8": fixed_batch_variant(digits_onnx, folder / "digits.b8.onnx", 8)}


def reference_accuracy(model: Path, npz: Path, samples: int) -> float:
    import onnxruntime as ort

    with np.load(npz) as data:
        x, y = data["x"][:samples], data["y"][:samples]
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    logits = session.run(None, {session.get_inputs()[0].name: x})[0]
    return float((logits.argmax(1) == y).mean() * 100)


# --- the comparison ---------------------------------------------------------------------------


def row(name: str, size: int, accuracy: float | None, agreement: float, p50: float | None) -> list:
    """A row of the Variants table (only the cells the summary reads are meaningful)."""
    return [name, "onnxruntime", size, 1.0, accuracy, agreement, 0.0, p50, p50, p50, p50]


def summary(rows: list[list]) -> tuple[dict, list[str]]:
    from workbench.modeltools.compare import _figures, _quality_warnings
    from workbench.modeltools.data import EvaluationData

    data = EvaluationData(np.zeros((4, 1)), None, "four samples")
    return _figures(rows, data, 16, 3, 1), _quality_warnings(rows)


def test_a_fastest_or_smallest_variant_is_named_only_when_clearly_ahead():
    figures, _ = summary([row("fp32.onnx", 1000, 90.0, 100.0, 1.000),
                          row("int8.onnx", 997, 90.0, 100.0, 0.997)])  # 0.3 % apart
    assert figures["fastest"] == figures["smallest"] == "about the same"
    figures, _ = summary([row("fp32.onnx", 1000, 90.0, 100.0, 1.0),
                          row("int8.onnx", 320, 90.0, 100.0, 0.5),
                          row("fp16.onnx", 520, 90.0, 100.0, 0.51)])  # 2 % behind the best
    assert figures["smallest"] == "int8.onnx" and figures["fastest"] == "about the same"
    figures, _ = summary([row("fp32.onnx", 1000, 90.0, 100.0, 1.0),
                          row("int8.onnx", 320, 90.0, 100.0, 0.5)])
    assert figures["fastest"] == "int8.onnx" and figures["fastest_p50_ms"] == 0.5


def test_a_variant_that_loses_accuracy_or_agreement_is_warned_about_by_name():
    _, warnings = summary([row("fp32.onnx", 1000, 95.0, 100.0, 1.0),
                           row("broken.int8.onnx", 320, 42.0, 44.0, 0.5),
                           row("fine.fp16.onnx", 520, 94.5, 99.5, 0.8),
                           row("drifting.onnx", 520, 95.0, 98.0, 0.8)])
    assert warnings == [
        "broken.int8.onnx is 53.0 points less accurate than fp32.onnx (42.0 % against 95.0 %)",
        "broken.int8.onnx predicts the class fp32.onnx predicts for only 44.0 % of the samples",
        "drifting.onnx predicts the class fp32.onnx predicts for only 98.0 % of the samples"]
    _, unlabelled = summary([row("fp32.onnx", 1000, None, 100.0, 1.0),
                             row("int8.onnx", 320, None, 99.9, 0.5)])
    assert unlabelled == []


def test_variants_share_one_table_against_the_reference(variants, digits_npz):
    events = []
    report = compare([variants["fp32"], variants["int8"], variants["pruned"]],
                     ToolContext(on_event=events.append), data=str(digits_npz), **QUICK)
    assert [e["name"] for e in events if e["event"] == "stage"] == \
        ["Open models", "Load data", "Evaluate", "Measure latency"]
    assert report.table(TABLE).columns == [
        "model", "runtime", "size (bytes)", "size ratio", "accuracy %", "agreement %", "max abs diff",
        "p50 batch 1 (ms)", "p90 batch 1 (ms)", "p50 batch 16 (ms)", "p90 batch 16 (ms)"]
    rows = rows_by_model(report)
    assert list(rows) == ["digits.onnx", "digits.int8.onnx", "digits.pruned.onnx"]
    reference, int8, pruned = rows.values()
    assert reference["runtime"] == "onnxruntime"
    assert reference["size (bytes)"] == variants["fp32"].stat().st_size and reference["size ratio"] == 1.0
    assert reference["agreement %"] == 100.0 and reference["max abs diff"] == 0.0
    assert reference["accuracy %"] == pytest.approx(reference_accuracy(variants["fp32"], digits_npz, 64), abs=1e-3)
    assert reference["accuracy %"] > 70
    assert int8["size ratio"] < 0.5 and 0 < int8["max abs diff"] < 5 and int8["agreement %"] > 80
    assert pruned["max abs diff"] > 0
    for row in rows.values():
        for batch in (1, 16):
            p50, p90 = row[f"p50 batch {batch} (ms)"], row[f"p90 batch {batch} (ms)"]
            assert 0 < p50 <= p90
    figures = report.figures
    assert figures["reference"] == "digits.onnx" and figures["variants"] == 2 and figures["samples"] == 64
    assert figures["max_abs_diff"] == max(int8["max abs diff"], pruned["max abs diff"])
    assert figures["min_agreement"] == min(int8["agreement %"], pruned["agreement %"])
    assert figures["smallest"] == "digits.int8.onnx"
    assert figures["fastest"] in [*rows, "about the same"]
    latency, accuracy = report.plots
    assert latency.categories == list(rows) and latency.y_label == "ms"
    assert [s["name"] for s in latency.series] == ["p50 batch 1", "p50 batch 16"]
    assert [s["name"] for s in accuracy.series] == ["accuracy %", "agreement %"]
    assert report.outputs == []
    # A warning names each variant that loses accuracy or disagrees with the reference.
    for name, row in list(rows.items())[1:]:
        worse = (reference["accuracy %"] - row["accuracy %"] > 1 or row["agreement %"] < 99)
        assert worse == any(w.startswith(name) for w in report.warnings), (name, report.warnings)
    assert all(w.startswith(("digits.int8.onnx", "digits.pruned.onnx")) for w in report.warnings)


def test_reference_picks_which_model_the_others_are_measured_against(variants, digits_npz):
    report = compare([variants["fp32"], variants["int8"]], data=str(digits_npz),
                     reference=str(variants["int8"]), **QUICK)
    rows = rows_by_model(report)
    assert list(rows) == ["digits.int8.onnx", "digits.onnx"]
    assert rows["digits.int8.onnx"]["max abs diff"] == 0.0 and rows["digits.onnx"]["max abs diff"] > 0
    # A reference that is not among the models is added in front of them.
    report = compare([variants["int8"]], data=str(digits_npz), reference=str(variants["pruned"]), **QUICK)
    assert list(rows_by_model(report)) == ["digits.pruned.onnx", "digits.int8.onnx"]


def test_fixed_batch_models_are_evaluated_whole_and_timed_only_at_their_batch(variants, digits_npz):
    report = compare([variants["fp32"], variants["batch1"], variants["batch8"]], data=str(digits_npz),
                     samples=20, batch=8, repeats=3)
    rows = rows_by_model(report)
    one, eight = rows["digits.b1.onnx"], rows["digits.b8.onnx"]
    # 20 samples in batches of 8: the last batch is padded and the padding dropped.
    for row in (one, eight):
        assert row["agreement %"] == 100.0 and row["max abs diff"] < 1e-4
        assert row["accuracy %"] == rows["digits.onnx"]["accuracy %"]
    assert one["p50 batch 1 (ms)"] > 0 and one["p50 batch 8 (ms)"] is None and one["p90 batch 8 (ms)"] is None
    assert eight["p50 batch 1 (ms)"] is None and eight["p50 batch 8 (ms)"] > 0
    assert any("digits.b1.onnx takes a fixed batch of 1" in w and "batch-8" in w for w in report.warnings)
    assert any("digits.b8.onnx takes a fixed batch of 8" in w and "batch-1" in w for w in report.warnings)
    latency = report.plots[0]
    assert latency.categories == ["digits.onnx", "digits.b1.onnx"] and len(latency.series) == 1


def test_the_table_is_exported_as_csv_and_the_report_as_markdown(variants, digits_npz, tmp_path):
    target_csv, target_md = tmp_path / "exports" / "variants.csv", tmp_path / "exports" / "variants.md"
    events = []
    report = compare([variants["fp32"], variants["int8"]], ToolContext(on_event=events.append),
                     data=str(digits_npz), csv=str(target_csv), markdown=str(target_md), **QUICK)
    assert report.outputs == [str(target_csv.resolve()), str(target_md.resolve())]
    assert [e["name"] for e in events if e["event"] == "stage"][-1] == "Write files"
    written = list(csv.reader(io.StringIO(target_csv.read_text())))
    table = report.table(TABLE)
    assert written[0] == table.columns and [r[0] for r in written[1:]] == ["digits.onnx", "digits.int8.onnx"]
    assert float(written[2][3]) == table.rows[1][3]
    markdown = target_md.read_text()
    assert markdown.startswith("# Compare 2 variants of digits.onnx")
    assert "## Variants" in markdown and "| digits.int8.onnx | onnxruntime |" in markdown
    assert sorted(p.name for p in target_csv.parent.iterdir()) == ["variants.csv", "variants.md"]


def test_inside_a_project_its_dataset_is_used(digits_project, digits_onnx):
    outputs = digits_project / "runs" / RUN_ID / "outputs"
    reference = Path(shutil.copy(digits_onnx, outputs / "model.onnx"))
    int8 = int8_variant(reference, outputs / "model.int8.onnx")
    report = compare([reference, int8], ToolContext(project=digits_project), samples=50, batch=10, repeats=2)
    assert report.figures["samples"] == 50 and "test split" in report.figures["data"]
    assert rows_by_model(report)["model.onnx"]["accuracy %"] > 70


def test_data_without_labels_gives_agreement_but_no_accuracy(variants, digits_npz, tmp_path):
    with np.load(digits_npz) as data:
        np.savez(tmp_path / "unlabelled.npz", x=data["x"][:30])
    report = compare([variants["fp32"], variants["int8"]], data=str(tmp_path / "unlabelled.npz"),
                     batch=8, repeats=2)
    assert all(row["accuracy %"] is None for row in rows_by_model(report).values())
    assert "accuracy" not in report.figures and any("no labels" in w for w in report.warnings)
    assert [s["name"] for s in report.plots[1].series] == ["agreement %"]


def test_cancel_during_latency_stops_and_writes_nothing(variants, digits_npz, tmp_path):
    context = ToolContext()

    def on_event(event):
        if event.get("name") == "Measure latency":
            context.cancel()

    context.on_event = on_event
    target = tmp_path / "out" / "table.csv"
    with pytest.raises(ToolCancelled):
        compare([variants["fp32"], variants["int8"]], context, data=str(digits_npz), csv=str(target),
                samples=16, batch=4, repeats=200)
    assert not target.exists() and list(target.parent.iterdir()) == []


# --- models and data that cannot be compared --------------------------------------------------


def test_one_model_alone_is_not_a_comparison(variants, digits_npz):
    with pytest.raises(ModelToolError, match=r"two or more models \(given: only .*digits\.onnx\)"):
        compare([variants["fp32"]], data=str(digits_npz))


def test_the_same_model_twice_is_refused(variants, digits_npz):
    with pytest.raises(ModelToolError, match=r"digits\.onnx is given twice"):
        compare([variants["fp32"], variants["int8"], variants["fp32"]], data=str(digits_npz))


def test_a_variant_with_another_input_shape_is_named(variants, digits_npz, tmp_path):
    other = linear_onnx(tmp_path / "rgb.onnx", channels=3)
    with pytest.raises(ModelToolError, match=r"rgb\.onnx takes inputs shaped \(\?, 3, 8, 8\), but the "
                                             r"reference .*digits\.onnx takes \(\?, 1, 8, 8\)"):
        compare([variants["fp32"], other], data=str(digits_npz))


def test_a_variant_with_other_outputs_is_named(variants, digits_npz, tmp_path):
    other = linear_onnx(tmp_path / "five-classes.onnx", classes=5)
    with pytest.raises(ModelToolError, match=r"five-classes\.onnx gives outputs of shape \(5,\)"):
        compare([variants["fp32"], other], data=str(digits_npz), **QUICK)


def test_data_of_the_wrong_shape_is_named(variants, tmp_path):
    np.savez(tmp_path / "small-images.npz", x=np.zeros((10, 1, 4, 4), np.float32), y=np.zeros(10, np.int64))
    with pytest.raises(ModelToolError, match=r"small-images\.npz has samples of shape \(1, 4, 4\), but "
                                             r".*digits\.onnx takes \(1, 8, 8\)"):
        compare([variants["fp32"], variants["int8"]], data=str(tmp_path / "small-images.npz"))


def test_a_file_that_is_not_a_model_is_named(variants, digits_npz, tmp_path):
    notes = tmp_path / "notes.onnx"
    notes.write_text("not a model\n")
    with pytest.raises(ModelToolError, match=r"notes\.onnx is not a model file: it is a text file"):
        compare([variants["fp32"], notes], data=str(digits_npz))


def test_a_format_without_a_runtime_is_named(variants, digits_npz, tmp_path):
    other = tmp_path / "digits.tflite"
    other.write_bytes(b"\x00" * 32)
    with pytest.raises(ModelToolError, match=r"digits\.tflite: no runtime runs \.tflite files"):
        compare([variants["fp32"], other], data=str(digits_npz))


def test_without_data_outside_a_project_it_asks_for_data(variants):
    with pytest.raises(ModelToolError, match=r"not inside a project.*--data"):
        compare([variants["fp32"], variants["int8"]])


def test_exports_may_not_overwrite_a_model_or_each_other(variants, digits_npz, tmp_path):
    # Compare has no -o: the message names the option that was given.
    with pytest.raises(ModelToolError, match="is also the input; choose another output path with --csv$"):
        compare([variants["fp32"], variants["int8"]], data=str(digits_npz), csv=str(variants["int8"]))
    with pytest.raises(ModelToolError, match="with --markdown$"):
        compare([variants["fp32"], variants["int8"]], data=str(digits_npz),
                markdown=str(variants["fp32"]))
    same = tmp_path / "both.txt"
    with pytest.raises(ModelToolError, match="give two files"):
        compare([variants["fp32"], variants["int8"]], data=str(digits_npz), csv=str(same), markdown=str(same))


def test_a_variant_that_fails_on_the_data_is_named(variants, digits_npz, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["images"], ["wide"], to=TensorProto.FLOAT),
         helper.make_node("Flatten", ["wide"], ["logits"], axis=1)], "half",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT16, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 64])])
    half = tmp_path / "half-inputs.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(half))
    with pytest.raises(ModelToolError, match=r"half-inputs\.onnx failed to run on a batch shaped"):
        compare([variants["fp32"], half], data=str(digits_npz), **QUICK)


def test_an_mnn_variant_runs_through_its_plugin_runtime(variants, digits_npz, tmp_path):
    from workbench.extensions import load_extensions
    from workbench.modeltools.params import ToolInvocation
    from workbench.modeltools.registry import all_tools
    from workbench.modeltools.running import run_tool

    # scripts/setup.sh installs plugins/workbench-mnn; without it this must fail, not skip.
    assert ".mnn" in load_extensions().model_runtimes and "mnn" in all_tools()
    converted = tmp_path / "digits.mnn"
    run_tool(ToolInvocation("mnn", {"model": str(variants["fp32"]), "output": str(converted),
                                    "verify_samples": 0}))
    report = run_tool(ToolInvocation("compare", {"models": [str(variants["fp32"]), str(converted)],
                                                 "data": str(digits_npz), **QUICK}))
    row = rows_by_model(report)["digits.mnn"]
    assert row["runtime"] != "onnxruntime" and row["agreement %"] == 100.0 and row["max abs diff"] < 1e-3
    assert row["p50 batch 1 (ms)"] > 0
