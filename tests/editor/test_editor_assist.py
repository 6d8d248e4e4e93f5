"""Completion and hover providers a capability registers are offered in the editor: Ctrl+Space
and typing list candidates, Enter inserts the chosen one, the mouse over a word shows help."""

from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QToolTip

from workbench.editor.assist import (
    CompletionItem,
    CompletionProviders,
    Completions,
    TextPosition,
    ask_completions,
    matching,
)
from workbench.editor.widgets import open_editor_tab

WORDS = ("apple", "apricot", "banana", "pineapple")


def fruit(position: TextPosition):
    """Completes the word before the caret with fruit names; on its own only after 1 letter."""
    line, column = position.line_text, position.column
    start = column
    while start > 0 and line[start - 1].isalpha():
        start -= 1
    end = column
    while end < len(line) and line[end].isalpha():
        end += 1
    if not position.explicit and column == start:
        return None
    return Completions(start, end, tuple(CompletionItem(w, detail="fruit", documentation=f"a {w}") for w in WORDS))


def open_tab(qtbot, path):
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    tab.resize(800, 400)
    tab.show()
    qtbot.waitExposed(tab)
    return tab


def test_ctrl_space_lists_the_candidates_and_enter_inserts_the_chosen_one(qtbot, tmp_path):
    path = tmp_path / "basket.txt"
    path.write_text("eat \n")
    tab = open_tab(qtbot, path)
    seen = []
    tab.attach_completions(lambda position: seen.append(position) or fruit(position))
    tab.set_cursor_position(1, 5)
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert [item.text for item in tab.editor.completions_shown()] == list(WORDS)
    assert seen[-1] == TextPosition(path, 1, 4, "eat ", explicit=True)
    popup = tab.editor.completion_popup
    assert popup.view.isVisible() and popup.model.index(0, 1).data() == "fruit"

    qtbot.keyClicks(tab.editor, "ap")  # typing narrows the list; the editor keeps the keys
    assert [item.text for item in tab.editor.completions_shown()] == ["apple", "apricot", "pineapple"]
    qtbot.keyClick(popup.view, Qt.Key.Key_Down)
    qtbot.keyClick(popup.view, Qt.Key.Key_Return)
    assert tab.text() == "eat apricot\n"
    assert not popup.view.isVisible()


def test_typing_asks_the_provider_on_its_own_and_esc_closes_the_list(qtbot, tmp_path):
    path = tmp_path / "basket.txt"
    path.write_text("\n")
    tab = open_tab(qtbot, path)
    tab.attach_completions(fruit)
    qtbot.keyClicks(tab.editor, "ba")
    assert [item.text for item in tab.editor.completions_shown()] == ["banana"]
    qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)
    assert tab.editor.completions_shown() == []
    assert tab.text() == "ba\n"
    qtbot.keyClicks(tab.editor, "x")  # nothing matches: no list
    assert tab.editor.completions_shown() == []


def test_a_failing_or_confused_provider_offers_nothing(qtbot, tmp_path):
    def failing(position):
        raise RuntimeError("broken")

    position = TextPosition(Path("a.txt"), 1, 2, "ab", True)
    assert ask_completions(failing, position) is None
    assert ask_completions(lambda p: Completions(0, 9, (CompletionItem("x"),)), position) is None
    assert ask_completions(lambda p: Completions(0, 2, ()), position) is None
    path = tmp_path / "a.txt"
    path.write_text("ab\n")
    tab = open_tab(qtbot, path)
    tab.attach_completions(failing)
    tab.set_cursor_position(1, 3)
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    assert tab.editor.completions_shown() == [] and tab.text() == "ab\n"


def test_matching_puts_names_that_start_with_the_typed_text_first():
    items = tuple(CompletionItem(w) for w in WORDS)
    assert [i.text for i in matching(items, "AP")] == ["apple", "apricot", "pineapple"]
    assert [i.text for i in matching(items, "")] == list(WORDS)


def test_providers_are_found_by_suffix_and_told_about_later_registrations():
    providers = CompletionProviders()
    registered = []
    providers.on_registered(lambda pattern, provider: registered.append(pattern))
    providers.register(".Fruit", fruit)
    assert providers.provider_for("/x/basket.fruit") is fruit
    assert providers.provider_for("/x/basket.txt") is None
    assert registered == [".Fruit"]


def test_hovering_a_word_shows_the_providers_help_and_a_diagnostic_comes_first(qtbot, tmp_path):
    from workbench.editor.diagnostics import EditorDiagnostic

    path = tmp_path / "basket.txt"
    path.write_text("apple banana\n")
    tab = open_tab(qtbot, path)
    asked = []

    def hover(position):
        asked.append(position.column)
        start = position.line_text.rfind(" ", 0, position.column) + 1
        end = (position.line_text + " ").find(" ", position.column)
        return f"help for {position.line_text[start:end]}"

    tab.attach_hover(hover)
    editor = tab.editor

    def hover_at(column):
        cursor = editor.textCursor()
        cursor.setPosition(column)
        rect = editor.cursorRect(cursor)
        point = rect.center()
        point.setX(rect.left() + editor.fontMetrics().horizontalAdvance("a") // 2)  # on the character
        editor.viewportEvent(QHelpEvent(QEvent.Type.ToolTip, point, editor.viewport().mapToGlobal(point)))
        return QToolTip.text() if QToolTip.isVisible() else None

    assert hover_at(8) == "help for banana"
    assert asked[-1] == 8
    assert hover_at(1) == "help for apple"
    far = editor.cursorRect(editor.textCursor()).center()
    far.setX(editor.viewport().width() - 5)
    assert editor.hover_text_at(far) is None  # past the end of the line: no help
    tab.set_diagnostics([EditorDiagnostic(1, 6, 12, "bad banana")])
    assert hover_at(8) == "bad banana"
    assert hover_at(1) == "help for apple"
    QToolTip.hideText()
