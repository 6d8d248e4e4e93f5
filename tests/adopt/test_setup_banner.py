"""The window on a folder without workbench.toml: the Set Up Training banner and dialog, after
which the Run menu trains the folder's script."""

from __future__ import annotations

import tomllib

from PySide6.QtWidgets import QDockWidget

from tests.adopt.scripts import PLAIN_ARGPARSE, write

ENTRIES = ("workbench.training.widgets:install", "workbench.adopt.widgets:install")

QUICK_TRAINER = '''
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2, help="passes over the data")
if __name__ == "__main__":
    args = parser.parse_args()
    for step in range(1, args.epochs + 1):
        print(f"step={step} loss={1 / step:.3f}", flush=True)
'''


def open_window(qtbot, root):
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(root))
    window.resize(1200, 800)
    qtbot.addWidget(window)
    window.show()
    window.install_capabilities(ENTRIES)
    return window


def test_the_banner_offers_set_up_and_the_dialog_writes_workbench_toml(qtbot, tmp_path):
    from workbench.adopt.widgets import setup_of

    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    write(tmp_path, "tools/train_other.py", PLAIN_ARGPARSE)
    window = open_window(qtbot, tmp_path)
    setup = setup_of(window)
    qtbot.waitUntil(lambda: setup.banner.isVisible())
    assert "Found train.py and 1 other possible training script." in setup.label.text()
    assert window.commands.get("adopt.setUpTraining").menu == "Run"

    setup.set_up_button.click()
    dialog = setup.dialog
    assert dialog is not None and dialog.chosen_script() == "train.py"
    qtbot.waitUntil(lambda: dialog.write_button.isEnabled())
    table = dialog.parameters
    names = [table.item(row, 0).text() for row in range(table.rowCount())]
    assert names[:3] == ["--lr", "--epochs", "--data"]
    assert table.item(0, 2).text() == "0.001" and table.item(2, 3).text() == "yes"
    assert "train.py needs --data" in dialog.status.text()

    with qtbot.waitSignal(setup.sig_project_file_written):
        dialog.write_button.click()
    settings = tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]
    assert settings == {"script": "train.py", "parameters": "argparse"}
    assert window.project.has_project_file and window.project.settings["training"]["script"] == "train.py"
    assert not setup.banner.isVisible()
    assert not window.commands.get("adopt.setUpTraining").is_enabled()
    assert window.findChild(QDockWidget, "dock-runs").isVisible()
    window.tasks.wait(30_000)


def test_a_second_script_chosen_in_the_dialog_is_the_one_written(qtbot, tmp_path):
    from workbench.adopt.widgets import setup_of

    write(tmp_path, "train_a.py", PLAIN_ARGPARSE)
    write(tmp_path, "train_b.py", QUICK_TRAINER)
    window = open_window(qtbot, tmp_path)
    setup = setup_of(window)
    qtbot.waitUntil(lambda: setup.banner.isVisible())
    dialog = window.commands.execute("adopt.setUpTraining")
    assert dialog.chosen_script() is None and "none more likely" in dialog.intro.text()
    assert not dialog.write_button.isEnabled()
    dialog.scripts.setCurrentRow(1)
    qtbot.waitUntil(lambda: dialog.write_button.isEnabled())
    assert dialog.parameters.item(0, 0).text() == "--epochs"
    with qtbot.waitSignal(setup.sig_project_file_written):
        dialog.write_button.click()
    assert tomllib.loads((tmp_path / "workbench.toml").read_text())["training"]["script"] == "train_b.py"

    # The Run menu now trains the script.
    from workbench.training import RunService

    window.commands.execute("training.trainLocally")
    service = RunService(tmp_path)
    qtbot.waitUntil(lambda: [r.state for r in service.list_runs()] == ["completed"])
    [run] = service.list_runs()
    assert run.script == "train_b.py"
    window.tasks.wait(30_000)


def test_no_banner_for_a_folder_without_training_scripts_or_with_workbench_toml(qtbot, tmp_path):
    from workbench.adopt.widgets import setup_of

    plain = tmp_path / "notes"
    write(plain, "README.md", "# notes\n")
    window = open_window(qtbot, plain)
    setup = setup_of(window)
    window.tasks.wait(30_000)
    qtbot.wait(50)
    assert not setup.banner.isVisible()

    adopted = tmp_path / "adopted"
    write(adopted, "train.py", PLAIN_ARGPARSE)
    write(adopted, "workbench.toml", "[training]\nscript = 'train.py'\n")
    other = open_window(qtbot, adopted)
    assert setup_of(other) is None and "adopt.setUpTraining" not in other.commands


def test_the_banner_stays_when_a_layout_saved_without_it_is_restored(qtbot, tmp_path):
    """The window restores its saved layout after its capabilities are in; a layout saved while
    the banner was hidden hid it again, for good."""
    from workbench.adopt.widgets import setup_of

    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    window = open_window(qtbot, tmp_path)
    setup = setup_of(window)
    qtbot.waitUntil(lambda: setup.banner.isVisible())
    setup.banner.setVisible(False)
    saved_without_it = window.saveState()
    setup.banner.setVisible(True)
    window.restoreState(saved_without_it)
    qtbot.waitUntil(lambda: setup.banner.isVisible())
    setup._withdraw()  # closed by the user: it goes
    qtbot.wait(50)
    assert not setup.banner.isVisible()
    window.discard_changes_on_close = True
