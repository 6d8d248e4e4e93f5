"""Diagnostics a provider finds are underlined as the user types, with the message on hover."""

import threading

from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent, QTextCharFormat
from PySide6.QtWidgets import QToolTip

from workbench.editor.diagnostics import DiagnosticsProviders, EditorDiagnostic, diagnostic_at
from workbench.editor.widgets import open_editor_tab


def bad_words(text, path):
    """Flags every "bad" as an error and every "meh" as a warning."""
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        for word, severity in (("bad", "error"), ("meh", "warning")):
            column = line.find(word)
            if column >= 0:
                found.append(EditorDiagnostic(number, column, column + len(word), f"{word} here", severity))
    return found


def open_tab(qtbot, path):
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    return tab


def underlines(tab):
    return [(s.cursor.selectionStart(), s.cursor.selectionEnd(), s.format.underlineColor().name())
            for s in tab.editor.extraSelections()
            if s.format.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline]


def test_a_provider_underlines_errors_and_warnings_and_follows_typing(qtbot, tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("good\nbad line\nmeh\n")
    tab = open_tab(qtbot, path)
    with qtbot.waitSignal(tab.sig_diagnostics_changed):
        tab.attach_diagnostics(bad_words)
    marks = underlines(tab)
    assert [(start, end) for start, end, _ in marks] == [(5, 8), (14, 17)]
    assert marks[0][2] != marks[1][2]  # errors and warnings in different colours
    assert tab.diagnostic_message(2) == "bad here" and tab.diagnostic_message(1) == ""

    tab.set_cursor_position(1, 1)
    with qtbot.waitSignal(tab.sig_diagnostics_changed):
        tab.insert_text("bad ")
    assert tab.diagnostic_message(1) == "bad here"


def test_the_check_runs_off_the_gui_thread_and_a_failing_provider_shows_nothing(qtbot, tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("bad\n")
    threads = []

    def failing(text, path):
        threads.append(threading.current_thread())
        raise ValueError("broken checker")

    tab = open_tab(qtbot, path)
    tab.set_diagnostics([EditorDiagnostic(1, 0, 3, "old")])
    with qtbot.waitSignal(tab.sig_diagnostics_changed):
        tab.attach_diagnostics(failing)
    assert threads and threads[0] is not threading.main_thread()
    assert tab.diagnostics() == []


def test_hovering_an_underlined_word_shows_its_message(qtbot, tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("this is bad\n")
    tab = open_tab(qtbot, path)
    with qtbot.waitSignal(tab.sig_diagnostics_changed):
        tab.attach_diagnostics(bad_words)
    editor = tab.editor
    cursor = editor.textCursor()
    cursor.setPosition(9)
    point = editor.cursorRect(cursor).center()
    event = QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point))
    editor.viewportEvent(event)
    assert QToolTip.isVisible() and QToolTip.text() == "bad here"
    QToolTip.hideText()


def test_providers_are_chosen_by_suffix_or_file_name():
    providers = DiagnosticsProviders()
    seen = []
    providers.on_registered(lambda pattern, provider: seen.append(pattern))
    providers.register(".hparams", bad_words)
    assert providers.provider_for("x/digits.HPARAMS") is bad_words
    assert providers.provider_for("x/train.py") is None
    assert seen == [".hparams"]
    errors_first = [EditorDiagnostic(3, 0, 2, "w", "warning"), EditorDiagnostic(3, 0, 0, "e")]
    assert diagnostic_at(errors_first, 3).message == "e"
    assert diagnostic_at(errors_first, 3, column=5).message == "e"  # an empty span is the whole line
