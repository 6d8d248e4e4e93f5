"""The Pipeline dock in a real project window: installed with the others, hidden while the
project declares no pipeline, shown by Models ▸ Pipeline as a tab beside Runs, and its commands
in the palette."""

from __future__ import annotations

from PySide6.QtWidgets import QDockWidget

from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow


def test_models_pipeline_shows_the_dock_beside_runs_and_the_palette_has_its_commands(qtbot, tmp_path):
    project = load_project(create_from_template("digits", tmp_path / "digits").root)
    window = ProjectWindow(project)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.sig_capabilities_installed, timeout=30_000):
        window.show()
    try:
        dock = window.findChild(QDockWidget, "dock-pipeline")
        assert dock is not None and dock.isHidden()  # the project declares no pipeline
        models_menu = next(action for action in window.menuBar().actions() if action.text() == "Models").menu()
        entry = next(action for action in models_menu.actions() if action.text() == "Pipeline")
        entry.trigger()
        qtbot.waitUntil(dock.isVisible, timeout=10_000)
        runs = window.findChild(QDockWidget, "dock-runs")
        assert runs in window.tabifiedDockWidgets(dock)
        palette = {command.id for command in window.commands.all() if command.in_palette}
        assert {"pipeline.show", "pipeline.start", "pipeline.stop", "pipeline.resume"} <= palette
    finally:
        window.tasks.wait(10_000)
