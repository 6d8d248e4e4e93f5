"""A picture of a project window is taken once its listings have come in, not after a fixed
wait: a project with many runs shows them all, not "No runs yet"."""

from __future__ import annotations

import time

import pytest

from tests.project_files import write_project_file
from workbench.app.screenshot import settle
from workbench.project import load_project
from workbench.training.run_folder import RunFolder
from workbench.training.run_info import RunInfo

RUNS = 40


@pytest.fixture
def project_with_many_runs(tmp_path):
    root = tmp_path / "many"
    write_project_file(root)
    for index in range(RUNS):
        folder = RunFolder(root / "runs" / f"20260101-12{index // 60:02d}{index % 60:02d}-000")
        folder.path.mkdir(parents=True)
        folder.write_info(RunInfo(id=folder.id, state="completed", run_dir=str(folder.path), project_dir=str(root),
                                  created_at=time.time() - RUNS + index))
    return root


def test_the_picture_waits_until_the_runs_are_listed(qtbot, project_with_many_runs):
    from PySide6.QtWidgets import QApplication

    from workbench.training.widgets import session_of
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(project_with_many_runs))
    qtbot.addWidget(window)
    window.show()
    settle(QApplication.instance(), window)
    assert window.capabilities_installed and not window.tasks.busy
    assert len(session_of(window).rows) == RUNS
    window.tasks.wait(10_000)
