"""Find and replace: options, counts, bad expressions, one undo step."""

import pytest

from workbench.editor.widgets.code_editor import CodeEditor
from workbench.editor.widgets.find_bar import FindBar

TEXT = "Cat cat concat\ncat_food CAT\nthe end"


@pytest.fixture
def bar(qtbot):
    editor = CodeEditor(language="Python")
    editor.setPlainText(TEXT)
    bar = FindBar(editor)
    qtbot.addWidget(editor)
    qtbot.addWidget(bar)
    editor.show()
    bar.open(replace=True)
    return bar


def test_plain_search_ignores_case_by_default(bar):
    bar.set_query("cat")
    assert len(bar.matches()) == 5


def test_match_case_and_whole_word_narrow_the_search(bar):
    bar.set_query("cat", match_case=True)
    assert len(bar.matches()) == 3
    bar.set_query("cat", whole_word=True)
    assert [TEXT[s:e] for s, e in bar.matches()] == ["Cat", "cat", "CAT"]


def test_regex_search_and_count_label(bar):
    bar.set_query(r"c\w+t\b", regex=True, match_case=True)
    assert [TEXT[s:e] for s, e in bar.matches()] == ["cat", "concat"]
    assert bar.count_text() == "1 of 2"
    bar.find_next()
    assert bar.count_text() == "2 of 2"
    bar.find_next()
    assert bar.count_text() == "1 of 2"
    bar.find_previous()
    assert bar.count_text() == "2 of 2"


def test_a_plain_search_treats_regex_characters_literally(bar):
    bar.set_query(".*")
    assert bar.matches() == []
    assert bar.count_text() == "No results"


def test_invalid_regex_shows_the_error_and_does_not_raise(bar):
    bar.set_query("(unclosed", regex=True)
    assert bar.matches() == []
    assert bar.count_text().startswith("Invalid regular expression")
    assert not bar.find_next()
    assert bar.replace_all() == 0
    assert bar.editor.toPlainText() == TEXT


def test_replace_all_is_one_undo_step(bar):
    bar.set_query("cat", whole_word=True)
    bar.replace_edit.setText("dog")
    assert bar.replace_all() == 3
    assert bar.editor.toPlainText() == "dog dog concat\ncat_food dog\nthe end"
    bar.editor.undo()
    assert bar.editor.toPlainText() == TEXT


def test_regex_replace_expands_groups(bar):
    bar.set_query(r"(\w+)_(\w+)", regex=True)
    bar.replace_edit.setText(r"$2-\1")
    bar.replace_all()
    assert "food-cat" in bar.editor.toPlainText()


def test_replace_changes_the_current_match_and_moves_on(bar):
    bar.set_query("end")
    bar.replace_edit.setText("END")
    assert bar.current_index() == 0
    bar.replace_current()
    assert bar.editor.toPlainText().endswith("the END")


def test_empty_matches_are_skipped(bar):
    bar.set_query("x*", regex=True)
    assert bar.matches() == []
    assert not bar.find_next()
