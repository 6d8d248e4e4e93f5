import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.repository import open_repository
from workbench.git.stash import (
    StashedFile, apply_stash, drop_stash, list_stashes, pop_stash, push_stash, stash_diff, stash_files,
)


def test_stash_with_untracked_files_cleans_the_tree_and_pop_brings_everything_back(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "a.txt").write_text("changed\n")
    (root / "notes.txt").write_text("new file\n")

    entry = push_stash(repo, message="half-done idea", include_untracked=True)

    assert (entry.index, entry.message, entry.branch) == (0, "half-done idea", "main")
    assert entry.sha == git(root, "rev-parse", "stash@{0}").strip()
    assert git(root, "status", "--porcelain") == ""
    assert not (root / "notes.txt").exists()
    assert sorted(stash_files(repo), key=lambda f: f.path) == [StashedFile("a.txt", "M"), StashedFile("notes.txt", "A")]
    diff = stash_diff(repo)
    assert "+changed" in diff and "+new file" in diff

    pop_stash(repo)
    assert (root / "a.txt").read_text() == "changed\n" and (root / "notes.txt").read_text() == "new file\n"
    assert list_stashes(repo) == []


def test_without_include_untracked_untracked_files_stay(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "a.txt").write_text("changed\n")
    (root / "scratch.txt").write_text("keep me\n")
    push_stash(repo)
    assert (root / "scratch.txt").exists() and (root / "a.txt").read_text() == "a\n"


def test_a_stash_without_message_lists_gits_wip_line_and_the_branch(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "switch", "-q", "-c", "topic")
    (root / "a.txt").write_text("changed\n")
    entry = push_stash(open_repository(root))
    assert entry.branch == "topic" and entry.message.endswith("initial")


def test_entries_are_listed_newest_first_and_drop_removes_one(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    for text in ("one", "two", "three"):
        (root / "a.txt").write_text(text + "\n")
        push_stash(repo, message=text)
    assert [(e.index, e.message) for e in list_stashes(repo)] == [(0, "three"), (1, "two"), (2, "one")]
    drop_stash(repo, 1)
    assert [e.message for e in list_stashes(repo)] == ["three", "one"]
    with pytest.raises(GitError, match="no stash entry 5"):
        drop_stash(repo, 5)


def test_keep_index_leaves_staged_changes_in_place(make_repo):
    root = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (root / "a.txt").write_text("staged\n")
    git(root, "add", "a.txt")
    (root / "b.txt").write_text("unstaged\n")
    push_stash(open_repository(root), keep_index=True)
    assert (root / "a.txt").read_text() == "staged\n" and (root / "b.txt").read_text() == "b\n"


def test_apply_keeps_the_entry(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "a.txt").write_text("changed\n")
    push_stash(repo, message="keep")
    apply_stash(repo)
    assert (root / "a.txt").read_text() == "changed\n"
    assert [e.message for e in list_stashes(repo)] == ["keep"]


def test_stashing_nothing_says_there_are_no_changes(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "untracked.txt").write_text("x\n")
    with pytest.raises(GitError, match="no local changes to stash.*include"):
        push_stash(open_repository(root))


def test_pop_with_a_conflict_names_the_file_and_keeps_the_stash(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "a.txt").write_text("stashed\n")
    entry = push_stash(repo, message="my change")
    (root / "a.txt").write_text("committed meanwhile\n")
    git(root, "commit", "-q", "-am", "meanwhile")

    with pytest.raises(GitError, match=r"conflicts in a\.txt.*stash entry is kept") as caught:
        pop_stash(repo)

    assert "CONFLICT" in caught.value.details
    assert list_stashes(repo) == [entry]
    assert "<<<<<<<" in (root / "a.txt").read_text()


def test_pop_over_uncommitted_changes_to_the_same_file_says_commit_or_stash_and_keeps_it(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "a.txt").write_text("stashed\n")
    push_stash(repo)
    (root / "a.txt").write_text("edited since\n")
    with pytest.raises(GitError, match=r"overwrite files you have changed \(a\.txt\).*Commit or stash"):
        pop_stash(repo)
    assert len(list_stashes(repo)) == 1 and (root / "a.txt").read_text() == "edited since\n"


def test_pop_onto_an_untracked_file_of_the_same_name_names_it_and_keeps_the_stash(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "new file.txt").write_text("stashed\n")
    push_stash(repo, include_untracked=True)
    (root / "new file.txt").write_text("made again\n")
    with pytest.raises(GitError, match=r"\(new file\.txt\)\. The stash entry is kept"):
        pop_stash(repo)
    assert len(list_stashes(repo)) == 1 and (root / "new file.txt").read_text() == "made again\n"
