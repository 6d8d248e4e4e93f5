"""The report view: figures, tables sorted as numbers, the plot drawn with pyqtgraph (loaded only
when a chart's tab shows), warnings, and the CSV and Markdown exports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport
from workbench.modeltools.report import figure_label
from workbench.modeltools.widgets.result_view import SORT_ROLE, ResultView

from .conftest import screenshot, show_last_tab

REPORT = ToolReport(
    tool="compare",
    title="Compare 3 models",
    figures={"accuracy": 95.25, "accuracy_drop": 0.2, "max_abs_diff": 3.1e-06, "size_ratio": 0.32},
    tables=[ReportTable("Models", ["model", "size (KB)", "accuracy", "latency p50 (ms)"],
                        [["digits.onnx", 160, 95.25, 0.41], ["digits.int8.onnx", 52, 95.05, 0.39],
                         ["digits.pruned.onnx", 160, 94.1, None]]),
            ReportTable("Layers", ["layer", "error"], [["conv1", 0.002], ["fc", 0.0001]])],
    plots=[ReportPlot("Latency", ["batch 1", "batch 32"],
                      [{"name": "fp32", "values": [0.41, 3.2]}, {"name": "int8", "values": [0.39, 2.1]}],
                      y_label="ms")],
    outputs=["/tmp/compare.csv"],
    warnings=["digits.pruned.onnx: latency not measured"],
)


def test_the_figures_tables_plot_and_warnings_of_a_report_are_shown(qtbot):
    view = ResultView()
    qtbot.addWidget(view)
    view.resize(760, 520)
    view.show()
    assert view.empty.isVisible()
    view.set_report(REPORT)
    qtbot.wait(20)
    assert not view.empty.isVisible()
    assert view.findChild(type(view.title), "figure-value-max_abs_diff").full_text == "3.10e-06"
    assert figure_label("accuracy_drop") == "Accuracy drop"
    assert [view.tabs.tabText(i) for i in range(view.tabs.count())] == ["Models", "Layers", "Latency"]
    assert view.warnings.isVisible() and "latency not measured" in view.warnings.text()
    assert "/tmp/compare.csv" in view.outputs.text()
    screenshot(view, "result-view-compare")
    view.tabs.setCurrentIndex(2)
    qtbot.wait(20)
    screenshot(view, "result-view-plot")


def test_a_numeric_column_sorts_as_numbers_with_missing_values_first(qtbot):
    view = ResultView()
    qtbot.addWidget(view)
    view.set_report(REPORT)
    table = view.table_views[0]
    model = table.model()
    assert [model.index(r, 0).data() for r in range(3)] == [row[0] for row in REPORT.tables[0].rows]
    table.sortByColumn(3, Qt.SortOrder.AscendingOrder)
    assert [model.index(r, 3).data() for r in range(3)] == ["–", "0.39", "0.41"]
    table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
    assert [model.index(r, 1).data(SORT_ROLE) for r in range(3)] == [160.0, 160.0, 52.0]
    table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert model.index(0, 0).data() == "digits.int8.onnx"


def test_export_csv_writes_the_table_on_show_and_markdown_the_whole_report(qtbot, tmp_path):
    view = ResultView()
    qtbot.addWidget(view)
    view.export_folder = tmp_path
    view.set_report(REPORT)
    suggested = []
    view.ask_save_path = lambda title, path, filters: suggested.append(path) or str(tmp_path / "out.csv")
    view.tabs.setCurrentIndex(1)
    assert view.export_csv() == str(tmp_path / "out.csv")
    assert suggested == [str(tmp_path / "Layers.csv")]
    assert (tmp_path / "out.csv").read_text() == REPORT.tables[1].to_csv()
    view.ask_save_path = lambda title, path, filters: str(tmp_path / "report.md")
    view.export_markdown()
    text = (tmp_path / "report.md").read_text()
    assert text == REPORT.to_markdown() and "| digits.int8.onnx | 52 | 95.05 | 0.39 |" in text
    view.ask_save_path = lambda title, path, filters: ""  # cancelled
    assert view.export_csv() is None


def test_pyqtgraph_is_loaded_only_when_a_charts_tab_is_shown():
    """A tool window kept open for its report's table holds no pyqtgraph (nor NumPy under it)."""
    code = ("import sys\nfrom PySide6.QtWidgets import QApplication\napp = QApplication([])\n"
            "from workbench.modeltools.report import ToolReport, ReportPlot, ReportTable\n"
            "from workbench.modeltools.widgets.result_view import ResultView\n"
            "view = ResultView()\nview.show()\n"
            "view.set_report(ToolReport('inspect', 'x', figures={'a': 1}))\n"
            "print('pyqtgraph' in sys.modules)\n"
            "view.set_report(ToolReport('inspect', 'x', tables=[ReportTable('t', ['c'], [[1]])],\n"
            "                           plots=[ReportPlot('p', ['a'], [{'name': 's', 'values': [1]}])]))\n"
            "app.processEvents()\n"
            "print('pyqtgraph' in sys.modules, 'numpy' in sys.modules)\n"
            "view.tabs.setCurrentIndex(1)\napp.processEvents()\n"
            "print('pyqtgraph' in sys.modules, view.plot_widgets[0].plot is not None)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.stdout.split() == ["False", "False", "False", "True", "True"], result.stderr


QUANTIZED = ToolReport(
    tool="quantize",
    title="Quantize model.onnx: static int8, QDQ (uint8 activations, per-channel int8 weights, MinMax calibration)",
    figures={"mode": "static", "quantization": "static int8, QDQ (uint8 activations, MinMax calibration)",
             "size_bytes_fp32": 164451, "size_bytes_quantized": 51957, "size_ratio": 0.3159,
             "accuracy_fp32": 98.89, "accuracy_drop": 0.0, "latency_p50_ms_fp32": 0.0226,
             "parameters": 40506, "cpu_int8_instructions": "amx_int8, avx512_vnni, avx2",
             "evaluation_data": "digits: test split", "file": "/tmp/trial/runs/20261130-115638-865/outputs/model.onnx"},
)


def figure(view: ResultView, name: str) -> tuple[str, str]:
    caption = view.findChild(type(view.title), f"figure-label-{name}")
    value = view.findChild(type(view.title), f"figure-value-{name}")
    return caption.text(), value


def test_figure_cards_are_labelled_with_units_and_show_their_whole_value(qtbot, tmp_path):
    view = ResultView()
    qtbot.addWidget(view)
    view.resize(744, 560)
    view.show()
    view.base_dir = Path("/tmp/trial")
    view.set_report(QUANTIZED)
    qtbot.wait(20)
    expected = {"size_bytes_fp32": ("Size (fp32)", "164.5 KB"), "size_ratio": ("Size ratio", "0.316×"),
                "accuracy_fp32": ("Accuracy fp32", "98.9 %"), "latency_p50_ms_fp32": ("Latency p50 (fp32)", "0.0226 ms"),
                "parameters": ("Parameters", "40,506"), "accuracy_drop": ("Accuracy drop", "0 points"),
                "cpu_int8_instructions": ("CPU int8 instructions", "amx_int8, avx512_vnni, avx2")}
    for name, (label, text) in expected.items():
        caption, value = figure(view, name)
        assert (caption, value.text()) == (label, text)
    for name in QUANTIZED.figures:
        caption, value = figure(view, name)
        # Nothing cut: a value fits its card, wraps, or (a path) is elided with the whole as tooltip.
        fits = value.fontMetrics().horizontalAdvance(value.text()) <= value.width() or value.wordWrap()
        assert fits or "…" in value.text(), name
        if value.wordWrap():
            assert value.height() >= value.heightForWidth(value.width())
        if "…" in value.text():
            assert value.full_text in value.toolTip()
    assert figure(view, "file")[1].full_text == "runs/20261130-115638-865/outputs/model.onnx"
    assert figure(view, "quantization")[1].text() == QUANTIZED.figures["quantization"]
    screenshot(view, "result-view-figures")


def wide_table() -> ToolReport:
    columns = ["model", "runtime", "size (bytes)", "size ratio", "accuracy %", "agreement %", "max abs diff",
               "p50 batch 1 (ms)", "p90 batch 1 (ms)", "p50 batch 32 (ms)", "p90 batch 32 (ms)"]
    rows = [["model.onnx", "onnxruntime", 164451, 1, 98.89, 100, 0, 0.0245, 0.0257, 0.3492, 0.3705],
            ["model.pruned.onnx", "onnxruntime", 61380, 0.3732, 45.93, 45.93, 9.563, 0.0231, 0.0354, 0.199, 0.2305]]
    return ToolReport("compare", "Compare", figures={"variants": 1}, tables=[ReportTable("Variants", columns, rows)])


def test_table_columns_are_as_wide_as_their_content_and_a_wide_table_scrolls_sideways(qtbot):
    view = ResultView()
    qtbot.addWidget(view)
    view.resize(728, 560)
    view.show()
    view.set_report(wide_table())
    qtbot.wait(20)
    table = view.table_views[0]
    header = table.horizontalHeader()
    assert not header.stretchLastSection()
    for column in range(table.model().columnCount()):
        assert table.columnWidth(column) >= header.sectionSizeHint(column)  # the header reads whole
        assert table.columnWidth(column) >= table.sizeHintForColumn(column)  # and every cell
    assert table.horizontalScrollBar().maximum() > 0
    # The table's own scroll bar is on screen: the report does not scroll it away.
    assert table.horizontalScrollBar().isVisible()
    assert view.scroll.verticalScrollBar().maximum() == 0


def test_a_chart_legend_sits_above_the_plot_in_dark_text_with_a_swatch_per_series(qtbot):
    view = ResultView()
    qtbot.addWidget(view)
    view.resize(760, 520)
    view.show()
    view.set_report(REPORT)
    view.tabs.setCurrentIndex(2)
    qtbot.wait(50)
    holder = view.plot_widgets[0]
    assert holder.plot.getPlotItem().legend is None  # nothing drawn over the bars
    legend = holder.legend
    swatches = legend.findChildren(type(view.title), "legend-swatch")
    names = legend.findChildren(type(view.title), "legend-name")
    assert [n.text() for n in names] == ["fp32", "int8"]
    assert [s.colour for s in swatches] == ["#3b76c4", "#e08a2c"] and all(s.isVisible() for s in swatches)
    assert all(n.palette().color(n.foregroundRole()).lightness() < 80 for n in names)
    assert legend.geometry().bottom() < holder.plot.geometry().top()
    screenshot(view, "result-view-legend")


def test_a_line_charts_last_category_keeps_its_label(qtbot):
    """The per-layer cosine chart: its points sit half a category from the edges, so the last
    label under the axis is drawn whole."""
    categories = [f"layer{i}" for i in range(6)]
    report = ToolReport("quantize", "Quantize", plots=[ReportPlot(
        "Cosine", categories, [{"name": "int8", "values": [0.001 * i for i in range(6)]}], kind="line")])
    view = show_last_tab(qtbot, report)
    qtbot.wait(50)
    plot_item = view.plot_widgets[0].plot.getPlotItem()
    (left, right), _ = plot_item.getViewBox().viewRange()
    assert left <= -0.5 + 1e-9 and right >= len(categories) - 0.5 - 1e-9


def test_category_labels_that_would_overlap_are_thinned_keeping_the_first_and_last(qtbot):
    """Nine layer names under a narrow chart were drawn over each other."""
    from PySide6.QtGui import QFont, QFontMetrics

    categories = ["images"] + [f"node_Conv_{n}" for n in range(59, 66)] + ["node_linear"]
    report = ToolReport("quantize", "Quantize", plots=[ReportPlot(
        "Cosine", categories, [{"name": "int8", "values": [0.001 * i for i in range(9)]}], kind="line")])
    view = show_last_tab(qtbot, report, (560, 420))
    plot_item = view.plot_widgets[0].plot.getPlotItem()
    axis = plot_item.getAxis("bottom")

    def labelled() -> list[tuple[float, str]]:
        return axis._tickLevels[0]

    qtbot.waitUntil(lambda: 1 < len(labelled()) < len(categories), timeout=5000)
    assert labelled()[0][1] == "images" and labelled()[-1][1] == "node_linear"
    room = plot_item.getViewBox().width() / len(categories)
    widest = max(QFontMetrics(QFont()).horizontalAdvance(label) for _, label in labelled())
    positions = [position for position, _ in labelled()]
    assert all((b - a) * room >= widest for a, b in zip(positions, positions[1:]))
    assert len(axis._tickLevels[1]) == len(categories) - len(labelled())  # the others still ticked
    # The last label reaches past the axis' end by half its width less half a category; pyqtgraph
    # hides such a label unless its tolerance covers that.
    overhang = QFontMetrics(QFont()).horizontalAdvance("node_linear") / 2 - room / 2
    tolerance = axis.style["hideOverlappingLabels"]
    assert tolerance is not True and tolerance >= overhang
    view.resize(1800, 420)
    qtbot.waitUntil(lambda: len(labelled()) == len(categories), timeout=5000)
