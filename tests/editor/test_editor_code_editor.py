"""Typing helpers and highlighting of the CodeEditor widget."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from workbench.editor import LineLexer, lexer_for_path
from workbench.editor.widgets.code_editor import CodeEditor
from workbench.editor.widgets.syntax_highlighter import SyntaxHighlighter


def make_editor(qtbot, text, language="Python"):
    editor = CodeEditor(language=language)
    qtbot.addWidget(editor)
    editor.setPlainText(text)
    return editor


def select_lines(editor, first, last):
    document = editor.document()
    cursor = QTextCursor(document)
    cursor.setPosition(document.findBlockByNumber(first).position())
    end = document.findBlockByNumber(last)
    cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


def test_enter_keeps_indent_and_indents_after_a_colon(qtbot):
    editor = make_editor(qtbot, "def f():")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "x = 1")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "y")
    assert editor.toPlainText() == "def f():\n    x = 1\n    y"


def test_tab_inserts_spaces_to_the_next_stop_and_shift_tab_dedents(qtbot):
    editor = make_editor(qtbot, "ab")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "ab  "
    editor.setPlainText("x")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "    x"
    qtbot.keyClick(editor, Qt.Key.Key_Backtab)
    assert editor.toPlainText() == "x"


def test_tab_on_a_multi_line_selection_indents_every_line(qtbot):
    editor = make_editor(qtbot, "a\nb\nc")
    select_lines(editor, 0, 1)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert editor.toPlainText() == "    a\n    b\nc"
    qtbot.keyClick(editor, Qt.Key.Key_Backtab)
    assert editor.toPlainText() == "a\nb\nc"


def test_indent_dedent_and_toggle_comment_act_on_the_selected_lines(qtbot):
    editor = make_editor(qtbot, "if x:\n    y()\n    z()\nend()")
    select_lines(editor, 1, 2)
    editor.toggle_comment()
    assert editor.toPlainText() == "if x:\n    # y()\n    # z()\nend()"
    editor.toggle_comment()
    assert editor.toPlainText() == "if x:\n    y()\n    z()\nend()"
    editor.indent()
    assert editor.toPlainText() == "if x:\n        y()\n        z()\nend()"
    editor.dedent()
    editor.dedent()
    assert editor.toPlainText() == "if x:\ny()\nz()\nend()"


def test_toggle_comment_uses_the_languages_prefix(qtbot):
    editor = make_editor(qtbot, "int a;", language="C")
    editor.toggle_comment()
    assert editor.toPlainText() == "// int a;"


def test_home_goes_to_the_first_non_blank_then_to_column_one(qtbot):
    editor = make_editor(qtbot, "    value = 1")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(editor, Qt.Key.Key_Home)
    assert editor.cursor_position() == (1, 5)
    qtbot.keyClick(editor, Qt.Key.Key_Home)
    assert editor.cursor_position() == (1, 1)


def test_cursor_next_to_a_bracket_marks_its_partner(qtbot):
    editor = make_editor(qtbot, "f(a, [b],\n  c)\n(")
    editor.set_cursor_position(1, 2)
    assert editor.bracket_match == (1, 13)
    editor.set_cursor_position(2, 4)  # just after the closing ")"
    assert editor.bracket_match == (13, 1)
    editor.set_cursor_position(3, 1)
    assert editor.bracket_match is None
    colours = {s.format.background().color().name() for s in editor.extraSelections()}
    assert "#ffd0d0" in colours  # the unmatched "(" is marked as such


def test_go_to_a_position_outside_the_text_clamps(qtbot):
    editor = make_editor(qtbot, "one\ntwo\nthree")
    editor.set_cursor_position(99, 99)
    assert editor.cursor_position() == (3, 6)
    editor.set_cursor_position(-5, 0)
    assert editor.cursor_position() == (1, 1)
    editor.set_cursor_position(2, 3)
    assert editor.cursor_position() == (2, 3)


def test_typing_in_a_20000_line_file_rehighlights_only_a_few_blocks(qtbot):
    text = "\n".join(f"def function_{i}(value):  # comment {i}\n    return value * {i}"
                     for i in range(10_000))
    editor = make_editor(qtbot, text)
    highlighter = SyntaxHighlighter(editor.document(), LineLexer(lexer_for_path("a.py")))
    qtbot.waitUntil(lambda: highlighter.blocks_highlighted >= 20_000, timeout=60_000)
    editor.set_cursor_position(10_001, 5)
    highlighter.blocks_highlighted = 0
    qtbot.keyClick(editor, Qt.Key.Key_X)
    assert 1 <= highlighter.blocks_highlighted <= 3


def test_opening_a_triple_quoted_string_rehighlights_the_lines_below(qtbot):
    editor = make_editor(qtbot, "a = 1\nb = 2\nc = 3\nd = 4")
    highlighter = SyntaxHighlighter(editor.document(), LineLexer(lexer_for_path("a.py")))
    qtbot.waitUntil(lambda: highlighter.blocks_highlighted >= 4)
    editor.set_cursor_position(1, 5)
    highlighter.blocks_highlighted = 0
    editor.textCursor().insertText('"""')
    assert highlighter.blocks_highlighted == 4
    last = editor.document().lastBlock()
    formats = last.layout().formats()
    assert formats and formats[0].format.foreground().color().name() == "#a31515"
