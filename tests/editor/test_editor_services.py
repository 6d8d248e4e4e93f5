"""The Qt-free rules: line edits, brackets, go to line, hot exit storage, line index."""

import mmap

import numpy as np
import pytest

from workbench.editor import (
    EditorError,
    HotExitStore,
    comment_prefix_for,
    dedent_lines,
    find_line_starts,
    find_matching_bracket,
    indent_for_new_line,
    indent_lines,
    parse_line_and_column,
    toggle_comment,
)
from workbench.editor.line_index import line_bytes


def test_indent_adds_one_level_and_leaves_blank_lines_empty():
    assert indent_lines(["a", "", "  b"]) == ["    a", "", "      b"]


def test_dedent_removes_at_most_one_level():
    assert dedent_lines(["      a", "  b", "c", "\tt"]) == ["  a", "b", "c", "t"]


def test_toggle_comment_comments_at_the_smallest_indent_and_uncomments_back():
    lines = ["    if x:", "        y()", "", "    z"]
    commented = toggle_comment(lines, "#")
    assert commented == ["    # if x:", "    #     y()", "", "    # z"]
    assert toggle_comment(commented, "#") == lines


def test_toggle_comment_on_a_mixed_block_comments_everything():
    assert toggle_comment(["// a", "b"], "//") == ["// // a", "// b"]


@pytest.mark.parametrize(
    "language, prefix",
    [("Python", "#"), ("Bash", "#"), ("TOML", "#"), ("YAML", "#"), ("C", "//"), ("C++", "//"),
     ("JavaScript", "//"), ("Lua", "--"), ("SQL", "--"), ("Markdown", None)],
)
def test_comment_prefix_follows_the_language(language, prefix):
    assert comment_prefix_for(language) == prefix


def test_enter_keeps_indent_and_adds_a_level_after_a_python_colon():
    assert indent_for_new_line("    x = 1", "Python") == "    "
    assert indent_for_new_line("    def f():  # note", "Python") == "        "
    assert indent_for_new_line("    s = 'a:'", "Python") == "    "
    assert indent_for_new_line("int main() {", "C") == "    "


def test_matching_bracket_is_found_across_lines_and_nesting():
    lines = ["f(a, [b,", "  c], (d))", "x"]
    get = lambda n: lines[n] if 0 <= n < len(lines) else None  # noqa: E731
    assert find_matching_bracket(get, 0, 1) == (1, 9)
    assert find_matching_bracket(get, 1, 9) == (0, 1)
    assert find_matching_bracket(get, 0, 5) == (1, 3)
    assert find_matching_bracket(get, 2, 0) is None
    assert find_matching_bracket(lambda n: ["(("][0] if n == 0 else None, 0, 0) is None


def test_go_to_line_entry_accepts_line_and_column():
    assert parse_line_and_column("12") == (12, 1)
    assert parse_line_and_column(" 12:5 ") == (12, 5)
    assert parse_line_and_column(":7", current_line=3) == (3, 7)
    with pytest.raises(EditorError, match="not a line number"):
        parse_line_and_column("twelve")


def test_hot_exit_entry_round_trips_and_is_discarded(project):
    store = HotExitStore(project)
    assert store.available
    target = project / "src" / "a.py"
    store.save(target, "unsaved ☕\n", "utf-16-le", "\r\n", True, "abc")
    entry = store.load(target)
    assert (entry.path, entry.text, entry.encoding, entry.eol, entry.has_bom, entry.disk_sha256) == (
        "src/a.py", "unsaved ☕\n", "utf-16-le", "\r\n", True, "abc")
    assert [e.path for e in store.entries()] == ["src/a.py"]
    assert store.absolute_path(entry) == target.resolve()
    store.discard(target)
    assert store.load(target) is None
    assert store.entries() == []


def test_hot_exit_store_is_unavailable_when_its_folder_cannot_be_made(project):
    (project / ".workbench").write_text("a file where a folder should be")
    store = HotExitStore(project)
    assert not store.available
    store.save(project / "a.py", "text")
    assert store.load(project / "a.py") is None


def test_line_starts_are_found_chunk_by_chunk(tmp_path):
    data = b"".join(f"line {i}\r\n".encode() for i in range(1000)) + b"tail"
    path = tmp_path / "log.txt"
    path.write_bytes(data)
    reports = []
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        starts = find_line_starts(mm, on_chunk=lambda s, done: reports.append(done), chunk_bytes=1000)
        assert len(starts) == 1001
        assert line_bytes(mm, starts, 7, len(mm)) == b"line 7"
        assert line_bytes(mm, starts, 1000, len(mm)) == b"tail"
    assert len(reports) > 10 and reports[-1] == len(data)
    expected = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    assert np.array_equal(starts, expected)


def test_a_final_newline_adds_no_empty_line():
    assert list(find_line_starts(b"a\nb\n")) == [0, 2]
    assert list(find_line_starts(b"")) == [0]


def test_line_index_stops_when_cancelled():
    assert find_line_starts(b"a\n" * 100, cancelled=lambda: True, chunk_bytes=10) is None
