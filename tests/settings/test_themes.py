"""Light, dark and "follow the system": the whole application's palette, the editor's colours
and its Pygments style, switched live."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from workbench.qt import theme


def _keyword_colour(tab) -> str:
    return tab.highlighter.formats["keyword"].foreground().color().name()


def test_the_dark_setting_darkens_the_application_and_the_editor(open_window, project_root, user_settings_file):
    user_settings_file.write_text("[appearance]\ntheme = \"dark\"\n")
    window = open_window()
    tab = window.open_file(project_root / "a.py")
    palette = QApplication.instance().palette()
    assert palette.color(QPalette.ColorRole.Window).lightness() < 60
    assert palette.color(QPalette.ColorRole.WindowText).lightness() > 180
    assert QApplication.instance().style().name().lower() == "fusion"
    assert theme.current_theme() == "dark" and theme.BACKGROUND == "#1e1e1e"
    assert "#1e1e1e" in tab.editor.styleSheet()
    assert _keyword_colour(tab) == "#c678dd"  # one-dark's keyword colour


def test_switching_the_theme_applies_live_to_the_palette_the_editor_and_its_highlighting(
        open_window, project_root):
    window = open_window()
    tab = window.open_file(project_root / "a.py")
    light_keyword = _keyword_colour(tab)
    window.commands.execute("workbench.theme.dark")
    assert window.settings.value("appearance.theme") == "dark"
    assert QApplication.instance().palette().color(QPalette.ColorRole.Base).lightness() < 60
    assert _keyword_colour(tab) != light_keyword and "#1e1e1e" in tab.editor.styleSheet()
    block = tab.editor.document().firstBlock()
    colours = {r.format.foreground().color().name() for r in block.layout().formats()}
    assert "#c678dd" in colours  # "def" recoloured, not only the formats swapped
    window.commands.execute("workbench.theme.light")
    assert theme.BACKGROUND == "#ffffff" and _keyword_colour(tab) == light_keyword


def test_follow_the_system_is_light_where_the_system_does_not_say(open_window):
    window = open_window()
    window.settings.set("appearance.theme", "system")
    assert theme.resolve_theme("system") == "light" and theme.current_theme() == "light"


def test_every_colour_role_exists_in_both_themes_and_differs_where_it_matters():
    light, dark = (set(theme._COLOURS[name]) for name in theme.THEMES)
    assert light == dark
    for name in ("BACKGROUND", "FOREGROUND", "CURRENT_LINE", "GUTTER_BACKGROUND", "DIFF_ADDED", "MUTED_TEXT"):
        assert QColor(theme.colour(name, "light")).lightness() != QColor(theme.colour(name, "dark")).lightness()


def test_the_diff_editor_takes_the_dark_colours_and_back(qtbot):
    from workbench.git.diff_rows import ADDED
    from workbench.git.widgets.diff_panes import CURRENT_HEADER, ROW_BACKGROUNDS

    try:
        theme.apply_theme("dark")
        assert ROW_BACKGROUNDS[ADDED].name() == theme.colour("DIFF_ADDED", "dark")
        assert CURRENT_HEADER.name() == theme.colour("DIFF_CURRENT_HEADER", "dark")
    finally:
        theme.apply_theme("light")
    assert ROW_BACKGROUNDS[ADDED].name() == theme.colour("DIFF_ADDED", "light")


def test_the_training_curves_take_the_themes_background_and_axes_live(qtbot):
    from workbench.training.widgets.curves import CurvesView

    curves = CurvesView()
    qtbot.addWidget(curves)
    curves.resize(900, 260)
    curves.show()
    curves.set_runs(["r1"])
    curves.add_records("r1", [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}])
    qtbot.waitUntil(lambda: curves.plotted("r1", "loss") == 2, timeout=20_000)
    widget = curves._plot_widgets["loss"]
    try:
        theme.apply_theme("dark")
        assert widget.backgroundBrush().color().name() == theme.colour("CHART_BACKGROUND", "dark")
        assert widget.getPlotItem().getAxis("left").textPen().color().name() == theme.colour("CHART_FOREGROUND", "dark")
    finally:
        theme.apply_theme("light")
    assert widget.backgroundBrush().color().name() == "#ffffff"


def test_a_themed_style_sheet_follows_the_theme_and_can_be_taken_away(qtbot):
    from PySide6.QtWidgets import QLabel

    label = QLabel("no match")
    qtbot.addWidget(label)
    try:
        theme.set_themed_style_sheet(label, "color: @ERROR_TEXT;")
        assert label.styleSheet() == f"color: {theme.colour('ERROR_TEXT', 'light')};"
        theme.apply_theme("dark")
        assert label.styleSheet() == f"color: {theme.colour('ERROR_TEXT', 'dark')};"
        theme.set_themed_style_sheet(label, "")
        theme.apply_theme("light")
        assert label.styleSheet() == ""
    finally:
        theme.apply_theme("light")


def test_the_editors_notices_and_find_bar_error_are_readable_on_dark(open_window, project_root, qtbot):
    window = open_window()
    tab = window.open_file(project_root / "a.py")
    window.commands.execute("workbench.theme.dark")
    bar = tab.notices.show_notice("changed-on-disk", "a.py changed on disk", [("Reload", lambda: None)])
    assert theme.colour("INFO_BACKGROUND", "dark") in bar.styleSheet()
    window.commands.execute("workbench.theme.light")
    assert theme.colour("INFO_BACKGROUND", "light") in bar.styleSheet()
    window.commands.execute("workbench.theme.dark")
    tab.show_find()
    tab.find_bar.regex_button.setChecked(True)
    tab.find_bar.find_edit.setText("(")
    qtbot.waitUntil(lambda: theme.colour("ERROR_TEXT", "dark") in tab.find_bar.count_label.styleSheet(), timeout=3000)


def test_a_tool_reports_figures_and_charts_are_readable_on_dark_and_back(qtbot):
    from tests.modeltools_widgets.conftest import show_last_tab
    from workbench.modeltools.report import ReportPlot, ToolReport

    report = ToolReport("compare", "Compare", figures={"max_abs_diff": 3.1e-06},
                        plots=[ReportPlot("Latency", ["batch 1", "batch 32"],
                                          [{"name": "fp32", "values": [0.4, 3.2]},
                                           {"name": "int8", "values": [0.3, 2.1]}], y_label="ms")])
    view = show_last_tab(qtbot, report)
    qtbot.waitUntil(lambda: bool(view.plot_widgets), timeout=20_000)
    value = view.findChild(type(view.title), "figure-value-max_abs_diff")
    chart = view.plot_widgets[0]
    legend_name = chart.legend.findChildren(type(view.title), "legend-name")[0]

    def text_colour(label) -> str:
        label.ensurePolished()
        return label.palette().color(label.foregroundRole()).name()

    try:
        theme.apply_theme("dark")
        # A figure's value was dark grey on the dark card: unreadable.
        assert text_colour(value) == theme.colour("FOREGROUND", "dark")
        assert chart.plot.backgroundBrush().color().name() == theme.colour("CHART_BACKGROUND", "dark")
        axis = chart.plot.getPlotItem().getAxis("left")
        assert axis.textPen().color().name() == theme.colour("CHART_FOREGROUND", "dark")
        assert text_colour(legend_name) == theme.colour("CHART_FOREGROUND", "dark")
    finally:
        theme.apply_theme("light")
    assert text_colour(value) == theme.colour("FOREGROUND", "light")
    assert chart.plot.backgroundBrush().color().name() == "#ffffff"
