"""A project window's docks come back exactly as the user left them, the capabilities' docks
(Source Control, Runs, Models: added after the first paint) included."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QTabBar

from workbench.app.screenshot import settle
from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow

# Small enough for the offscreen screen (800 × 800), so the saved geometry comes back as it was.
WINDOW_SIZE = (800, 720)


@pytest.fixture
def project(tmp_path):
    return load_project(create_from_template("digits", tmp_path / "digits").root)


@pytest.fixture
def open_window(qtbot):
    def open_(project) -> ProjectWindow:
        window = ProjectWindow(project)
        qtbot.addWidget(window)
        with qtbot.waitSignal(window.sig_capabilities_installed, timeout=30_000):
            window.show()
        # Until its listings are in: a panel may take more room while it loads, and the saved
        # layout is applied again when it does.
        settle(QApplication.instance(), window)
        return window

    return open_


def dock(window, name: str) -> QDockWidget:
    return window.findChild(QDockWidget, f"dock-{name}")


def layout_of(window) -> dict:
    """Per dock: area, shown, tab mates, whether its tab is in front, and its size when it can
    be seen (a tab behind another keeps a stale size)."""
    fronts = set()
    for bar in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
        if bar.isVisibleTo(window) and bar.currentIndex() >= 0:
            fronts.add(bar.tabText(bar.currentIndex()))
    layout = {}
    for each in window.findChildren(QDockWidget):
        mates = sorted(other.objectName() for other in window.tabifiedDockWidgets(each))
        front = not mates or each.windowTitle() in fronts
        area = window.dockWidgetArea(each)
        width = each.width()
        if area in (Qt.DockWidgetArea.TopDockWidgetArea, Qt.DockWidgetArea.BottomDockWidgetArea):
            # The offscreen screen is barely wider than the window, so the window may come back
            # a pixel or two narrower: what the dock leaves of the window's width is compared.
            width -= window.width()
        layout[each.objectName()] = {
            "area": area.name,
            "shown": not each.isHidden(),
            "tab_mates": mates,
            "front": front,
            "size": (width, each.height()) if front and not each.isHidden() else None,
        }
    return layout


def test_the_first_layout_comes_back_after_close_and_reopen(open_window, project, qtbot):
    window = open_window(project)
    window.resize(*WINDOW_SIZE)
    qtbot.wait(100)
    first = layout_of(window)
    assert first["dock-scm"]["tab_mates"] == ["dock-explorer", "dock-find-in-files", "dock-outline"]
    assert first["dock-explorer"]["front"]
    window.close()

    again = open_window(project)
    assert layout_of(again) == first
    again.close()
    assert layout_of(open_window(project)) == first  # and stays so


def test_a_layout_the_user_changed_comes_back_after_close_and_reopen(open_window, project, qtbot):
    window = open_window(project)
    window.resize(*WINDOW_SIZE)
    qtbot.wait(100)
    runs, models, scm, explorer = (dock(window, name) for name in ("runs", "models", "scm", "explorer"))
    runs.show()
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, runs)
    window.tabifyDockWidget(runs, models)  # Models moves beside Runs, on the right
    window.resizeDocks([runs], [260], Qt.Orientation.Horizontal)
    window.resizeDocks([explorer], [220], Qt.Orientation.Horizontal)
    scm.raise_()  # Source Control in front of the Explorer
    qtbot.wait(100)
    changed = layout_of(window)
    assert changed["dock-models"] == {**changed["dock-models"], "area": "RightDockWidgetArea",
                                      "tab_mates": ["dock-runs"], "front": True}
    assert changed["dock-scm"]["front"] and not changed["dock-explorer"]["front"]
    window.close()

    assert layout_of(open_window(project)) == changed


def test_a_hidden_capability_dock_stays_hidden(open_window, project, qtbot):
    window = open_window(project)
    window.resize(*WINDOW_SIZE)
    qtbot.wait(100)
    window.commands.execute("view.toggle.models")
    assert dock(window, "models").isHidden()
    qtbot.wait(100)
    first = layout_of(window)
    window.close()

    again = open_window(project)
    assert dock(again, "models").isHidden()
    assert layout_of(again) == first


def reopened_with_a_new_dock(open_window, project, qtbot, monkeypatch, capability: str):
    """The layout saved by a window without ``capability`` (a name in BUILT_IN), then a window
    with it on the same project and its layout: (before, window, layout)."""
    from workbench.ui import capabilities

    everything = capabilities.BUILT_IN
    monkeypatch.setattr(capabilities, "BUILT_IN", tuple(e for e in everything if capability not in e))
    window = open_window(project)
    window.resize(*WINDOW_SIZE)
    qtbot.wait(100)
    before = layout_of(window)
    window.close()

    monkeypatch.setattr(capabilities, "BUILT_IN", everything)
    again = open_window(project)
    return before, again, layout_of(again)


def test_a_dock_the_saved_layout_does_not_know_goes_under_the_explorer_with_room(open_window, project, qtbot,
                                                                                 monkeypatch):
    before, again, layout = reopened_with_a_new_dock(open_window, project, qtbot, monkeypatch, "modeltools")
    # The known docks are where they were (the Explorer's group gives the Models dock room).
    assert {name: {**layout[name], "size": None} for name in before} == {
        name: {**entry, "size": None} for name, entry in before.items()}
    assert layout["dock-runs"] == before["dock-runs"]
    models, explorer = dock(again, "models"), dock(again, "explorer")
    assert layout["dock-models"]["area"] == "LeftDockWidgetArea" and layout["dock-models"]["tab_mates"] == []
    assert models.y() > explorer.y() + explorer.height()  # under the Explorer and its tab mates
    assert models.height() > models.minimumSizeHint().height() + 20  # not squeezed to its least


def test_a_devices_dock_the_saved_layout_does_not_know_joins_the_runs_tabs(open_window, project, qtbot,
                                                                           monkeypatch):
    before, again, layout = reopened_with_a_new_dock(open_window, project, qtbot, monkeypatch, "device")
    assert layout["dock-devices"]["area"] == "BottomDockWidgetArea"
    assert "dock-runs" in layout["dock-devices"]["tab_mates"] and not layout["dock-devices"]["front"]
    assert layout["dock-runs"]["front"] and layout["dock-runs"]["size"][0] == before["dock-runs"]["size"][0]

    def without_devices(entry: dict) -> dict:
        # Other docks of the Runs tab group (the Console's) gain the Devices dock as a tab mate.
        return {**entry, "tab_mates": [mate for mate in entry["tab_mates"] if mate != "dock-devices"]}

    assert {name: without_devices(layout[name]) for name in before if name != "dock-runs"} == {
        name: entry for name, entry in before.items() if name != "dock-runs"}
    first = layout
    again.close()
    assert layout_of(open_window(project)) == first  # and it stays there


def test_a_first_open_takes_a_large_share_of_the_screen_but_never_less_than_1200_by_780():
    from PySide6.QtCore import QSize

    from workbench.ui.project_window import first_open_size

    assert first_open_size(QSize(1920, 1040)) == QSize(1536, 884)  # 80 % by 85 % of a full-HD desktop
    assert first_open_size(QSize(1366, 740)) == QSize(1200, 780)  # a small laptop: the smallest size
    assert first_open_size(QSize(5120, 2800)) == QSize(2200, 1400)  # a huge screen: not all of it
    assert first_open_size(None) == QSize(1200, 780)


def test_a_window_saved_larger_than_the_screen_comes_back_on_it(open_window, project, qtbot):
    window = open_window(project)
    available = window.screen().availableGeometry().size()
    window.resize(available.width() + 900, available.height() + 300)
    qtbot.wait(50)
    window.close()
    again = open_window(project)
    smallest = again.minimumSizeHint()
    assert again.width() <= max(available.width(), smallest.width())
    assert again.height() <= max(available.height(), smallest.height())
    again.close()
