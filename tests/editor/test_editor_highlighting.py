"""Lexing line by line gives the same colours as lexing the whole file."""

import pytest

from workbench.editor import LineLexer, format_name_for, format_ranges, lexer_for_path
from pygments.token import Token


def _per_char(tokens_with_offsets):
    return [(i + k, t) for i, t, v in tokens_with_offsets for k, ch in enumerate(v) if ch != "\n"]


def _lex_by_line(line_lexer, text):
    state = line_lexer.initial_state
    found, offset = [], 0
    for line in text.split("\n"):
        tokens, state = line_lexer.lex_line(line, state)
        found.extend((offset + i, t, v) for i, t, v in tokens)
        offset += len(line) + 1
    return found


@pytest.mark.parametrize(
    "name, source",
    [
        ("a.py", 'x = 1\ns = """first\nsecond  # not a comment\nthird"""\ny = 2  # real\n'),
        ("a.py", "def f():\n    x = f\"\"\"a\n    {b}\n    c\"\"\"\n    return f'{x}'\n"),
        ("a.py", "b = rb'''\\x00\n'quoted'\n''' + 1\n"),
    ],
)
def test_line_by_line_lexing_matches_whole_text_lexing(name, source):
    lexer = lexer_for_path(name)
    by_line = _per_char(_lex_by_line(LineLexer(lexer), source))
    whole = _per_char(lexer.get_tokens_unprocessed(source))
    assert by_line == whole


def test_a_triple_quoted_string_carries_its_state_to_the_next_line():
    line_lexer = LineLexer(lexer_for_path("a.py"))
    _, state = line_lexer.lex_line('s = """first', line_lexer.initial_state)
    assert state != line_lexer.initial_state
    tokens, _ = line_lexer.lex_line("second  # not a comment", state)
    assert {format_name_for(t) for _, t, _ in tokens} == {"string"}


def test_states_are_interned_to_stable_small_ids():
    line_lexer = LineLexer(lexer_for_path("a.py"))
    _, state = line_lexer.lex_line('"""', line_lexer.initial_state)
    first = line_lexer.state_id(state)
    assert line_lexer.state_id(tuple(state)) == first
    assert line_lexer.state_id(line_lexer.initial_state) == 0
    assert line_lexer.state_for_id(first) == state
    assert line_lexer.state_for_id(-1) == line_lexer.initial_state


def test_unknown_file_types_get_plain_text_without_state():
    line_lexer = LineLexer(lexer_for_path("notes.unknown-ext"))
    assert line_lexer.language == "Text only"
    tokens, state = line_lexer.lex_line("anything", None)
    assert state is None and "".join(v for _, _, v in tokens) == "anything"


def test_lexers_with_their_own_loop_fall_back_to_line_by_line():
    line_lexer = LineLexer(lexer_for_path("config.yaml"))
    tokens, state = line_lexer.lex_line("key: value", line_lexer.initial_state)
    assert state is None and tokens


def test_format_names_cover_the_usual_tokens():
    assert format_name_for(Token.Keyword.Constant) == "keyword"
    assert format_name_for(Token.Name.Function) == "name.function"
    assert format_name_for(Token.Name.Decorator) == "decorator"
    assert format_name_for(Token.Literal.Number.Integer) == "number"
    assert format_name_for(Token.Comment.Single) == "comment"
    assert format_name_for(Token.Name) is None


def test_format_ranges_merge_neighbours_of_the_same_format():
    line_lexer = LineLexer(lexer_for_path("a.py"))
    tokens, _ = line_lexer.lex_line("x = 'ab'  # c", line_lexer.initial_state)
    ranges = format_ranges(tokens)
    assert (4, 4, "string") in ranges
    assert ranges[-1] == (10, 3, "comment")
