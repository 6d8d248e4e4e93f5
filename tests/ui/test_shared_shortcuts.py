"""Two commands sharing a key: the one registered last runs while it is enabled, the first
otherwise; a menu click always runs its own command."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.project import load_project
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def window(qtbot, tmp_path):
    (tmp_path / "workbench.toml").write_text('[project]\nname = "keys"\n')
    window = ProjectWindow(load_project(tmp_path))
    qtbot.addWidget(window)
    window.install_capabilities(())  # none: the keys are the test's own
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    return window


def test_a_shared_key_runs_the_later_command_while_it_is_enabled_and_the_first_otherwise(qtbot, window):
    ran = []
    debugging = {"on": False}
    window.commands.add("test.train", "Train", lambda: ran.append("train"), menu="Run", shortcut="F5")
    window.commands.add("test.debug", "Debug", lambda: ran.append("debug"), menu="Run", shortcut="F5",
                        enabled=lambda: debugging["on"])
    assert window.menus.actions["test.train"].shortcut().toString() == "F5"
    assert window.menus.actions["test.debug"].text() == "Debug\tF5"  # shown in the menu, not bound twice

    qtbot.keyClick(window, Qt.Key.Key_F5)
    debugging["on"] = True
    qtbot.keyClick(window, Qt.Key.Key_F5)
    window.menus.actions["test.train"].trigger()  # a menu click: its own command
    assert ran == ["train", "debug", "train"]


def test_a_key_nobody_shares_works_as_before(qtbot, window):
    ran = []
    window.commands.add("test.step", "Step", lambda: ran.append("step"), menu="Run", shortcut="F10")
    qtbot.keyClick(window, Qt.Key.Key_F10)
    assert ran == ["step"]
