from __future__ import annotations

import pytest

from tests.git.conftest import git
from workbench.git import diff as diff_module
from workbench.git.diff import (ADDED, DELETED, INDEX_VS_HEAD, RENAMED, UNCHANGED, WORKTREE_VS_INDEX,
                                changed_ranges, diff_commits, diff_file, parse_diff)
from workbench.git.repository import open_repository

TEN = "".join(f"line {i}\n" for i in range(1, 11))


def kinds(hunk):
    return "".join(line.kind for line in hunk.lines)


def test_a_worktree_change_is_one_hunk_with_numbered_lines(make_repo):
    root = make_repo(files={"a.txt": TEN})
    (root / "a.txt").write_text(TEN.replace("line 5\n", "line five\n"))
    diff = diff_file(open_repository(root), "a.txt", WORKTREE_VS_INDEX)
    assert (diff.path, diff.old_path, diff.is_binary, diff.is_too_large) == ("a.txt", "a.txt", False, False)
    (hunk,) = diff.hunks
    assert (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count) == (2, 7, 2, 7)
    assert kinds(hunk) == "   -+   "
    removed, added = hunk.lines[3], hunk.lines[4]
    assert (removed.text, removed.old_no, removed.new_no) == ("line 5", 5, None)
    assert (added.text, added.old_no, added.new_no) == ("line five", None, 5)
    assert hunk.lines[5].old_no == 6 and hunk.lines[5].new_no == 6


def test_paired_lines_mark_only_the_changed_words(make_repo):
    root = make_repo(files={"m.py": "x = compute(alpha, beta)\n"})
    (root / "m.py").write_text("x = compute(alpha, gamma)\n")
    removed, added = diff_file(open_repository(root), "m.py").hunks[0].lines
    assert [removed.text[s:e] for s, e in removed.intraline] == ["beta"]
    assert [added.text[s:e] for s, e in added.intraline] == ["gamma"]


def test_very_long_lines_get_no_intraline_marks():
    long_a, long_b = "a " * 2000, "b " * 2000
    assert changed_ranges(long_a, long_b) == ([], [])


def test_lines_with_nothing_in_common_get_no_intraline_marks():
    assert changed_ranges("alpha beta", "gamma delta") == ([], [])


def test_the_staged_diff_compares_the_index_with_head(make_repo):
    root = make_repo(files={"a.txt": TEN})
    (root / "a.txt").write_text(TEN + "staged\n")
    git(root, "add", "a.txt")
    (root / "a.txt").write_text(TEN + "staged\nnot staged\n")
    repo = open_repository(root)
    staged = diff_file(repo, "a.txt", INDEX_VS_HEAD)
    assert [l.text for l in staged.hunks[0].lines if l.kind == "+"] == ["staged"]
    unstaged = diff_file(repo, "a.txt", WORKTREE_VS_INDEX)
    assert [l.text for l in unstaged.hunks[0].lines if l.kind == "+"] == ["not staged"]
    assert staged.source == INDEX_VS_HEAD and unstaged.source == WORKTREE_VS_INDEX


def test_an_unchanged_file_has_no_hunks(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    diff = diff_file(open_repository(root), "a.txt")
    assert diff.hunks == [] and diff.status == UNCHANGED


def test_an_untracked_file_diffs_as_all_added(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "new file é.txt").write_text("one\ntwo\n")
    diff = diff_file(open_repository(root), root / "new file é.txt")
    assert diff.path == "new file é.txt" and diff.old_path is None and diff.status == ADDED
    (hunk,) = diff.hunks
    assert [(l.kind, l.text, l.new_no) for l in hunk.lines] == [("+", "one", 1), ("+", "two", 2)]


def test_the_staged_diff_works_before_the_first_commit(make_repo):
    root = make_repo()
    (root / "first.txt").write_text("hello\n")
    git(root, "add", "first.txt")
    diff = diff_file(open_repository(root), "first.txt", INDEX_VS_HEAD)
    assert diff.status == ADDED and diff.hunks[0].lines[0].text == "hello"


def test_a_deleted_file_diffs_as_all_removed(make_repo):
    root = make_repo(files={"gone.txt": "a\nb\n"})
    (root / "gone.txt").unlink()
    diff = diff_file(open_repository(root), "gone.txt")
    assert diff.status == DELETED and kinds(diff.hunks[0]) == "--"


def test_a_binary_file_gets_a_size_summary_instead_of_hunks(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "blob.bin").write_bytes(bytes(range(256)) * 4)
    git(root, "add", "blob.bin")
    git(root, "commit", "-q", "-m", "binary")
    (root / "blob.bin").write_bytes(bytes(range(256)) * 8)
    diff = diff_file(open_repository(root), "blob.bin")
    assert diff.is_binary and diff.hunks == []
    assert (diff.old_size, diff.new_size) == (1024, 2048)
    assert "1.0 KB" in diff.summary and "2.0 KB" in diff.summary


def test_a_missing_newline_at_the_end_is_kept_on_its_line(make_repo):
    root = make_repo(files={"a.txt": "one\ntwo"})
    (root / "a.txt").write_text("one\ntwo\nthree")
    lines = diff_file(open_repository(root), "a.txt").hunks[0].lines
    assert [(l.kind, l.text, l.no_newline) for l in lines] == [
        (" ", "one", False), ("-", "two", True), ("+", "two", False), ("+", "three", True)]


def test_crlf_lines_keep_their_carriage_return(make_repo):
    root = make_repo()
    (root / "win.txt").write_bytes(b"a\r\nb\r\n")
    git(root, "add", "win.txt")
    git(root, "commit", "-q", "-m", "crlf")
    (root / "win.txt").write_bytes(b"a\r\nB\r\n")
    lines = diff_file(open_repository(root), "win.txt").hunks[0].lines
    assert [l.text for l in lines] == ["a\r", "b\r", "B\r"]


def test_a_conflicted_file_diffs_against_our_side(make_repo):
    root = make_repo(files={"c.txt": "base\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "c.txt").write_text("theirs\n")
    git(root, "commit", "-q", "-am", "theirs")
    git(root, "checkout", "-q", "main")
    (root / "c.txt").write_text("ours\n")
    git(root, "commit", "-q", "-am", "ours")
    git(root, "merge", "other", check=False)
    diff = diff_file(open_repository(root), "c.txt")
    added = [l.text for l in diff.hunks[0].lines if l.kind == "+"]
    assert "<<<<<<< HEAD" in added and "theirs" in added


def test_commits_diff_detects_renames_and_lists_every_file(make_repo):
    root = make_repo(files={"old name.txt": TEN, "keep.txt": "k\n", "drop.txt": "d\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    git(root, "mv", "old name.txt", "new name.txt")
    (root / "new name.txt").write_text(TEN.replace("line 3", "line three"))
    (root / "keep.txt").write_text("k2\n")
    git(root, "rm", "-q", "drop.txt")
    (root / "added.txt").write_text("fresh\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "second")
    diffs = {d.path: d for d in diff_commits(open_repository(root), first, "HEAD")}
    assert set(diffs) == {"new name.txt", "keep.txt", "drop.txt", "added.txt"}
    renamed = diffs["new name.txt"]
    assert (renamed.status, renamed.old_path) == (RENAMED, "old name.txt")
    assert [l.text for l in renamed.hunks[0].lines if l.kind == "+"] == ["line three"]
    assert diffs["drop.txt"].status == DELETED and diffs["added.txt"].status == ADDED
    only = diff_commits(open_repository(root), first, "HEAD", path="keep.txt")
    assert [d.path for d in only] == ["keep.txt"]


def test_a_diff_over_the_line_limit_is_too_large(make_repo, monkeypatch):
    monkeypatch.setattr(diff_module, "MAX_DIFF_LINES", 50)
    root = make_repo(files={"a.txt": "a\n"})
    (root / "a.txt").write_text("".join(f"{i}\n" for i in range(100)))
    diff = diff_file(open_repository(root), "a.txt")
    assert diff.is_too_large and diff.hunks == [] and "lines" in diff.summary


@pytest.mark.slow
def test_a_50_mb_file_is_too_large_and_is_never_diffed(make_repo):
    root = make_repo(files={"small.txt": "s\n"})
    big = root / "big.txt"
    big.write_bytes(b"0123456789abcdef\n" * (50 * 1024 * 1024 // 17))
    git(root, "add", "big.txt")
    first = git(root, "rev-parse", "HEAD").strip()
    git(root, "commit", "-q", "-m", "big")
    with big.open("ab") as f:
        f.write(b"more\n")
    repo = open_repository(root)
    unstaged = diff_file(repo, "big.txt")
    assert unstaged.is_too_large and unstaged.hunks == [] and "MB" in unstaged.summary
    (root / "small.txt").write_text("s2\n")
    git(root, "commit", "-q", "-am", "small")
    diffs = {d.path: d for d in diff_commits(repo, first, "HEAD")}
    assert diffs["big.txt"].is_too_large and diffs["big.txt"].new_size > 50_000_000
    assert not diffs["small.txt"].is_too_large and diffs["small.txt"].hunks


def test_parsing_keeps_content_lines_that_look_like_headers():
    text = ("diff --git a/x.md b/x.md\nindex 1111111..2222222 100644\n--- a/x.md\n+++ b/x.md\n"
            "@@ -1,3 +1,2 @@ Title\n--- old rule\n+++ new rule\n context\n-@@ not a hunk\n"
            "diff --git a/y b/y\nnew file mode 100755\nindex 0000000..3333333\n--- /dev/null\n+++ b/y\n"
            "@@ -0,0 +1 @@\n+#!/bin/sh\n\\ No newline at end of file\n")
    x, y = parse_diff(text)
    assert [(l.kind, l.text) for l in x.hunks[0].lines] == [
        ("-", "-- old rule"), ("+", "++ new rule"), (" ", "context"), ("-", "@@ not a hunk")]
    assert x.hunks[0].section == " Title" and x.new_mode == "100644"
    assert (y.path, y.status, y.new_mode) == ("y", ADDED, "100755")
    assert y.hunks[0].lines[0].no_newline


def test_parsing_reads_quoted_names_and_names_with_spaces():
    text = ('diff --git "a/tab\\there" "b/tab\\there"\n--- "a/tab\\there"\n+++ "b/tab\\there"\n'
            "@@ -1 +1 @@\n-a\n+b\n"
            "diff --git a/with b/space b/with b/space\n--- a/with b/space\t\n+++ b/with b/space\t\n"
            "@@ -1 +1 @@\n-a\n+b\n"
            'diff --git a/caf\\303\\251 b/caf\\303\\251\nBinary files a/x and b/x differ\n')
    quoted, spaced, binary = parse_diff(text.replace("a/caf\\303\\251 b/caf\\303\\251",
                                                     '"a/caf\\303\\251" "b/caf\\303\\251"'))
    assert quoted.path == "tab\there" and quoted.old_path == "tab\there"
    assert spaced.path == "with b/space" and spaced.old_path == "with b/space"
    assert binary.path == "café" and binary.is_binary
