"""A provider that answers later (a language server) returns PENDING and replies on the GUI
thread: the reply shows when nothing moved, is dropped when the user typed or asked again, and
the list already showing keeps following the typing meanwhile."""

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QToolTip

from workbench.editor.assist import PENDING, CompletionItem, Completions, TextPosition
from workbench.editor.widgets import open_editor_tab

WORDS = ("Conv1d", "Conv2d", "Linear")


class LateProvider:
    """Answers each question when the test says so, like a server whose answers are queued."""

    def __init__(self):
        self.asked: list[TextPosition] = []

    def __call__(self, position: TextPosition):
        self.asked.append(position)
        return PENDING

    def answer(self, index: int = -1) -> None:
        position = self.asked[index]
        start = position.column
        while start > 0 and position.line_text[start - 1].isalnum():
            start -= 1
        position.reply(Completions(start, position.column, tuple(CompletionItem(w) for w in WORDS)))


def open_tab(qtbot, path):
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    qtbot.waitExposed(tab)
    return tab


def shown(tab) -> list[str]:
    return [item.text for item in tab.editor.completions_shown()]


def test_a_late_answer_shows_when_the_caret_has_not_moved(qtbot, tmp_path):
    path = tmp_path / "net.py"
    path.write_text("nn.\n")
    tab = open_tab(qtbot, path)
    provider = LateProvider()
    tab.attach_completions(provider)
    tab.set_cursor_position(1, 4)
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert shown(tab) == []  # nothing yet, and the editor did not wait
    provider.answer()
    assert shown(tab) == list(WORDS)

    qtbot.keyClicks(tab.editor, "Co")  # the list showing follows the typing before any answer
    assert shown(tab) == ["Conv1d", "Conv2d"]
    assert len(provider.asked) == 3


def test_an_answer_for_an_older_position_is_dropped(qtbot, tmp_path):
    path = tmp_path / "net.py"
    path.write_text("nn.\n")
    tab = open_tab(qtbot, path)
    provider = LateProvider()
    tab.attach_completions(provider)
    tab.set_cursor_position(1, 4)
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(tab.editor, "x")  # typed while the first answer was on its way
    provider.answer(0)
    assert shown(tab) == []
    provider.answer(-1)
    assert shown(tab) == []  # none of the words fits "x"; the fresh answer was looked at

    tab.editor.set_cursor_position(1, 1)
    provider.asked.clear()
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    tab.editor.set_cursor_position(1, 3)  # the caret moved away: the answer is for another place
    provider.answer()
    assert shown(tab) == []


def test_late_hover_help_shows_unless_the_user_typed_since(qtbot, tmp_path):
    path = tmp_path / "net.py"
    path.write_text("layer = Conv2d\n")
    tab = open_tab(qtbot, path)
    asked: list[TextPosition] = []
    tab.attach_hover(lambda position: asked.append(position) or PENDING)
    editor = tab.editor
    cursor = editor.textCursor()
    cursor.setPosition(10)
    point = editor.cursorRect(cursor).center()
    QToolTip.hideText()
    editor.viewportEvent(QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point)))
    assert asked[-1].column in (9, 10) and not QToolTip.isVisible()
    asked[-1].reply("Conv2d(in_channels, out_channels, kernel_size)")
    qtbot.waitUntil(QToolTip.isVisible)
    assert "in_channels" in QToolTip.text()
    QToolTip.hideText()
    qtbot.waitUntil(lambda: not QToolTip.isVisible())

    editor.viewportEvent(QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point)))
    qtbot.keyClicks(editor, "s")
    asked[-1].reply("too late")
    qtbot.wait(100)
    assert not QToolTip.isVisible()
