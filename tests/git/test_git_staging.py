from __future__ import annotations

import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.diff import INDEX_VS_HEAD, WORKTREE_VS_INDEX, diff_file, parse_diff
from workbench.git.repository import open_repository
from workbench.git.staging import (build_patch, discard_hunk, discard_lines, discard_paths, hunk_selection,
                                   stage_hunk, stage_lines, stage_paths, unstage_hunk, unstage_lines,
                                   unstage_paths)
from workbench.git.status import read_status

TWENTY = "".join(f"line {i}\n" for i in range(1, 21))

TWO_HUNKS = """\
diff --git a/f.txt b/f.txt
index 1111111..2222222 100644
--- a/f.txt
+++ b/f.txt
@@ -1,4 +1,5 @@
 line 1
-line 2
+line two
+line 2.5
 line 3
 line 4
@@ -17,4 +18,4 @@ def tail():
 line 17
 line 18
-line 19
+line nineteen
 line 20
"""

NO_NEWLINE = """\
diff --git a/n.txt b/n.txt
index 1111111..2222222 100644
--- a/n.txt
+++ b/n.txt
@@ -1,2 +1,3 @@
 one
-two
\\ No newline at end of file
+two
+three
\\ No newline at end of file
"""


def selected(diff, hunk_index, *texts):
    return [(hunk_index, i) for i, line in enumerate(diff.hunks[hunk_index].lines)
            if line.kind != " " and line.kind + line.text in texts]


# The patch builder, on fixture diffs (no git) -------------------------------------------------

def test_a_hunk_patch_holds_that_hunk_with_its_offset_dropped():
    (diff,) = parse_diff(TWO_HUNKS)
    patch = build_patch(diff, hunk_selection(diff, 1))
    assert patch == ("diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n"
                     "@@ -17,4 +17,4 @@ def tail():\n line 17\n line 18\n-line 19\n+line nineteen\n line 20\n")


def test_a_second_hunk_after_a_chosen_first_one_is_shifted_by_its_growth():
    (diff,) = parse_diff(TWO_HUNKS)
    patch = build_patch(diff, hunk_selection(diff, 0) + hunk_selection(diff, 1))
    assert "@@ -1,4 +1,5 @@\n" in patch and "@@ -17,4 +18,4 @@ def tail():\n" in patch


def test_unselected_removals_become_context_and_unselected_additions_vanish():
    (diff,) = parse_diff(TWO_HUNKS)
    patch = build_patch(diff, selected(diff, 0, "+line 2.5"))
    assert patch.endswith("@@ -1,4 +1,5 @@\n line 1\n line 2\n+line 2.5\n line 3\n line 4\n")


def test_in_reverse_unselected_additions_become_context_and_removals_vanish():
    (diff,) = parse_diff(TWO_HUNKS)
    patch = build_patch(diff, selected(diff, 0, "+line 2.5"), reverse=True)
    assert patch.endswith("@@ -1,4 +1,5 @@\n line 1\n line two\n+line 2.5\n line 3\n line 4\n")
    patch = build_patch(diff, selected(diff, 0, "-line 2"), reverse=True)
    assert patch.endswith("@@ -1,6 +1,5 @@\n line 1\n-line 2\n line two\n line 2.5\n line 3\n line 4\n")


def test_an_unselected_last_line_without_newline_gains_one_before_added_lines():
    (diff,) = parse_diff(NO_NEWLINE)
    patch = build_patch(diff, selected(diff, 0, "+three"))
    assert patch.endswith("@@ -1,2 +1,3 @@\n one\n-two\n\\ No newline at end of file\n+two\n+three\n"
                          "\\ No newline at end of file\n")


def test_a_selected_removal_keeps_its_no_newline_marker():
    (diff,) = parse_diff(NO_NEWLINE)
    patch = build_patch(diff, selected(diff, 0, "-two"))
    assert patch.endswith("@@ -1,2 +1,1 @@\n one\n-two\n\\ No newline at end of file\n")


def test_selecting_only_context_builds_no_patch():
    (diff,) = parse_diff(TWO_HUNKS)
    assert build_patch(diff, [(0, 0), (1, 0)]) is None


def test_a_binary_diff_cannot_be_split():
    (diff,) = parse_diff("diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n")
    with pytest.raises(GitError, match="whole file"):
        build_patch(diff, [(0, 0)])


# Real repositories ----------------------------------------------------------------------------

def edit_two_places(root, name="f.txt"):
    (root / name).write_text(TWENTY.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\n"))


def test_staging_one_hunk_of_two_stages_only_that_hunk(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    edit_two_places(root)
    repo = open_repository(root)
    stage_hunk(repo, diff_file(repo, "f.txt", WORKTREE_VS_INDEX), 0)
    cached = git(root, "diff", "--cached")
    assert "+line two" in cached and "nineteen" not in cached
    unstaged = git(root, "diff")
    assert "+line nineteen" in unstaged and "line two" not in unstaged


def test_staging_selected_lines_stages_only_those_lines(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    (root / "f.txt").write_text(TWENTY.replace("line 5\n", "new a\nnew b\nnew c\n"))
    repo = open_repository(root)
    diff = diff_file(repo, "f.txt")
    stage_lines(repo, diff, selected(diff, 0, "+new b"))
    index_text = git(root, "show", ":f.txt")
    assert index_text == TWENTY.replace("line 5\n", "line 5\nnew b\n")


def test_unstaging_a_hunk_returns_it_to_the_worktree_side(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    edit_two_places(root)
    git(root, "add", "f.txt")
    repo = open_repository(root)
    unstage_hunk(repo, diff_file(repo, "f.txt", INDEX_VS_HEAD), 1)
    cached = git(root, "diff", "--cached")
    assert "+line two" in cached and "nineteen" not in cached
    assert "+line nineteen" in git(root, "diff")


def test_unstaging_selected_lines_keeps_the_others_staged(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    (root / "f.txt").write_text(TWENTY.replace("line 5\n", "new a\nnew b\n"))
    git(root, "add", "f.txt")
    repo = open_repository(root)
    diff = diff_file(repo, "f.txt", INDEX_VS_HEAD)
    unstage_lines(repo, diff, selected(diff, 0, "+new a", "-line 5"))
    assert git(root, "show", ":f.txt") == TWENTY.replace("line 5\n", "line 5\nnew b\n")


def test_discarding_a_hunk_reverts_it_in_the_worktree_only(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    edit_two_places(root)
    repo = open_repository(root)
    discard_hunk(repo, diff_file(repo, "f.txt"), 1)
    assert (root / "f.txt").read_text() == TWENTY.replace("line 2\n", "line two\n")
    assert git(root, "diff", "--cached") == ""


def test_discarding_selected_lines_keeps_the_rest_of_the_edit(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    (root / "f.txt").write_text(TWENTY.replace("line 5\n", "new a\nnew b\n"))
    repo = open_repository(root)
    diff = diff_file(repo, "f.txt")
    discard_lines(repo, diff, selected(diff, 0, "+new b"))
    assert (root / "f.txt").read_text() == TWENTY.replace("line 5\n", "new a\n")


def test_a_crlf_file_stages_one_hunk_byte_for_byte(make_repo):
    root = make_repo()
    crlf = TWENTY.replace("\n", "\r\n").encode()
    (root / "win.txt").write_bytes(crlf)
    git(root, "add", "win.txt")
    git(root, "commit", "-q", "-m", "crlf")
    (root / "win.txt").write_bytes(crlf.replace(b"line 2\r\n", b"line two\r\n").replace(b"line 19\r\n", b"x\r\n"))
    repo = open_repository(root)
    stage_hunk(repo, diff_file(repo, "win.txt"), 0)
    staged = subprocess_bytes(root, "show", ":win.txt")
    assert staged == crlf.replace(b"line 2\r\n", b"line two\r\n")


def test_a_non_ascii_path_with_spaces_stages_selected_lines(make_repo):
    name = "dossier é/mon fichier ü.txt"
    root = make_repo(files={name: TWENTY})
    edit_two_places(root, name)
    repo = open_repository(root)
    diff = diff_file(repo, root / name)
    stage_lines(repo, diff, selected(diff, 1, "+line nineteen", "-line 19"))
    assert git(root, "show", f":{name}") == TWENTY.replace("line 19\n", "line nineteen\n")
    unstage_hunk(repo, diff_file(repo, name, INDEX_VS_HEAD), 0)
    assert git(root, "diff", "--cached") == ""


def test_an_added_line_at_a_file_end_without_newline_stages(make_repo):
    root = make_repo(files={"n.txt": "one\ntwo"})
    (root / "n.txt").write_text("one\ntwo\nthree\nfour")
    repo = open_repository(root)
    diff = diff_file(repo, "n.txt")
    stage_lines(repo, diff, selected(diff, 0, "+three"))
    assert git(root, "show", ":n.txt") == "one\ntwo\nthree\n"


def test_staging_lines_of_an_untracked_file_adds_just_those_lines(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "new.txt").write_text("keep\nskip\n")
    repo = open_repository(root)
    diff = diff_file(repo, "new.txt")
    stage_lines(repo, diff, selected(diff, 0, "+keep"))
    assert git(root, "show", ":new.txt") == "keep\n"


def test_lines_from_the_wrong_diff_are_refused_with_a_hint(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    edit_two_places(root)
    git(root, "add", "f.txt")
    repo = open_repository(root)
    with pytest.raises(GitError, match="unstaged"):
        stage_hunk(repo, diff_file(repo, "f.txt", INDEX_VS_HEAD), 0)


def test_a_stale_diff_says_to_refresh(make_repo):
    root = make_repo(files={"f.txt": TWENTY})
    edit_two_places(root)
    repo = open_repository(root)
    diff = diff_file(repo, "f.txt")
    git(root, "add", "f.txt")
    with pytest.raises(GitError, match="Refresh"):
        stage_hunk(repo, diff, 0)


def test_whole_files_stage_unstage_and_discard(make_repo):
    root = make_repo(files={"a.txt": "a\n", "src/b.txt": "b\n"})
    (root / "a.txt").write_text("a2\n")
    (root / "src" / "b.txt").unlink()
    repo = open_repository(root)
    stage_paths(repo, ["a.txt", "src"])
    status = read_status(repo)
    assert [(c.path, c.index_state) for c in status.staged] == [("a.txt", "M"), ("src/b.txt", "D")]
    unstage_paths(repo, [root / "a.txt"])
    assert [c.path for c in read_status(repo).staged] == ["src/b.txt"]
    discard_paths(repo, ["a.txt"])
    assert (root / "a.txt").read_text() == "a\n"


def test_unstaging_before_the_first_commit_keeps_the_file_on_disk(make_repo):
    root = make_repo()
    (root / "first.txt").write_text("1\n")
    repo = open_repository(root)
    stage_paths(repo, ["first.txt"])
    unstage_paths(repo, ["first.txt"])
    status = read_status(repo)
    assert status.staged == [] and [c.path for c in status.untracked] == ["first.txt"]


def test_discarding_an_untracked_file_moves_it_to_the_trash(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "scratch").mkdir()
    (root / "scratch" / "notes é.txt").write_text("precious\n")
    repo = open_repository(root)
    (moved,) = discard_paths(repo, ["scratch"])
    assert not (root / "scratch" / "notes é.txt").exists()
    assert moved.read_text() == "precious\n" and (root / ".workbench" / "trash") in moved.parents
    assert read_status(repo).is_clean


def test_discarding_every_line_of_an_untracked_file_moves_it_to_the_trash(make_repo, tmp_path):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "new.txt").write_text("x\ny\n")
    repo = open_repository(root)
    diff = diff_file(repo, "new.txt")
    discard_hunk(repo, diff, 0, trash_dir=tmp_path / "trash")
    assert not (root / "new.txt").exists()
    assert [p.read_text() for p in (tmp_path / "trash").rglob("new.txt")] == ["x\ny\n"]


def subprocess_bytes(root, *args):
    import subprocess

    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def test_staging_some_lines_of_a_deleted_file_keeps_the_rest_in_the_index(make_repo):
    root = make_repo(files={"gone.txt": "a\nb\nc\n"})
    (root / "gone.txt").unlink()
    repo = open_repository(root)
    diff = diff_file(repo, "gone.txt")
    stage_lines(repo, diff, selected(diff, 0, "-b"))
    assert git(root, "show", ":gone.txt") == "a\nc\n"
    stage_hunk(repo, diff_file(repo, "gone.txt"), 0)
    assert [(c.path, c.index_state) for c in read_status(repo).staged] == [("gone.txt", "D")]


def test_unstaging_one_line_of_a_new_file_keeps_the_file_staged(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "new.txt").write_text("x\ny\nz\n")
    git(root, "add", "new.txt")
    repo = open_repository(root)
    diff = diff_file(repo, "new.txt", INDEX_VS_HEAD)
    unstage_lines(repo, diff, selected(diff, 0, "+y"))
    assert git(root, "show", ":new.txt") == "x\nz\n"
    unstage_hunk(repo, diff_file(repo, "new.txt", INDEX_VS_HEAD), 0)
    assert [c.path for c in read_status(repo).untracked] == ["new.txt"]
