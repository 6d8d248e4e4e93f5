"""Find in huge files: matches by line and column, both directions, wrapping, cap, cancel."""

import re

import pytest

from workbench.editor import EditorError
from workbench.editor.large_file_search import (
    LineMatch,
    compile_query,
    count_matches,
    find_match,
    format_match_count,
    match_index,
)
from workbench.editor.line_index import find_line_starts

DATA = b"alpha beta\r\ngamma Beta\nbetamax\n\xff beta caf\xc3\xa9\nlast beta"
STARTS = find_line_starts(DATA)


def find(query, line, column=0, forward=True, **kwargs):
    return find_match(DATA, STARTS, query, line, column, forward, **kwargs)


@pytest.mark.parametrize("chunk_bytes", [1, 7, 1 << 20])
def test_the_next_and_previous_match_are_found_by_line_and_column_in_any_chunk_size(chunk_bytes):
    query = compile_query("beta")
    assert find(query, 0, chunk_bytes=chunk_bytes) == LineMatch(0, 6, 4)
    assert find(query, 0, 7, chunk_bytes=chunk_bytes) == LineMatch(1, 6, 4)
    assert find(query, 2, 1, chunk_bytes=chunk_bytes) == LineMatch(3, 2, 4)
    assert find(query, 2, 0, forward=False, chunk_bytes=chunk_bytes) == LineMatch(1, 6, 4)
    assert find(query, 0, 6, forward=False, chunk_bytes=chunk_bytes) == LineMatch(4, 5, 4)


def test_the_search_wraps_around_unless_told_not_to():
    query = compile_query("alpha")
    assert find(query, 3) == LineMatch(0, 0, 5)
    assert find(query, 3, wrap=False) is None
    assert find(query, 0, 1, forward=False) == LineMatch(0, 0, 5)
    assert find(compile_query("nowhere"), 2) is None


def test_match_case_and_whole_word_narrow_the_search():
    assert len(count_matches(DATA, STARTS, compile_query("beta")).matches) == 5
    assert len(count_matches(DATA, STARTS, compile_query("beta", match_case=True)).matches) == 4
    whole = count_matches(DATA, STARTS, compile_query("BETA", whole_word=True)).matches
    assert [match.line for match in whole] == [0, 1, 3, 4]


def test_regular_expressions_match_inside_one_line_only():
    # "\s" could take the line ending; a match never runs into the next line.
    spans = count_matches(DATA, STARTS, compile_query(r"a\s+\w", regex=True)).matches
    assert spans == [LineMatch(0, 4, 3), LineMatch(1, 4, 3), LineMatch(3, 5, 3)]
    # "$" matches before CRLF line endings too.
    ends = count_matches(DATA, STARTS, compile_query(r"beta$", regex=True)).matches
    assert [match.line for match in ends] == [0, 1, 4]


def test_lines_are_decoded_as_utf8_with_replacement_and_columns_count_characters():
    assert find(compile_query("CAFÉ"), 0) == LineMatch(3, 7, 4)
    assert find(compile_query("\ufffd"), 0) == LineMatch(3, 0, 1)
    assert find(re.compile("café"), 0) == LineMatch(3, 7, 4)


def test_empty_matches_are_skipped():
    assert count_matches(DATA, STARTS, compile_query("q*", regex=True)).matches == []


def test_an_invalid_regular_expression_says_how_to_fix_it():
    with pytest.raises(EditorError, match="Invalid regular expression.*turn off"):
        compile_query("(unclosed", regex=True)
    assert compile_query("") is None


def test_counting_stops_at_the_cap_and_reports_progress_per_chunk():
    data = b"loss=1\n" * 500
    starts = find_line_starts(data)
    progress = []
    result = count_matches(data, starts, compile_query("loss"), cap=120,
                           on_progress=progress.append, chunk_bytes=100)
    assert result.capped and len(result.matches) == 120
    assert len(progress) > 5 and sum(map(len, progress)) == 120
    exact = count_matches(data, starts, compile_query("loss"), cap=500)
    assert not exact.capped and len(exact.matches) == 500


def test_a_cancelled_search_stops_and_returns_nothing():
    data = b"nothing here\n" * 1000
    starts = find_line_starts(data)
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 2

    assert find_match(data, starts, compile_query("x"), 0, cancelled=cancelled, chunk_bytes=64) is None
    assert len(calls) == 3
    assert count_matches(data, starts, compile_query("x"), cancelled=lambda: True) is None


def test_the_count_label_shows_position_progress_and_cap():
    assert format_match_count(2, 1204, more=True) == "3 of 1,204+"
    assert format_match_count(0, 10_000, more=True) == "1 of 10,000+"
    assert format_match_count(4, 17, more=False) == "5 of 17"
    assert format_match_count(None, 17, more=False) == "17 results"
    assert format_match_count(None, 0, more=False) == "No results"
    assert format_match_count(None, 0, more=True) == "Searching…"
    matches = [LineMatch(0, 1, 2), LineMatch(3, 0, 2), LineMatch(3, 5, 2)]
    assert match_index(matches, LineMatch(3, 5, 2)) == 2
    assert match_index(matches, LineMatch(3, 4, 2)) is None
