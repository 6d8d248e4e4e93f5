from __future__ import annotations

import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.repository import open_repository
from workbench.git.status import (CONFLICTED, STAGED, UNSTAGED, UNTRACKED, StatusCache, parse_status,
                                  read_status)


def paths(changes):
    return [change.path for change in changes]


def test_a_clean_repository_reports_its_branch_and_head_and_nothing_changed(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    status = read_status(open_repository(root))
    assert status.branch == "main"
    assert status.head == git(root, "rev-parse", "HEAD").strip()
    assert status.is_clean and status.upstream is None and (status.ahead, status.behind) == (0, 0)


def test_staged_unstaged_and_untracked_files_land_in_their_groups(make_repo):
    root = make_repo(files={"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    (root / "a.txt").write_text("a2\n")
    git(root, "add", "a.txt")
    (root / "a.txt").write_text("a3\n")
    (root / "b.txt").write_text("b2\n")
    (root / "c.txt").unlink()
    (root / "new").mkdir()
    (root / "new" / "deep.txt").write_text("n\n")
    status = read_status(open_repository(root))
    assert paths(status.staged) == ["a.txt"] and status.staged[0].index_state == "M"
    assert paths(status.unstaged) == ["a.txt", "b.txt", "c.txt"]
    assert [c.worktree_state for c in status.unstaged] == ["M", "M", "D"]
    # --untracked-files=all: files inside a new folder, not the folder.
    assert paths(status.untracked) == ["new/deep.txt"] and status.untracked[0].kind == UNTRACKED
    assert {c.kind for c in status.for_path("a.txt")} == {STAGED, UNSTAGED}


def test_a_repository_without_commits_has_no_head_but_a_branch(make_repo):
    root = make_repo()
    (root / "first.txt").write_text("1\n")
    git(root, "add", "first.txt")
    (root / "other.txt").write_text("2\n")
    status = read_status(open_repository(root))
    assert status.head is None and status.branch == "main"
    assert paths(status.staged) == ["first.txt"] and status.staged[0].index_state == "A"
    assert paths(status.untracked) == ["other.txt"]


def test_a_detached_head_has_no_branch(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "--detach")
    status = read_status(open_repository(root))
    assert status.branch is None and status.is_detached and status.head == head


def test_a_staged_rename_keeps_both_names_and_its_score(make_repo):
    root = make_repo(files={"old name.txt": "".join(f"line {i}\n" for i in range(20))})
    git(root, "mv", "old name.txt", "new name.txt")
    status = read_status(open_repository(root))
    (change,) = status.staged
    assert (change.path, change.orig_path, change.index_state) == ("new name.txt", "old name.txt", "R")
    assert change.similarity == 100


def test_paths_with_spaces_and_non_ascii_come_back_unquoted(make_repo):
    root = make_repo(files={"dossier é/fichier ünï.txt": "x\n"})
    (root / "dossier é" / "fichier ünï.txt").write_text("y\n")
    (root / "日本 語.txt").write_text("z\n")
    status = read_status(open_repository(root))
    assert paths(status.unstaged) == ["dossier é/fichier ünï.txt"]
    assert paths(status.untracked) == ["日本 語.txt"]


def test_a_conflicted_merge_lists_conflicts_with_their_kind(make_repo):
    root = make_repo(files={"both.txt": "base\n", "gone.txt": "base\n"})
    git(root, "checkout", "-q", "-b", "feature")
    (root / "both.txt").write_text("feature\n")
    (root / "gone.txt").write_text("feature edit\n")
    git(root, "commit", "-q", "-am", "feature")
    git(root, "checkout", "-q", "main")
    (root / "both.txt").write_text("main\n")
    git(root, "rm", "-q", "gone.txt")
    git(root, "commit", "-q", "-am", "main")
    git(root, "merge", "feature", check=False)
    status = read_status(open_repository(root))
    kinds = {c.path: (c.kind, c.index_state + c.worktree_state, c.conflict_kind) for c in status.conflicted}
    assert kinds == {"both.txt": (CONFLICTED, "UU", "both modified"),
                     "gone.txt": (CONFLICTED, "DU", "deleted by us")}
    assert status.staged == [] and status.unstaged == []


def test_a_submodule_is_flagged_as_such(make_repo):
    library = make_repo("library", files={"lib.py": "x = 1\n"})
    root = make_repo("app", files={"app.py": "y = 1\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/lib")
    git(root, "commit", "-q", "-m", "add submodule")
    (root / "vendor" / "lib" / "lib.py").write_text("x = 2\n")
    status = read_status(open_repository(root))
    (change,) = status.unstaged
    assert change.path == "vendor/lib" and change.is_submodule and change.submodule_state == ".M."
    assert status.untracked == []


def test_upstream_ahead_and_behind_are_counted(make_repo, tmp_path):
    origin = make_repo("origin", files={"a.txt": "a\n"})
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    (origin / "a.txt").write_text("remote\n")
    git(origin, "commit", "-q", "-am", "remote work")
    git(clone, "fetch", "-q")
    (clone / "b.txt").write_text("b\n")
    git(clone, "add", "b.txt")
    git(clone, "commit", "-q", "-m", "local 1")
    status = read_status(open_repository(clone))
    assert (status.upstream, status.ahead, status.behind) == ("origin/main", 1, 1)
    assert not status.upstream_gone


def test_paths_limit_the_status_to_those_files_and_folders(make_repo):
    root = make_repo(files={"a.txt": "a\n", "src/b.py": "b\n", "src/c.py": "c\n"})
    for name in ("a.txt", "src/b.py", "src/c.py"):
        (root / name).write_text("changed\n")
    repo = open_repository(root)
    assert paths(read_status(repo, ["a.txt"]).unstaged) == ["a.txt"]
    assert paths(read_status(repo, ["src"]).unstaged) == ["src/b.py", "src/c.py"]
    assert paths(read_status(repo, [root / "src" / "c.py"]).unstaged) == ["src/c.py"]


def test_a_path_that_looks_like_a_glob_means_only_that_file(make_repo):
    root = make_repo(files={"*.txt": "star\n", "a.txt": "a\n"})
    (root / "*.txt").write_text("star 2\n")
    (root / "a.txt").write_text("a 2\n")
    assert paths(read_status(open_repository(root), ["*.txt"]).unstaged) == ["*.txt"]


def test_the_cache_refreshes_only_the_paths_it_is_given(make_repo):
    root = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (root / "a.txt").write_text("a2\n")
    (root / "b.txt").write_text("b2\n")
    repo = open_repository(root)
    cache = StatusCache(repo)
    cache.refresh()
    git(root, "add", "a.txt", "b.txt")
    status = cache.refresh(["a.txt"])
    # a.txt was re-read; b.txt keeps its cached (now stale) entry, as asked.
    assert paths(status.staged) == ["a.txt"]
    assert paths(status.unstaged) == ["b.txt"]
    assert paths(cache.refresh().staged) == ["a.txt", "b.txt"]


def test_a_path_refresh_gives_the_same_answer_as_a_full_status(make_repo):
    root = make_repo(files={"a.txt": "a\n", "src/b.py": "b\n", "keep.txt": "k\n",
                            "old.txt": "".join(f"{i}\n" for i in range(30))})
    (root / "keep.txt").write_text("k2\n")
    git(root, "mv", "old.txt", "renamed.txt")
    repo = open_repository(root)
    cache = StatusCache(repo)
    cache.refresh()
    (root / "a.txt").write_text("a2\n")
    (root / "src" / "new.py").write_text("n\n")
    git(root, "add", "renamed.txt")
    (root / "renamed.txt").write_text("rewritten\n")
    refreshed = cache.refresh(["a.txt", "src", "renamed.txt"])
    full = read_status(repo)
    assert refreshed.changes == full.changes
    assert any(c.orig_path == "old.txt" for c in refreshed.staged)


def test_a_folder_that_is_not_a_repository_any_more_raises_a_git_error(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    import shutil
    shutil.rmtree(root / ".git")
    with pytest.raises(GitError, match="not a Git repository"):
        read_status(repo)


def test_parsing_reads_renames_copies_and_unmerged_records_from_raw_output():
    output = (b"# branch.oid 1111111111111111111111111111111111111111\0# branch.head topic\0"
              b"# branch.upstream origin/topic\0"
              b"2 R. N... 100644 100644 100644 aaaa bbbb R87 new dir/f.txt\0old dir/f.txt\0"
              b"2 CM N... 100644 100644 100644 aaaa bbbb C100 copy.txt\0orig.txt\0"
              b"u AA N... 000000 100644 100644 100644 aaaa bbbb cccc both added.txt\0"
              b"? caf\xc3\xa9.txt\0")
    status = parse_status(output)
    assert status.branch == "topic" and status.upstream_gone
    rename, copy = status.staged
    assert (rename.path, rename.orig_path, rename.similarity) == ("new dir/f.txt", "old dir/f.txt", 87)
    assert (copy.index_state, copy.orig_path) == ("C", "orig.txt")
    assert status.unstaged[0].path == "copy.txt" and status.unstaged[0].orig_path is None
    assert status.conflicted[0].conflict_kind == "both added"
    assert paths(status.untracked) == ["café.txt"]


def test_a_path_outside_the_repository_is_refused_with_a_message(make_repo, tmp_path):
    root = make_repo(files={"a.txt": "a\n"})
    with pytest.raises(GitError, match="outside the repository"):
        read_status(open_repository(root), [tmp_path / "elsewhere.txt"])
