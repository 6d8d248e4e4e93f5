"""Replace in Files' service: a plan checked against the files, writes only to files unchanged
since, and an undo that puts the bytes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.search.replace import (
    ReplaceError,
    apply_replacement,
    plan_replacement,
    undo_replacement,
)
from workbench.search.ripgrep import SearchQuery, search_files


def write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def search(root: Path, query: SearchQuery):
    files = []
    search_files(root, query, files.extend)
    return files


def test_a_literal_replacement_shows_every_change_then_writes_them_and_undo_puts_them_back(tmp_path):
    before = {"a.py": b"old = 1\r\nprint(old, old)\r\n", "b/c.py": "# the old wörld\n".encode()}
    write(tmp_path, before)
    query = SearchQuery("old", case_sensitive=True)
    plan = plan_replacement(tmp_path, query, "new_$1", search(tmp_path, query))
    previews = sorted((change.path, edit.line, edit.line_after) for change in plan.files for edit in change.edits)
    # A literal search's replacement is literal too: "$1" stays as typed.
    assert previews == [("a.py", 1, "new_$1 = 1"), ("a.py", 2, "print(new_$1, old)"),
                        ("a.py", 2, "print(old, new_$1)"), ("b/c.py", 1, "# the new_$1 wörld")]
    assert plan.edit_count == 4 and not any(change.problem for change in plan.files)
    assert (tmp_path / "a.py").read_bytes() == before["a.py"]  # a preview changes nothing

    outcome = apply_replacement(plan)
    assert (outcome.files, outcome.replaced, outcome.skipped) == (2, 4, [])
    assert (tmp_path / "a.py").read_bytes() == b"new_$1 = 1\r\nprint(new_$1, new_$1)\r\n"  # CRLF kept
    assert (tmp_path / "b/c.py").read_bytes() == "# the new_$1 wörld\n".encode()

    undone = undo_replacement(tmp_path, outcome.undo)
    assert sorted(undone.restored) == ["a.py", "b/c.py"] and undone.skipped == []
    for name, data in before.items():
        assert (tmp_path / name).read_bytes() == data


def test_a_regex_replacement_fills_in_groups_as_vs_code_does(tmp_path):
    write(tmp_path, {"m.py": b"def load_model(path):\n    return load_data(path)\n"})
    query = SearchQuery(r"load_(?P<what>\w+)\((\w+)\)", regex=True)
    plan = plan_replacement(tmp_path, query, "read_${what}($2, $1_x, $$, $0)", search(tmp_path, query))
    apply_replacement(plan)
    assert (tmp_path / "m.py").read_text() == (
        "def read_model(path, model_x, $, load_model(path)):\n"
        "    return read_data(path, data_x, $, load_data(path))\n")


def test_whole_word_and_ignore_case_replace_only_what_the_search_found(tmp_path):
    write(tmp_path, {"w.py": b"Size = size + sizes + SIZE\n"})
    query = SearchQuery("size", whole_word=True, regex=True)
    plan = plan_replacement(tmp_path, query, "n", search(tmp_path, query))
    apply_replacement(plan)
    assert (tmp_path / "w.py").read_text() == "n = n + sizes + n\n"


def test_only_the_ticked_changes_are_made(tmp_path):
    write(tmp_path, {"a.txt": b"x x x\n", "b.txt": b"x\n"})
    query = SearchQuery("x")
    plan = plan_replacement(tmp_path, query, "y", search(tmp_path, query))
    outcome = apply_replacement(plan, chosen={("a.txt", 1)})
    assert (outcome.files, outcome.replaced) == (1, 1)
    assert (tmp_path / "a.txt").read_text() == "x y x\n"
    assert (tmp_path / "b.txt").read_text() == "x\n"


def test_a_file_changed_since_the_search_is_shown_but_not_replaced(tmp_path):
    write(tmp_path, {"a.txt": b"keep target here\n", "b.txt": b"target\n"})
    query = SearchQuery("target")
    results = search(tmp_path, query)
    (tmp_path / "a.txt").write_bytes(b"someone typed first: keep target here\n")
    plan = plan_replacement(tmp_path, query, "done", results)
    problems = {change.path: change.problem for change in plan.files}
    assert "changed since the search" in problems["a.txt"] and problems["b.txt"] == ""
    outcome = apply_replacement(plan)
    assert outcome.files == 1 and outcome.skipped == [("a.txt", problems["a.txt"])]
    assert (tmp_path / "a.txt").read_bytes() == b"someone typed first: keep target here\n"
    assert (tmp_path / "b.txt").read_bytes() == b"done\n"


def test_a_file_changed_between_the_preview_and_the_replacement_is_left_alone(tmp_path):
    write(tmp_path, {"a.txt": b"target\n", "b.txt": b"target\n"})
    query = SearchQuery("target")
    plan = plan_replacement(tmp_path, query, "done", search(tmp_path, query))
    # The same length and the match still in place: only the file's hash can tell.
    (tmp_path / "a.txt").write_bytes(b"target\r")
    outcome = apply_replacement(plan)
    assert outcome.skipped == [("a.txt", "changed since the preview; search again to replace in it")]
    assert (tmp_path / "a.txt").read_bytes() == b"target\r"
    assert (tmp_path / "b.txt").read_bytes() == b"done\n"


def test_files_named_to_skip_are_not_written(tmp_path):
    write(tmp_path, {"open.txt": b"target\n"})
    query = SearchQuery("target")
    plan = plan_replacement(tmp_path, query, "done", search(tmp_path, query))
    outcome = apply_replacement(plan, skip={"open.txt": "has unsaved changes in the editor"})
    assert outcome.skipped == [("open.txt", "has unsaved changes in the editor")]
    assert (tmp_path / "open.txt").read_bytes() == b"target\n"


def test_undo_leaves_a_file_edited_since_the_replacement_as_it_is(tmp_path):
    write(tmp_path, {"a.txt": b"target\n", "b.txt": b"target\n"})
    query = SearchQuery("target")
    outcome = apply_replacement(plan_replacement(tmp_path, query, "done", search(tmp_path, query)))
    (tmp_path / "a.txt").write_bytes(b"done, and more work\n")
    undone = undo_replacement(tmp_path, outcome.undo)
    assert undone.restored == ["b.txt"]
    assert undone.skipped == [("a.txt", "changed since the replacement, so it is left as it is")]
    assert (tmp_path / "a.txt").read_bytes() == b"done, and more work\n"
    assert (tmp_path / "b.txt").read_bytes() == b"target\n"


def test_a_file_that_is_not_utf8_is_shown_but_not_changed(tmp_path):
    write(tmp_path, {"latin.txt": "caf\xe9 target\n".encode("latin-1")})
    query = SearchQuery("target")
    plan = plan_replacement(tmp_path, query, "done", search(tmp_path, query))
    assert plan.files[0].problem == "is not UTF-8 text, so it is not changed"
    assert apply_replacement(plan).files == 0
    assert (tmp_path / "latin.txt").read_bytes() == "caf\xe9 target\n".encode("latin-1")


def test_a_pattern_whose_groups_python_cannot_fill_in_says_so(tmp_path):
    write(tmp_path, {"a.txt": b"abc\n"})
    query = SearchQuery(r"\pL+", regex=True)  # a Unicode class rg knows and Python's re does not
    results = search(tmp_path, query)
    assert results
    with pytest.raises(ReplaceError, match="cannot be filled in"):
        plan_replacement(tmp_path, query, "<$0>", results)
    # Without references the replacement needs no second reading of the pattern.
    apply_replacement(plan_replacement(tmp_path, query, "x", results))
    assert (tmp_path / "a.txt").read_bytes() == b"x\n"
