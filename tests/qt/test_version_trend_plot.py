"""The metric-across-versions plot the Registry and the Pipeline share: the chosen metric's points
by version number, failed ones drawn over, words above a point, the selected point ringed, a
click naming its version, a tooltip on a point, and nothing built before there is something to
draw."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from workbench.qt.version_trend_plot import TrendPoint, VersionTrendPlot

POINTS = {"val_acc": [TrendPoint(0, 0.81), TrendPoint(2, 0.86, failed=True, note="a gate failed"),
                      TrendPoint(1, 0.88, label="production")],
          "val_loss": [TrendPoint(0, 0.19), TrendPoint(1, 0.12)]}


def make_plot(qtbot) -> VersionTrendPlot:
    plot = VersionTrendPlot("version", "test-plot-metric", "test-plot")
    qtbot.addWidget(plot)
    plot.resize(500, 300)
    return plot


def test_nothing_to_draw_shows_the_words_given_and_builds_no_plot(qtbot):
    plot = make_plot(qtbot)
    plot.show()
    plot.show_points({}, "val_acc", "No metrics yet.")
    assert plot.empty_label.isVisible() and plot.empty_label.text() == "No metrics yet."
    assert plot.plotted() == ([], []) and plot.metric_box.count() == 0


def test_the_chosen_metric_is_drawn_by_version_and_kept_across_refreshes(qtbot):
    plot = make_plot(qtbot)
    plot.show_points(POINTS, preferred="val_acc")
    assert plot.plotted() == ([], [])  # hidden: pyqtgraph is not asked for yet
    plot.show()
    qtbot.waitUntil(lambda: plot.plotted()[0] == [0.0, 1.0, 2.0])
    assert plot.plotted()[1] == [0.81, 0.88, 0.86] and not plot.empty_label.isVisible()
    plot.set_metric("val_loss")
    assert plot.plotted() == ([0.0, 1.0], [0.19, 0.12])
    plot.show_points(POINTS, preferred="val_acc")
    assert plot.chosen_metric == "val_loss"
    plot.show_points({"val_acc": POINTS["val_acc"]}, preferred="val_acc")
    assert plot.chosen_metric == "val_acc"


def test_failed_points_labels_and_the_selected_ring_are_drawn_over_the_line(qtbot):
    plot = make_plot(qtbot)
    plot.show()
    plot.show_points(POINTS, preferred="val_acc")
    plot.select_number(1)
    qtbot.waitUntil(lambda: plot._ring is not None)
    assert [tuple(spot.pos()) for spot in plot._failed.points()] == [(2.0, 0.86)]
    assert [tuple(spot.pos()) for spot in plot._ring.points()] == [(1.0, 0.88)]
    assert [label.textItem.toPlainText() for label in plot._labels] == ["production"]
    plot.select_number(None)
    assert list(plot._ring.points()) == []


def test_a_point_says_its_version_and_value_when_hovered_and_names_its_version_when_clicked(qtbot):
    plot = make_plot(qtbot)
    plot.show()
    plot.show_points(POINTS, preferred="val_acc")
    qtbot.waitUntil(lambda: plot._plot_widget is not None and plot._plot_widget.isVisible())
    assert plot.point_tooltip(2) == "version 0002\nval_acc = 0.86\na gate failed"
    assert plot.point_tooltip(1) == "version 0001\nval_acc = 0.88\nproduction" and plot.point_tooltip(5) == ""
    widget, view = plot._plot_widget, plot._plot.getViewBox()
    qtbot.wait(50)
    at = widget.mapFromScene(view.mapViewToScene(QPointF(1, 0.88)))
    QTest.mouseMove(widget.viewport(), QPoint(at.x(), at.y()))
    qtbot.waitUntil(lambda: view.toolTip() == plot.point_tooltip(1))
    with qtbot.waitSignal(plot.sig_number_clicked) as clicked:
        QTest.mouseClick(widget.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(at.x(), at.y()))
    assert clicked.args == [1]
