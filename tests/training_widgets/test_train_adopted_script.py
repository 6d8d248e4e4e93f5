"""Train with Hyper-parameters… on a project whose script takes its own flags: the flags as typed
fields, what was changed passed to the script, and the run recording it."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QSpinBox

from tests.training.test_adopted_runs import PROJECT_FILE, SCRIPT
from tests.training_widgets.conftest import wait_for
from workbench.training.widgets import commands_of, session_of


def test_the_scripts_flags_are_typed_fields_and_a_changed_one_reaches_the_run(qtbot, open_window, tmp_path):
    root = tmp_path / "mine"
    root.mkdir()
    (root / "train.py").write_text(SCRIPT)
    (root / "workbench.toml").write_text(PROJECT_FILE)
    window = open_window(root)
    commands = commands_of(window)
    window.menus.actions["training.trainWithHparams"].trigger()
    wait_for(qtbot, lambda: commands.dialog is not None)
    dialog = commands.dialog
    fields = dialog.fields
    assert isinstance(fields["lr"], QLineEdit) and fields["lr"].text() == "0.001"
    assert isinstance(fields["epochs"], QSpinBox) and fields["epochs"].value() == 3
    assert isinstance(fields["optimizer"], QComboBox) and fields["optimizer"].currentText() == "adam"
    # A switch is ticked when its flag is given: --no-shuffle unticked, as shuffle is true.
    assert isinstance(fields["shuffle"], QCheckBox) and not fields["shuffle"].isChecked()
    assert dialog.overrides() == []  # nothing changed: the script runs with its own defaults

    fields["lr"].setText("fast")
    dialog.accept()  # refused in the dialog, with what is wrong
    assert dialog.isVisible() and "takes a number" in dialog.error.text()
    fields["lr"].setText("0.5")
    fields["epochs"].setValue(2)
    fields["shuffle"].setChecked(True)
    assert dialog.overrides() == ["lr=0.5", "epochs=2", "shuffle=false"]
    fields["shuffle"].setChecked(False)
    assert dialog.overrides() == ["lr=0.5", "epochs=2"]
    dialog.accept()
    session = session_of(window)
    wait_for(qtbot, lambda: session.rows and session.rows[0].info.state == "completed", timeout=60_000)
    info = session.rows[0].info
    assert info.hparams["lr"] == 0.5 and info.hparams["epochs"] == 2 and info.hparams["optimizer"] == "adam"

    window.menus.actions["training.trainWithHparams"].trigger()  # opens with what it was last given
    wait_for(qtbot, lambda: commands.dialog is not None and commands.dialog is not dialog)
    assert commands.dialog.fields["lr"].text() == "0.5" and commands.dialog.fields["epochs"].value() == 2
    commands.dialog.reject()
