"""Mistakes in a .hparams file are underlined as the user types, with the fix in the tooltip
and the status bar; F5 on that file trains it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent, QTextCharFormat
from PySide6.QtWidgets import QToolTip

from tests.training_widgets.conftest import run_state, wait_for
from workbench.project import create_from_template
from workbench.training.widgets import panel_of, session_of


def wavy(tab) -> list[tuple[int, int, str]]:
    return [(s.cursor.selectionStart(), s.cursor.selectionEnd(), s.format.underlineColor().name())
            for s in tab.editor.extraSelections()
            if s.format.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline]


def test_a_misspelt_key_is_underlined_with_the_suggestion_in_its_tooltip(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    tab = window.open_file(toy_project / "toy.hparams")
    wait_for(qtbot, lambda: tab.editor.diagnostics == [] and tab._diagnostics_provider is not None)
    tab.set_cursor_position(4, 1)
    qtbot.keyClicks(tab.editor, "learnin_rate=0.1")
    wait_for(qtbot, lambda: tab.diagnostics())
    [problem] = tab.diagnostics()
    assert problem.line == 4 and problem.severity == "error"
    assert "did you mean learning_rate" in problem.message
    start = tab.editor.document().findBlockByNumber(3).position()
    assert wavy(tab) == [(start, start + len("learnin_rate"), "#e51400")]
    assert window.statusBar().currentMessage() == problem.message  # the cursor is on that line

    editor = tab.editor
    cursor = editor.textCursor()
    cursor.setPosition(start + 3)
    point = editor.cursorRect(cursor).center()
    editor.viewportEvent(QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point)))
    assert QToolTip.isVisible() and "did you mean learning_rate" in QToolTip.text()
    QToolTip.hideText()

    tab.set_cursor_position(1, 1)
    assert window.statusBar().currentMessage() == ""  # away from the line, the message goes
    qtbot.keyClicks(tab.editor, "num_epochs=0")
    qtbot.keyClick(tab.editor, Qt.Key.Key_Return)
    wait_for(qtbot, lambda: [d.line for d in tab.diagnostics()] == [1, 5])


def test_a_file_open_before_training_was_installed_is_checked_too(qtbot, open_window, toy_project):
    (toy_project / "toy.hparams").write_text("batch_size=big\n")
    (toy_project / "workbench.toml").write_text(
        (toy_project / "workbench.toml").read_text().replace('main = "train.py"', 'main = "toy.hparams"'))
    window = open_window(toy_project)  # the main file opens before capabilities are installed
    tab = window.current_editor()
    assert tab.path.name == "toy.hparams"
    wait_for(qtbot, lambda: tab.diagnostics())
    assert "batch_size" in tab.diagnostics()[0].message


@pytest.mark.slow
def test_f5_on_the_digits_hyper_parameters_trains_them_and_the_curves_show_points(qtbot, open_window, tmp_path):
    root = create_from_template("digits", tmp_path / "digits").root
    (root / "hparams" / "digits.hparams").write_text(
        (root / "hparams" / "digits.hparams").read_text().replace("num_epochs=5", "num_epochs=2"))
    window = open_window(root)
    tab = window.open_file(root / "hparams" / "digits.hparams")
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    session = session_of(window)
    qtbot.keyClick(tab.editor, Qt.Key.Key_F5)
    wait_for(qtbot, lambda: session.rows, timeout=10_000)
    info = session.rows[0].info
    assert info.hparams_file == "hparams/digits.hparams"
    panel = panel_of(window)
    wait_for(qtbot, lambda: panel.selected_runs() == [info.id])
    wait_for(qtbot, lambda: run_state(window, info.id) in ("completed", "failed"), timeout=120_000)
    assert run_state(window, info.id) == "completed", session.row(info.id).info.error
    curves = panel.details.curves
    wait_for(qtbot, lambda: curves.plotted(info.id, "loss") > 5 and curves.plotted(info.id, "val_acc") == 2)
    assert curves.plotted(info.id, "lr") > 5
    final = session.row(info.id).info.final_metrics
    assert final["val_acc"] > 0.5
    assert panel.table.topLevelItem(0).text(7) == f"{final['val_acc']:.4g}"


def show_completions(qtbot, tab) -> list[str]:
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    return [item.shown for item in tab.editor.completions_shown()]


def test_ctrl_space_lists_the_keys_with_type_default_and_help_the_projects_own_first(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    tab = window.open_file(toy_project / "toy.hparams")
    tab.set_cursor_position(4, 1)
    names = show_completions(qtbot, tab)
    assert names[:2] == ["step_seconds", "fail"]  # the project's keys, from workbench.toml
    assert {"learning_rate", "num_epochs", "optimizer", "use_bf16"} <= set(names)
    items = {item.shown: item for item in tab.editor.completions_shown()}
    assert items["learning_rate"].detail == "float = 0.01  ·  initial learning rate"
    assert items["fail"].detail == "bool = false  ·  raise an exception at step 3"
    assert "accepts a number of at least 0" in items["learning_rate"].documentation
    popup = tab.editor.completion_popup
    assert popup.view.isVisible()
    row = names.index("learning_rate")
    assert popup.model.index(row, 1).data() == items["learning_rate"].detail

    qtbot.keyClicks(tab.editor, "decay_t")  # typing narrows the list
    assert [item.shown for item in tab.editor.completions_shown()] == ["learning_rate_decay_type"]
    qtbot.keyClick(popup.view, Qt.Key.Key_Return)
    assert tab.editor.document().findBlockByNumber(3).text() == "learning_rate_decay_type="
    # Right after "key=", the key's choices are offered on their own.
    wait_for(qtbot, lambda: tab.editor.completions_shown())
    assert [item.shown for item in tab.editor.completions_shown()] == ["fixed", "exponential", "polynomial"]
    qtbot.keyClick(popup.view, Qt.Key.Key_Down)
    qtbot.keyClick(popup.view, Qt.Key.Key_Return)
    assert tab.editor.document().findBlockByNumber(3).text() == "learning_rate_decay_type=exponential"


def test_typing_a_key_at_the_start_of_a_line_offers_the_keys_and_a_bool_offers_true_and_false(
        qtbot, open_window, toy_project):
    window = open_window(toy_project)
    tab = window.open_file(toy_project / "toy.hparams")
    tab.set_cursor_position(4, 1)
    qtbot.keyClicks(tab.editor, "use_")
    assert [item.shown for item in tab.editor.completions_shown()] == ["use_fp16", "use_bf16", "datasets_use_caching"]
    qtbot.keyClicks(tab.editor, "bf16=")  # the list follows the typing, then offers the values
    assert [item.shown for item in tab.editor.completions_shown()] == ["true", "false"]
    assert tab.editor.completions_shown()[1].detail == "the default"
    qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)
    qtbot.keyClicks(tab.editor, "true  # fast")
    assert tab.editor.completions_shown() == []  # not in a value already typed, nor in a comment
    tab.set_cursor_position(1, 3)
    qtbot.keyClicks(tab.editor, "x")
    assert tab.editor.completions_shown() == []  # nor in a comment line


def test_hovering_a_valid_key_shows_its_type_default_help_and_accepted_values(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    tab = window.open_file(toy_project / "toy.hparams")
    editor = tab.editor
    wait_for(qtbot, lambda: tab._diagnostics_provider is not None)

    def hover_text(line: int, column: int) -> str | None:
        block = editor.document().findBlockByNumber(line - 1)
        cursor = editor.textCursor()
        cursor.setPosition(block.position() + column)
        rect = editor.cursorRect(cursor)
        point = rect.center()
        point.setX(rect.left() + 2)
        editor.viewportEvent(QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point)))
        return QToolTip.text() if QToolTip.isVisible() else None

    assert hover_text(2, 3) == ("num_epochs (int, default 100): passes over the training data; "
                                "accepts a whole number of at least 1")
    assert hover_text(3, 0) == ("learning_rate (float, default 0.01): initial learning rate; "
                                "accepts a number of at least 0")
    QToolTip.hideText()
    (toy_project / "other.hparams").write_text("step_seconds=0.1\nlearning_rate_decay_type=fixed\n")
    other = window.open_file(toy_project / "other.hparams")
    editor = other.editor
    assert hover_text(1, 4) == ("step_seconds (float, default 0.02): how long a step takes; "
                                "accepts a number of at least 0")
    assert hover_text(2, 4).endswith("accepts one of fixed, exponential, polynomial")
    QToolTip.hideText()


def test_a_value_typed_in_full_closes_the_list_so_enter_starts_a_new_line(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    tab = window.open_file(toy_project / "toy.hparams")
    tab.set_cursor_position(4, 1)
    qtbot.keyClicks(tab.editor, "use_bf16=")
    assert [item.shown for item in tab.editor.completions_shown()] == ["true", "false"]
    qtbot.keyClicks(tab.editor, "true")
    assert tab.editor.completions_shown() == []
    qtbot.keyClick(tab.editor, Qt.Key.Key_Return)
    assert tab.text().splitlines()[3] == "use_bf16=true" and tab.cursor_position() == (5, 1)
