import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.conflicts import (
    abort_cherry_pick,
    abort_rebase,
    continue_rebase,
    resolve_file,
)
from workbench.git.repo_state import RepoStateKind, repository_state
from workbench.git.repository import open_repository


def _rebase_stopped_on_the_third_of_five(make_repo):
    """feature has five commits, the third conflicts with main; rebasing feature onto main stops there."""
    root = make_repo(files={"shared.txt": "base\n"})
    git(root, "checkout", "-q", "-b", "feature")
    for number in range(1, 6):
        if number == 3:
            (root / "shared.txt").write_text("feature\n")
        else:
            (root / f"f{number}.txt").write_text(f"{number}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"feature {number}")
    git(root, "checkout", "-q", "main")
    (root / "shared.txt").write_text("main\n")
    git(root, "commit", "-q", "-am", "main change")
    git(root, "checkout", "-q", "feature")
    git(root, "rebase", "main", check=False)
    return root


def test_a_clean_repository_on_a_branch(make_repo):
    root = make_repo(files={"a": "a\n"})
    state = repository_state(open_repository(root))
    assert state.kind is RepoStateKind.CLEAN and state.kind == "clean" and not state.in_progress
    assert state.branch == "main" and not state.detached_head and state.has_commits
    assert state.head_sha == git(root, "rev-parse", "HEAD").strip()
    assert state.conflicts_left == 0 and state.message == "On branch main."


def test_a_rebase_stopped_on_a_conflict_says_how_far_it_got_and_can_be_aborted(make_repo):
    root = _rebase_stopped_on_the_third_of_five(make_repo)
    repo = open_repository(root)
    state = repository_state(repo)
    assert state.kind is RepoStateKind.REBASING
    assert (state.commits_applied, state.commits_total) == (2, 5)
    assert state.rebasing_branch == "feature" and state.onto == "main"
    assert state.conflicts_left == 1 and state.detached_head
    assert state.message == "Rebasing feature onto main: 2 of 5 commits applied, 1 conflict left"
    with pytest.raises(GitError, match="still has conflicts"):
        continue_rebase(repo)
    abort_rebase(repo)
    state = repository_state(repo)
    assert state.kind is RepoStateKind.CLEAN and state.branch == "feature"
    assert (root / "shared.txt").read_text() == "feature\n"


def test_a_rebase_continues_after_the_conflict_is_resolved(make_repo):
    root = _rebase_stopped_on_the_third_of_five(make_repo)
    repo = open_repository(root)
    resolve_file(repo, "shared.txt", "theirs")
    continue_rebase(repo)
    state = repository_state(repo)
    assert state.kind is RepoStateKind.CLEAN and state.branch == "feature"
    assert git(root, "log", "--format=%s", "-7").split("\n")[:6] == [
        "feature 5", "feature 4", "feature 3", "feature 2", "feature 1", "main change"]


def test_detached_head_is_reported_with_the_commit(make_repo):
    root = make_repo(files={"a": "a\n"})
    git(root, "checkout", "-q", "--detach")
    state = repository_state(open_repository(root))
    assert state.kind is RepoStateKind.CLEAN and state.detached_head and state.branch is None
    assert "detached" in state.message and "initial" in state.message


def test_a_repository_with_no_commits(make_repo):
    state = repository_state(open_repository(make_repo()))
    assert not state.has_commits and state.head_sha is None and state.branch == "main"
    assert state.kind is RepoStateKind.CLEAN and "No commits yet" in state.message


def test_a_conflicted_cherry_pick_is_reported_and_can_be_aborted(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "checkout", "-q", "-b", "fix")
    (root / "a.txt").write_text("fix\n")
    git(root, "commit", "-q", "-am", "the fix")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("main\n")
    git(root, "commit", "-q", "-am", "main work")
    git(root, "cherry-pick", "fix", check=False)
    repo = open_repository(root)
    state = repository_state(repo)
    assert state.kind is RepoStateKind.CHERRY_PICKING and state.conflicts_left == 1
    assert "the fix" in state.message and "1 conflict left" in state.message
    abort_cherry_pick(repo)
    assert repository_state(repo).kind is RepoStateKind.CLEAN
    assert (root / "a.txt").read_text() == "main\n"


def test_a_conflicted_revert_and_a_bisect_are_reported(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    for text in ("b\n", "c\n"):
        (root / "a.txt").write_text(text)
        git(root, "commit", "-q", "-am", text.strip())
    git(root, "revert", "--no-edit", "HEAD~1", check=False)
    repo = open_repository(root)
    assert repository_state(repo).kind is RepoStateKind.REVERTING
    git(root, "revert", "--abort")
    git(root, "bisect", "start")
    assert repository_state(repo).kind is RepoStateKind.BISECTING


def test_the_state_of_a_linked_worktree_is_read_from_its_own_git_dir(make_repo, tmp_path):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "a.txt").write_text("other\n")
    git(root, "commit", "-q", "-am", "other")
    git(root, "checkout", "-q", "main")
    worktree = tmp_path / "linked tree"
    git(root, "worktree", "add", "-q", "-b", "side", str(worktree), "main")
    (worktree / "a.txt").write_text("side\n")
    git(worktree, "commit", "-q", "-am", "side")
    git(worktree, "merge", "other", check=False)
    linked = open_repository(worktree)
    assert linked.git_dir != worktree / ".git"
    state = repository_state(linked)
    assert state.kind is RepoStateKind.MERGING and state.incoming == "other" and state.branch == "side"
    assert state.message == "Merging other into side: 1 conflict left"
    assert repository_state(open_repository(root)).kind is RepoStateKind.CLEAN
