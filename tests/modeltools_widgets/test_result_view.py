"""The report view: figures, tables sorted as numbers, the plot drawn with pyqtgraph (loaded only
for a report that has one), warnings, and the CSV and Markdown exports."""

from __future__ import annotations

import subprocess
import sys

from PySide6.QtCore import Qt

from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport
from workbench.modeltools.widgets.result_view import SORT_ROLE, ResultView, figure_title

from .conftest import screenshot

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
    assert figure_title("accuracy_drop") == "Accuracy drop"
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


def test_pyqtgraph_is_loaded_only_for_a_report_with_a_plot():
    code = ("import sys\nfrom PySide6.QtWidgets import QApplication\napp = QApplication([])\n"
            "from workbench.modeltools.report import ToolReport, ReportPlot\n"
            "from workbench.modeltools.widgets.result_view import ResultView\n"
            "view = ResultView()\nview.set_report(ToolReport('inspect', 'x', figures={'a': 1}))\n"
            "print('pyqtgraph' in sys.modules)\n"
            "view.set_report(ToolReport('inspect', 'x', plots=[ReportPlot('p', ['a'], [{'name': 's', 'values': [1]}])]))\n"
            "print('pyqtgraph' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["False", "True"], result.stderr
