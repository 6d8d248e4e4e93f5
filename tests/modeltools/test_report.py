"""A report's figures as people read them: labels with the usual spelling of acronyms and the
unit moved to the value, values with their units; the text report uses them, the JSON does not."""

from __future__ import annotations

import json

import pytest

from workbench.modeltools.report import ToolReport, figure_label, format_figure, format_size


@pytest.mark.parametrize("name, label", [
    ("max_abs_diff", "Max abs diff"),
    ("size_bytes_fp32", "Size (fp32)"),
    ("size_bytes_before", "Size (before)"),
    ("latency_p50_ms_fp32", "Latency p50 (fp32)"),
    ("latency_p50_onnxruntime_ms", "Latency p50 onnxruntime"),
    ("cpu_int8_instructions", "CPU int8 instructions"),
    ("onnx_size_kb", "ONNX size"),
    ("mnn_size_kb", "MNN size"),
    ("macs", "MACs"),
    ("ir_version", "IR version"),
    ("accuracy_fp16", "Accuracy fp16"),
    ("p99_ms", "p99"),
    ("fastest_p50_ms", "Fastest p50"),
])
def test_a_figure_label_spells_acronyms_and_leaves_the_unit_to_the_value(name, label):
    assert figure_label(name) == label


@pytest.mark.parametrize("name, value, shown", [
    ("size_bytes_fp32", 164451, "164.5 KB"),
    ("size_bytes", 1_234_567, "1.2 MB"),
    ("source_size_bytes", 512, "512 B"),
    ("onnx_size_kb", 160.6, "164.5 KB"),  # the tools' KB are KiB
    ("fastest_p50_ms", 0.0213, "0.0213 ms"),
    ("latency_p90_ms_quantized", 1534.2, "1,534 ms"),
    ("accuracy", 98.89, "98.9 %"),
    ("agreement", 100, "100 %"),
    ("sparsity", 74.32, "74.3 %"),
    ("coverage_percent", 12.5, "12.5 %"),
    ("accuracy_drop", 52.96, "53.0 points"),
    ("smallest_size_ratio", 0.3159, "0.316×"),
    ("latency_ratio", 1.174, "1.17×"),
    ("parameters", 40506, "40,506"),
    ("opset", 18, "18"),
    ("max_abs_diff", 4.77e-06, "4.77e-06"),
    ("checkpoint_keys", ["epoch", "optimizer"], "epoch, optimizer"),
    ("final_loss", None, "–"),
    ("per_channel", True, "yes"),
    ("reference", "model.onnx", "model.onnx"),
])
def test_a_figure_value_carries_the_unit_its_name_tells(name, value, shown):
    assert format_figure(name, value) == shown


def test_sizes_count_in_thousands_as_file_managers_do():
    assert [format_size(n) for n in (999, 1000, 181_576, 999_960, 2_500_000_000)] == \
        ["999 B", "1.0 KB", "181.6 KB", "1.0 MB", "2.5 GB"]


def test_the_text_report_uses_labels_and_units_and_the_json_stays_raw():
    report = ToolReport("quantize", "Quantize model.onnx",
                        figures={"size_bytes_fp32": 164451, "size_ratio": 0.3159, "accuracy_fp32": 98.89})
    lines = report.to_text().splitlines()
    assert lines == ["Quantize model.onnx",
                     "  Size (fp32)    164.5 KB",
                     "  Size ratio     0.316×",
                     "  Accuracy fp32  98.9 %"]
    assert json.loads(json.dumps(report.to_json()))["figures"] == {
        "size_bytes_fp32": 164451, "size_ratio": 0.3159, "accuracy_fp32": 98.89}
