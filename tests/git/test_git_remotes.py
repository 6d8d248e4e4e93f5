import dataclasses
import socket

import pytest

from tests.git.conftest import git
from tests.services import sshd as sshd_module
from tests.services.sshd import make_key, sshd_server  # noqa: F401  (the fixture, used by name)
from workbench.git import GitError
from workbench.git.branches import list_branches
from workbench.git.remotes import (
    PushResult, Remote, add_remote, fetch, list_remotes, pull, pull_mode, pull_mode_configured, push,
    push_tags, remove_remote,
)
from workbench.git.repository import open_repository
from workbench.git.runner import GitRunner
from workbench.tasks import CancelToken, Cancelled


@pytest.fixture
def bare(tmp_path):
    """An empty bare repository to push to."""
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(path))
    return path


def _commit(root, path, text, message):
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def _published(make_repo, bare, name="me"):
    """A repository whose main branch is pushed to ``bare`` and tracks it."""
    root = make_repo(name, files={"a.txt": "a\n"})
    git(root, "remote", "add", "origin", bare.as_uri())
    git(root, "push", "-q", "-u", "origin", "main")
    return root


def _clone(tmp_path, bare, name):
    git(tmp_path, "clone", "-q", bare.as_uri(), name)
    root = tmp_path / name
    git(root, "config", "user.name", "Bo Other")
    git(root, "config", "user.email", "bo@example.com")
    return root


def test_remotes_are_added_listed_and_removed(make_repo, bare):
    repo = open_repository(make_repo(files={"a.txt": "a\n"}))
    assert list_remotes(repo) == []
    assert add_remote(repo, "origin", bare.as_uri()) == Remote("origin", bare.as_uri(), bare.as_uri())
    git(repo.root, "remote", "set-url", "--push", "origin", "ssh://example.invalid/x.git")
    assert list_remotes(repo) == [Remote("origin", bare.as_uri(), "ssh://example.invalid/x.git")]
    with pytest.raises(GitError, match="already exists"):
        add_remote(repo, "origin", bare.as_uri())
    remove_remote(repo, "origin")
    assert list_remotes(repo) == []


def test_the_first_push_of_a_branch_sets_its_upstream_and_reports_progress(make_repo, bare):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "remote", "add", "origin", bare.as_uri())
    repo = open_repository(root)
    reports = []

    result = push(repo, progress=reports.append)

    assert result == PushResult(remote="origin", branch="main", remote_branch="main", upstream_set=True,
                                up_to_date=False)
    assert git(bare, "rev-parse", "main").strip() == git(root, "rev-parse", "HEAD").strip()
    main = next(b for b in list_branches(repo) if b.name == "main")
    assert (main.upstream, main.ahead, main.behind) == ("origin/main", 0, 0)
    assert any(r.message.startswith("Writing objects") and r.fraction == 1.0 for r in reports)

    _commit(root, "a.txt", "b\n", "second")
    again = push(repo)
    assert not again.upstream_set and git(bare, "log", "-1", "--format=%s", "main").strip() == "second"
    assert push(repo).up_to_date


def test_a_new_branch_is_pushed_under_its_own_name(make_repo, bare):
    root = _published(make_repo, bare)
    git(root, "switch", "-q", "-c", "feature/x")
    _commit(root, "f.txt", "f\n", "feature work")
    result = push(open_repository(root))
    assert (result.remote_branch, result.upstream_set) == ("feature/x", True)
    assert git(bare, "log", "-1", "--format=%s", "feature/x").strip() == "feature work"


def test_push_rejected_after_someone_else_pushed_says_pull_first(make_repo, bare, tmp_path):
    root = _published(make_repo, bare)
    other = _clone(tmp_path, bare, "other")
    _commit(other, "a.txt", "theirs\n", "their change")
    git(other, "push", "-q")
    _commit(root, "b.txt", "mine\n", "my change")

    with pytest.raises(GitError, match="Pull first") as caught:
        push(open_repository(root))
    assert "rejected" in caught.value.details
    assert git(bare, "log", "-1", "--format=%s", "main").strip() == "their change"


def test_fetch_updates_remote_branches_and_pull_merges_by_default(make_repo, bare, tmp_path):
    root = _published(make_repo, bare)
    repo = open_repository(root)
    other = _clone(tmp_path, bare, "other")
    theirs = _commit(other, "b.txt", "theirs\n", "their change")
    git(other, "push", "-q")

    fetch(repo)
    assert next(b for b in list_branches(repo) if b.name == "main").behind == 1

    _commit(root, "c.txt", "mine\n", "my change")
    result = pull(repo)
    assert result.mode == "merge" and result.changed
    parents = git(root, "log", "-1", "--format=%P").split()
    assert len(parents) == 2 and theirs in parents
    assert (root / "b.txt").read_text() == "theirs\n"


def test_pull_fast_forwards_when_there_is_nothing_local(make_repo, bare, tmp_path):
    root = _published(make_repo, bare)
    other = _clone(tmp_path, bare, "other")
    theirs = _commit(other, "b.txt", "theirs\n", "their change")
    git(other, "push", "-q")
    result = pull(open_repository(root))
    assert result.after == theirs
    assert pull(open_repository(root)).changed is False


def test_pull_rebases_when_pull_rebase_is_set(make_repo, bare, tmp_path):
    root = _published(make_repo, bare)
    git(root, "config", "pull.rebase", "true")
    other = _clone(tmp_path, bare, "other")
    theirs = _commit(other, "b.txt", "theirs\n", "their change")
    git(other, "push", "-q")
    _commit(root, "c.txt", "mine\n", "my change")
    repo = open_repository(root)
    assert pull_mode(repo, "main") == "rebase"

    result = pull(repo)

    assert result.mode == "rebase"
    assert git(root, "log", "--format=%s").split("\n")[:3] == ["my change", "their change", "initial"]
    assert git(root, "log", "-1", "--format=%P").split() == [theirs]


def test_the_branch_rebase_setting_wins_over_pull_rebase(make_repo, bare):
    repo = open_repository(_published(make_repo, bare))
    git(repo.root, "config", "pull.rebase", "true")
    git(repo.root, "config", "branch.main.rebase", "false")
    assert pull_mode(repo, "main") == "merge"
    git(repo.root, "config", "branch.main.rebase", "merges")
    assert pull_mode(repo, "main") == "rebase-merges"


def test_pull_without_an_upstream_says_push_first(make_repo, bare):
    root = _published(make_repo, bare)
    git(root, "switch", "-q", "-c", "local-only")
    with pytest.raises(GitError, match="no upstream.*Push it first"):
        pull(open_repository(root))


def test_pull_with_conflicting_changes_says_there_are_conflicts(make_repo, bare, tmp_path):
    root = _published(make_repo, bare)
    other = _clone(tmp_path, bare, "other")
    _commit(other, "a.txt", "theirs\n", "their change")
    git(other, "push", "-q")
    _commit(root, "a.txt", "mine\n", "my change")
    with pytest.raises(GitError, match="conflicts") as caught:
        pull(open_repository(root))
    assert "a.txt" in caught.value.details


def test_push_with_no_remote_says_add_one(make_repo):
    with pytest.raises(GitError, match="no remote"):
        push(open_repository(make_repo(files={"a.txt": "a\n"})))


def test_fetch_from_a_missing_repository_says_check_the_url(make_repo, tmp_path):
    repo = open_repository(make_repo(files={"a.txt": "a\n"}))
    add_remote(repo, "origin", (tmp_path / "nowhere.git").as_uri())
    with pytest.raises(GitError, match="Check the remote's URL"):
        fetch(repo, "origin")


def test_a_cancelled_push_stops(make_repo, bare):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "remote", "add", "origin", bare.as_uri())
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        push(open_repository(root), cancel=token)


def _over_ssh(root, ssh_command):
    repo = open_repository(root)
    return dataclasses.replace(repo, runner=GitRunner(repo.root, env={"GIT_SSH_COMMAND": ssh_command}))


def test_push_fetch_and_pull_over_ssh(make_repo, bare, tmp_path, sshd_server):
    root = make_repo(files={"a.txt": "a\n"})
    repo = _over_ssh(root, sshd_server.ssh_command)
    add_remote(repo, "origin", sshd_server.url(bare))
    reports = []

    assert push(repo, progress=reports.append).upstream_set
    assert git(bare, "rev-parse", "main").strip() == git(root, "rev-parse", "HEAD").strip()
    assert any(r.fraction == 1.0 for r in reports)

    other = _clone(tmp_path, bare, "other")
    theirs = _commit(other, "b.txt", "theirs\n", "their change")
    git(other, "push", "-q")
    fetch(repo, "origin")
    assert next(b for b in list_branches(repo) if b.name == "origin/main").sha == theirs
    assert pull(repo).after == theirs


def test_a_key_the_ssh_server_refuses_gives_the_authentication_message(make_repo, bare, tmp_path, sshd_server):
    stranger = make_key(tmp_path / "stranger_ed25519")
    repo = _over_ssh(make_repo(files={"a.txt": "a\n"}), sshd_server.ssh_command_for(stranger))
    add_remote(repo, "origin", sshd_server.url(bare))
    with pytest.raises(GitError, match="Authentication failed") as caught:
        push(repo)
    assert "Permission denied" in caught.value.details


def test_a_port_nobody_listens_on_gives_the_unreachable_message(make_repo, bare, sshd_server):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    without_port = sshd_server.ssh_command_for(sshd_server.client_key, port=None)
    repo = _over_ssh(make_repo(files={"a.txt": "a\n"}), without_port)
    add_remote(repo, "origin", f"ssh://{sshd_server.user}@127.0.0.1:{closed_port}{bare}")
    with pytest.raises(GitError, match="cannot be reached") as caught:
        fetch(repo, "origin")
    assert "Connection refused" in caught.value.details


def test_a_missing_sshd_fails_the_test_with_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sshd_module, "SSHD", str(tmp_path / "no-sshd-here"))
    with pytest.raises(pytest.fail.Exception, match="install the OpenSSH server"):
        sshd_module.start_sshd(tmp_path / "sshd")


def test_pull_mode_is_configured_only_by_branch_or_pull_rebase(make_repo):
    root = make_repo(files={"a.py": "a\n"})
    repo = open_repository(root)
    assert not pull_mode_configured(repo, "main")
    git(root, "config", "pull.rebase", "false")
    assert pull_mode_configured(repo, "main")
    git(root, "config", "--unset", "pull.rebase")
    git(root, "config", "branch.main.rebase", "true")
    assert pull_mode_configured(repo, "main")


def test_push_tags_pushes_every_tag_to_the_default_remote(make_repo, bare):
    root = make_repo(files={"a.py": "a\n"})
    git(root, "remote", "add", "origin", str(bare))
    git(root, "tag", "v1.0")
    git(root, "tag", "-a", "-m", "Two", "v2.0")
    repo = open_repository(root)
    assert push_tags(repo) == "origin"
    assert git(bare, "tag").split() == ["v1.0", "v2.0"]
