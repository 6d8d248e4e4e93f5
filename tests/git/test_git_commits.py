import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.commits import CommitInfo, commit, last_commit_message
from workbench.git.repository import open_repository


def _hook(root, name, script):
    hook = root / ".git" / "hooks" / name
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)


def test_the_first_commit_of_an_empty_repository_works(make_repo):
    root = make_repo()
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    info = commit(open_repository(root), "Add a\n\nWith a body.")
    assert info == CommitInfo(sha=git(root, "rev-parse", "HEAD").strip(), summary="Add a")
    assert git(root, "log", "-1", "--format=%B").strip() == "Add a\n\nWith a body."


def test_an_empty_message_is_refused_before_git_runs(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "a.txt").write_text("b\n")
    git(root, "add", "a.txt")
    with pytest.raises(GitError, match="message is empty"):
        commit(open_repository(root), "  \n ")
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"


def test_nothing_staged_says_stage_first(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "a.txt").write_text("changed\n")
    with pytest.raises(GitError, match="nothing to commit.*stage"):
        commit(open_repository(root), "Change a")


def test_allow_empty_commits_without_changes(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    info = commit(open_repository(root), "Mark a point", allow_empty=True)
    assert info.summary == "Mark a point"
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"


def test_amend_replaces_the_last_commit_and_its_message_can_be_read_back(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    (root / "b.txt").write_text("b\n")
    git(root, "add", "b.txt")
    commit(repo, "Add b, tpyo")
    assert last_commit_message(repo) == "Add b, tpyo"
    info = commit(repo, "Add b", amend=True)
    assert info.summary == "Add b"
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["b.txt"]


def test_sign_off_adds_the_trailer(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    commit(open_repository(root), "Signed change", allow_empty=True, sign_off=True)
    assert "Signed-off-by: Ada Tester <ada@example.com>" in git(root, "log", "-1", "--format=%B")


def test_last_commit_message_in_a_repository_without_commits_says_so(make_repo):
    with pytest.raises(GitError, match="no commits yet"):
        last_commit_message(open_repository(make_repo()))


def test_amend_without_commits_says_there_is_nothing_to_amend(make_repo):
    root = make_repo()
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    with pytest.raises(GitError, match="nothing to amend"):
        commit(open_repository(root), "First", amend=True)


def test_a_failing_pre_commit_hook_is_named_and_its_output_reaches_the_details(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    _hook(root, "pre-commit", 'echo "lint: trailing whitespace in a.txt"\nexit 1\n')
    (root / "a.txt").write_text("a \n")
    git(root, "add", "a.txt")
    with pytest.raises(GitError, match="pre-commit hook refused") as caught:
        commit(open_repository(root), "Change a")
    assert "lint: trailing whitespace in a.txt" in caught.value.details
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"


def test_a_failing_commit_msg_hook_is_named(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    _hook(root, "commit-msg", 'grep -q "^JIRA-" "$1" || { echo "message must start with JIRA-" >&2; exit 1; }\n')
    with pytest.raises(GitError, match="commit-msg hook") as caught:
        commit(open_repository(root), "No ticket", allow_empty=True)
    assert "must start with JIRA-" in caught.value.details
    assert commit(open_repository(root), "JIRA-1 ticket", allow_empty=True).summary == "JIRA-1 ticket"


def test_hooks_that_pass_let_the_commit_through_and_may_edit_the_message(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    _hook(root, "pre-commit", "exit 0\n")
    _hook(root, "commit-msg", 'printf "\\nReviewed: yes\\n" >> "$1"\n')
    commit(open_repository(root), "Checked change", allow_empty=True)
    assert "Reviewed: yes" in git(root, "log", "-1", "--format=%B")
