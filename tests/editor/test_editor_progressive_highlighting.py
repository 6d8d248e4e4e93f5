"""Opening a file colours the first screen at once and the rest in the background, ending with
the same colours and states as highlighting the whole file in one go."""

import math

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from workbench.editor import LineLexer, lexer_for_path
from workbench.editor.widgets import open_editor_tab
from workbench.editor.widgets.syntax_highlighter import (
    DEFERRED,
    HORIZON_BLOCKS,
    SyntaxHighlighter,
)

# A unit of Python with strings and docstrings that span lines, so chunk boundaries keep falling
# inside them.
PYTHON_UNIT = [
    "@decorator",
    "def step_{i}(batch, lr=0.001):",
    '    """Docstring {i}',
    "    spanning # not a comment",
    '    lines."""',
    "    text = '''",
    "{i} raw 'quoted' line",
    "'''",
    "    return batch * lr + {i}  # scale",
    "",
]

YAML_UNIT = ["step_{i}:", "  lr: 0.001  # comment", "  name: 'run {i}'", ""]

NEVER = math.inf  # a time budget that never runs out, for exact chunk boundaries


def source(lines, unit=PYTHON_UNIT):
    """``lines`` lines made of repeated ``unit``s."""
    return "\n".join(unit[n % len(unit)].format(i=n // len(unit)) for n in range(lines))


class CountingLineLexer(LineLexer):
    """A LineLexer that counts the lines it lexes."""

    def __init__(self, name="a.py"):
        super().__init__(lexer_for_path(name))
        self.lines_lexed = 0

    def lex_line(self, text, state=None):
        self.lines_lexed += 1
        return super().lex_line(text, state)


def make_editor(qtbot, text):
    editor = QPlainTextEdit()
    qtbot.addWidget(editor)
    editor.setPlainText(text)
    return editor


def highlight(qtbot, text, name="a.py", horizon=HORIZON_BLOCKS, step_seconds=NEVER):
    editor = make_editor(qtbot, text)
    highlighter = SyntaxHighlighter(
        editor.document(), CountingLineLexer(name), horizon=horizon,
        first_pass_seconds=NEVER, step_seconds=step_seconds,
    )
    return editor, highlighter


def colours_and_states(editor, highlighter):
    """Per block: deferred or not, the lexer state it ends in, and its coloured ranges."""
    found = []
    block = editor.document().firstBlock()
    while block.isValid():
        ranges = [
            (r.start, r.length, r.format.foreground().color().name(), r.format.fontItalic())
            for r in block.layout().formats()
        ]
        state = block.userState()
        found.append((state == DEFERRED, highlighter.line_lexer.state_for_id(state), ranges))
        block = block.next()
    return found


def one_shot(qtbot, text, name="a.py"):
    """Colours and states of ``text`` highlighted in a single pass."""
    editor, highlighter = highlight(qtbot, text, name, horizon=10**9)
    assert highlighter.is_complete
    return colours_and_states(editor, highlighter)


def block_colours(editor, number):
    block = editor.document().findBlockByNumber(number)
    return {r.format.foreground().color().name() for r in block.layout().formats()}


STRING_COLOUR = "#a31515"


def test_attaching_a_20000_line_document_lexes_at_most_the_horizon_before_the_event_loop_runs(
    qtbot,
):
    editor = make_editor(qtbot, source(20_000))
    lexer = CountingLineLexer()
    highlighter = SyntaxHighlighter(editor.document(), lexer)
    assert 1 <= lexer.lines_lexed <= HORIZON_BLOCKS
    assert highlighter.blocks_highlighted == lexer.lines_lexed
    assert block_colours(editor, 0)
    assert editor.document().lastBlock().userState() == DEFERRED
    assert not highlighter.is_complete


def test_opening_a_20000_line_file_in_a_tab_lexes_at_most_the_horizon(qtbot, tmp_path):
    path = tmp_path / "big.py"
    path.write_text(source(20_000))
    tab = open_editor_tab(path, None)
    qtbot.addWidget(tab)
    assert 1 <= tab.highlighter.blocks_highlighted <= HORIZON_BLOCKS
    assert not tab.highlighter.is_complete


@pytest.mark.parametrize("name, unit", [("a.py", PYTHON_UNIT), ("c.yaml", YAML_UNIT)])
def test_after_the_sweep_every_block_matches_a_one_shot_highlight(qtbot, name, unit):
    text = source(3_000, unit)
    editor, highlighter = highlight(qtbot, text, name, horizon=37)
    assert highlighter.blocks_highlighted == 37
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert highlighter.blocks_highlighted == 3_000
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, text, name)


def test_the_sweep_with_its_time_budget_also_matches_a_one_shot_highlight(qtbot):
    text = source(3_000)
    editor, highlighter = highlight(qtbot, text, step_seconds=0.001)
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, text)


def test_a_triple_quoted_string_across_a_chunk_boundary_is_a_string_on_both_sides(qtbot):
    lines = [f"x_{n} = {n}" for n in range(8)]
    lines += ['doc = """opens here', "inside 9 # not a comment", "inside 10 = 1",
              "inside 11", 'closes here"""', "after = 13  # comment"]
    lines += [f"y_{n} = {n}" for n in range(30)]
    editor, highlighter = highlight(qtbot, "\n".join(lines), horizon=10)
    # Blocks 0-9 are lexed now, block 10 starts the first background chunk.
    assert editor.document().findBlockByNumber(9).userState() != DEFERRED
    assert editor.document().findBlockByNumber(10).userState() == DEFERRED
    qtbot.waitUntil(lambda: highlighter.is_complete)
    for number in (9, 10, 11):
        assert block_colours(editor, number) == {STRING_COLOUR}
    assert STRING_COLOUR not in block_colours(editor, 13)
    assert "#008000" in block_colours(editor, 13)  # the comment after the string is a comment


def test_typing_in_a_highlighted_block_during_the_sweep_rehighlights_one_block(qtbot):
    editor, highlighter = highlight(qtbot, source(20_000))
    lexed = highlighter.blocks_highlighted
    cursor = QTextCursor(editor.document().findBlockByNumber(8))
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    cursor.insertText("x")
    assert highlighter.blocks_highlighted == lexed + 1


def test_opening_a_string_rehighlights_at_most_the_horizon_and_the_sweep_redoes_the_rest(
    qtbot,
):
    text = source(2_000)
    editor, highlighter = highlight(qtbot, text, horizon=50)
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    highlighter.blocks_highlighted = 0
    cursor = QTextCursor(editor.document().findBlockByNumber(0))
    cursor.insertText('"""')
    assert highlighter.blocks_highlighted == 50
    assert not highlighter.is_complete
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, '"""' + text)


def test_the_event_loop_turns_while_the_sweep_runs_over_20000_lines(qtbot):
    editor, highlighter = highlight(qtbot, source(20_000), step_seconds=0.005)
    turns_during_sweep = []
    counter = QTimer(interval=0)
    counter.timeout.connect(lambda: turns_during_sweep.append(not highlighter.is_complete))
    counter.start()
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    counter.stop()
    assert turns_during_sweep.count(True) >= 20
    assert highlighter.blocks_highlighted == 20_000


def test_edits_past_the_horizon_and_everywhere_during_the_sweep_end_correct(qtbot):
    editor, highlighter = highlight(qtbot, source(3_000), horizon=40)
    document = editor.document()

    def edit(block_number, text, remove_blocks=0):
        cursor = QTextCursor(document.findBlockByNumber(block_number))
        if remove_blocks:
            last = document.findBlockByNumber(block_number + remove_blocks)
            cursor.setPosition(last.position(), QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(text)

    edit(2_990, 'tail = """\nstill a string\n')  # at the far end, long before the sweep
    qtbot.waitUntil(lambda: highlighter.blocks_highlighted >= 400)
    assert not highlighter.is_complete
    edit(2_995, "", remove_blocks=3)  # lines removed past the sweep
    edit(20, "extra = 1\nmore = '''\n'''\n")  # lines added behind the sweep
    edit(100, "", remove_blocks=500)  # a removal across the point the sweep reached
    edit(5, "\n".join(f"pasted_{n} = {n}" for n in range(120)) + "\n")  # a paste > horizon
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, editor.toPlainText())


def test_replacing_the_whole_text_lexes_at_most_the_horizon_then_ends_correct(qtbot):
    editor, highlighter = highlight(qtbot, source(1_000), horizon=30)
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    highlighter.blocks_highlighted = 0
    replacement = '"""\n' + source(1_500)
    cursor = QTextCursor(editor.document())  # as a reload does, in one edit
    cursor.select(QTextCursor.SelectionType.Document)
    cursor.insertText(replacement)
    assert highlighter.blocks_highlighted == 30
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, replacement)


def test_long_lines_cannot_hold_up_opening_and_still_end_correct(qtbot):
    text = "\n".join("values = [" + ", ".join(f"'{n}'" for n in range(400)) + "]"
                     for _ in range(30))
    editor = make_editor(qtbot, text)
    highlighter = SyntaxHighlighter(
        editor.document(), CountingLineLexer(), first_pass_seconds=0.001, step_seconds=0.001
    )
    assert 1 <= highlighter.blocks_highlighted < 10
    qtbot.waitUntil(lambda: highlighter.is_complete, timeout=60_000)
    assert colours_and_states(editor, highlighter) == one_shot(qtbot, text)
