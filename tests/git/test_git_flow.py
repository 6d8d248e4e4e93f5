"""workbench.git.flow on real repositories: the model, and errors a user can act on."""

from __future__ import annotations

import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git import flow
from workbench.git.repository import open_repository


def commit(root, path: str, text: str, message: str) -> None:
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def flow_repo(make_repo):
    """A repository on main with one commit, initialised for git-flow (on develop)."""
    root = make_repo(files={"app.py": "x = 1\n"})
    repo = open_repository(root)
    flow.init(repo)
    return repo


def branches(repo) -> list[str]:
    return git(repo.root, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()


def test_a_plain_repository_has_no_flow_config_and_start_says_how_to_set_it_up(make_repo):
    repo = open_repository(make_repo(files={"a.txt": "a\n"}))
    assert flow.flow_config(repo) is None
    with pytest.raises(flow.FlowNotInitialised, match="workbench git flow init"):
        flow.start(repo, "feature", "x")


def test_init_of_an_empty_repository_makes_an_initial_commit_and_checks_out_develop(make_repo):
    repo = open_repository(make_repo(files=None))
    config = flow.init(repo)
    assert (config.master, config.develop) == ("master", "develop")
    assert git(repo.root, "log", "--format=%s", "master").strip() == "Initial commit"
    assert git(repo.root, "symbolic-ref", "--short", "HEAD").strip() == "develop"


def test_init_writes_the_cli_config_keys(flow_repo):
    config = flow.flow_config(flow_repo)
    assert config.prefixes == {"feature": "feature/", "bugfix": "bugfix/", "release": "release/",
                               "hotfix": "hotfix/", "support": "support/"}
    assert config.version_tag_prefix == ""
    assert git(flow_repo.root, "config", "gitflow.path.hooks").strip() == str(flow_repo.git_dir / "hooks")


def test_init_of_an_initialised_repository_changes_nothing(flow_repo):
    before = git(flow_repo.root, "config", "--list", "--local")
    assert flow.init(flow_repo, master="other", develop="dev") == flow.flow_config(flow_repo)
    assert git(flow_repo.root, "config", "--list", "--local") == before


def test_init_takes_custom_branch_names_and_prefixes(make_repo):
    repo = open_repository(make_repo(files=None))
    config = flow.init(repo, master="production", develop="next", prefixes={"feature": "feat/"},
                       version_tag_prefix="v")
    assert (config.master, config.develop, config.prefix("feature"), config.version_tag_prefix) == \
        ("production", "next", "feat/", "v")
    assert flow.start(repo, "feature", "x").branch == "feat/x"


def test_init_refuses_a_production_branch_that_does_not_exist(make_repo):
    repo = open_repository(make_repo(files={"a.txt": "a\n"}, branch="trunk"))
    with pytest.raises(GitError, match="no local branch 'master'.*trunk"):
        flow.init(repo)


def test_start_makes_the_branch_from_develop_records_its_base_and_checks_it_out(flow_repo):
    started = flow.start(flow_repo, "feature", "login")
    assert (started.branch, started.base, started.current) == ("feature/login", "develop", True)
    assert git(flow_repo.root, "config", "gitflow.branch.feature/login.base").strip() == "develop"
    assert git(flow_repo.root, "symbolic-ref", "--short", "HEAD").strip() == "feature/login"


def test_a_hotfix_starts_from_master(flow_repo):
    commit(flow_repo.root, "dev.txt", "only on develop\n", "Develop work")
    flow.start(flow_repo, "hotfix", "1.0.1")
    assert not (flow_repo.root / "dev.txt").exists()


def test_a_second_release_says_to_finish_the_open_one_first(flow_repo):
    flow.start(flow_repo, "release", "1.0")
    git(flow_repo.root, "checkout", "-q", "develop")
    with pytest.raises(GitError, match="Finish release 1.0 first"):
        flow.start(flow_repo, "release", "1.1")


def test_starting_a_feature_twice_says_it_is_unfinished(flow_repo):
    flow.start(flow_repo, "feature", "login")
    with pytest.raises(GitError, match="already a feature named login.*finish it"):
        flow.start(flow_repo, "feature", "login")


@pytest.mark.parametrize("name, message", [
    ("my feature", "whitespace.*'my-feature'"),
    ("a..b", "cannot be part of a branch name"),
    ("x~1", "cannot be part of a branch name"),
    ("end.lock", "cannot be part of a branch name"),
])
def test_bad_names_are_refused_before_anything_changes(flow_repo, name, message):
    before = (branches(flow_repo), git(flow_repo.root, "config", "--list", "--local"))
    with pytest.raises(GitError, match=message):
        flow.start(flow_repo, "feature", name)
    assert (branches(flow_repo), git(flow_repo.root, "config", "--list", "--local")) == before


def test_uncommitted_changes_block_a_release_start_and_name_the_file(flow_repo):
    (flow_repo.root / "app.py").write_text("x = 2\n")
    with pytest.raises(GitError, match="uncommitted changes in app.py. Commit or stash"):
        flow.start(flow_repo, "release", "1.0")


def test_a_feature_start_carries_uncommitted_changes_along_as_the_cli_does(flow_repo):
    (flow_repo.root / "app.py").write_text("x = 2\n")
    flow.start(flow_repo, "feature", "wip")
    assert (flow_repo.root / "app.py").read_text() == "x = 2\n"


def test_uncommitted_changes_block_a_finish(flow_repo):
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "login.py", "a\n", "Login")
    (flow_repo.root / "app.py").write_text("dirty\n")
    with pytest.raises(GitError, match="uncommitted changes in app.py.*before you finish feature login"):
        flow.finish(flow_repo, "feature", "login")
    assert "feature/login" in branches(flow_repo)


def test_finishing_a_one_commit_feature_fast_forwards_develop_and_deletes_the_branch(flow_repo):
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "login.py", "a\n", "Login")
    tip = git(flow_repo.root, "rev-parse", "HEAD").strip()
    result = flow.finish(flow_repo, "feature", "login")
    assert git(flow_repo.root, "rev-parse", "develop").strip() == tip
    assert (result.merged_into, result.deleted, result.current_branch) == (["develop"], True, "develop")
    assert "feature/login" not in branches(flow_repo)
    assert "gitflow.branch.feature/login" not in git(flow_repo.root, "config", "--list")


def test_finish_with_keep_keeps_the_branch(flow_repo):
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "login.py", "a\n", "Login")
    assert flow.finish(flow_repo, "feature", "login", keep=True).deleted is False
    assert "feature/login" in branches(flow_repo)


def test_finish_with_squash_makes_one_commit_on_develop(flow_repo):
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "login.py", "a\n", "Login")
    commit(flow_repo.root, "login.py", "b\n", "Login again")
    flow.finish(flow_repo, "feature", "login", squash=True)
    subjects = git(flow_repo.root, "log", "--format=%s", "develop").splitlines()
    assert len(subjects) == 2 and subjects[0].startswith("Squashed commit")
    assert "feature/login" not in branches(flow_repo)


def test_a_feature_conflict_names_the_files_and_finish_again_completes(flow_repo):
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "app.py", "x = 'feature'\n", "Feature edit")
    commit(flow_repo.root, "other.py", "y\n", "Feature more")
    git(flow_repo.root, "checkout", "-q", "develop")
    commit(flow_repo.root, "app.py", "x = 'develop'\n", "Develop edit")
    with pytest.raises(flow.FlowConflict, match=r"conflicts in app\.py.*commit the merge, then finish feature "
                                                r"login again") as caught:
        flow.finish(flow_repo, "feature", "login")
    assert caught.value.files == ["app.py"]
    with pytest.raises(flow.FlowConflict, match="A merge is in progress with conflicts in app.py"):
        flow.finish(flow_repo, "feature", "login")
    (flow_repo.root / "app.py").write_text("x = 'both'\n")
    git(flow_repo.root, "add", "app.py")
    git(flow_repo.root, "commit", "-q", "--no-edit")
    flow.finish(flow_repo, "feature", "login")
    assert "feature/login" not in branches(flow_repo)
    assert not (flow_repo.git_dir / ".gitflow" / "MERGE_BASE").exists()


def test_a_release_is_tagged_with_the_message_and_the_version(flow_repo):
    flow.start(flow_repo, "release", "1.0")
    commit(flow_repo.root, "VERSION", "1.0\n", "Bump")
    result = flow.finish(flow_repo, "release", "1.0", message="First release")
    assert (result.tag, result.merged_into) == ("1.0", ["main", "develop"])
    assert git(flow_repo.root, "tag", "-n1").split(None, 1) == ["1.0", "First release 1.0\n"]
    assert git(flow_repo.root, "cat-file", "-t", "1.0").strip() == "tag"
    assert git(flow_repo.root, "merge-base", "--is-ancestor", "1.0", "develop", check=False) == ""


def test_a_release_without_a_message_is_tagged_with_its_version(flow_repo):
    flow.start(flow_repo, "release", "1.0")
    commit(flow_repo.root, "VERSION", "1.0\n", "Bump")
    flow.finish(flow_repo, "release", "1.0")
    assert git(flow_repo.root, "tag", "-n1").split() == ["1.0", "1.0"]


def test_a_release_conflict_on_master_names_the_files_and_finish_again_tags_and_merges_back(flow_repo):
    flow.start(flow_repo, "release", "1.0")
    commit(flow_repo.root, "app.py", "x = 'release'\n", "Release edit")
    git(flow_repo.root, "checkout", "-q", "main")
    commit(flow_repo.root, "app.py", "x = 'main'\n", "Direct edit on main")
    with pytest.raises(flow.FlowConflict, match=r"Merging release/1.0 into main stopped on conflicts in app\.py"):
        flow.finish(flow_repo, "release", "1.0", message="rel")
    (flow_repo.root / "app.py").write_text("x = 'release'\n")
    git(flow_repo.root, "add", "app.py")
    git(flow_repo.root, "commit", "-q", "--no-edit")
    flow.finish(flow_repo, "release", "1.0", message="rel")
    assert git(flow_repo.root, "tag").split() == ["1.0"]
    assert "release/1.0" not in branches(flow_repo)
    assert (flow_repo.root / "app.py").read_text() == "x = 'release'\n"
    git(flow_repo.root, "merge-base", "--is-ancestor", "main", "develop")


def test_a_hotfix_without_commits_only_tags_master_as_the_cli_does(flow_repo):
    main_tip = git(flow_repo.root, "rev-parse", "main").strip()
    flow.start(flow_repo, "hotfix", "1.0.1")
    flow.finish(flow_repo, "hotfix", "1.0.1")
    assert git(flow_repo.root, "rev-parse", "1.0.1^{}").strip() == main_tip
    assert "hotfix/1.0.1" not in branches(flow_repo)


def test_a_hotfix_lands_on_master_and_develop(flow_repo):
    flow.start(flow_repo, "hotfix", "1.0.1")
    commit(flow_repo.root, "fix.txt", "fixed\n", "Fix")
    result = flow.finish(flow_repo, "hotfix", "1.0.1", message="Hotfix")
    assert (result.merged_into, result.tag, result.current_branch) == (["main", "develop"], "1.0.1", "develop")
    for branch in ("main", "develop"):
        assert "Fix" in git(flow_repo.root, "log", "--format=%s", branch).splitlines()


def test_finishing_an_unknown_branch_lists_the_open_ones(flow_repo):
    flow.start(flow_repo, "feature", "login")
    with pytest.raises(GitError, match="no feature named 'logon'.*Open features: login"):
        flow.finish(flow_repo, "feature", "logon")


def test_a_support_branch_starts_from_a_tag_and_is_never_finished(flow_repo):
    flow.start(flow_repo, "release", "1.0")
    commit(flow_repo.root, "VERSION", "1.0\n", "Bump")
    flow.finish(flow_repo, "release", "1.0")
    with pytest.raises(GitError, match="give the base"):
        flow.start(flow_repo, "support", "1.x")
    started = flow.start(flow_repo, "support", "1.x", base="1.0")
    assert git(flow_repo.root, "rev-parse", "HEAD").strip() == git(flow_repo.root, "rev-parse", "1.0^{}").strip()
    assert started.branch == "support/1.x"
    with pytest.raises(GitError, match="not finished"):
        flow.finish(flow_repo, "support", "1.x")


def test_list_branches_gives_names_bases_and_the_current_one(flow_repo):
    flow.start(flow_repo, "feature", "b")
    flow.start(flow_repo, "feature", "a", base="main")
    listed = flow.list_branches(flow_repo, "feature")
    assert [(f.name, f.base, f.current) for f in listed] == [("a", "main", True), ("b", "develop", False)]
    assert flow.list_branches(flow_repo, "release") == []


def test_publish_pushes_with_tracking_and_refuses_a_second_time(flow_repo, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(flow_repo.root, "remote", "add", "origin", str(remote))
    flow.start(flow_repo, "feature", "login")
    commit(flow_repo.root, "login.py", "a\n", "Login")
    flow.publish(flow_repo, "feature", "login")
    assert git(flow_repo.root, "rev-parse", "--abbrev-ref", "feature/login@{upstream}").strip() == \
        "origin/feature/login"
    with pytest.raises(GitError, match="already published on origin"):
        flow.publish(flow_repo, "feature", "login")


def test_publish_without_the_remote_says_to_add_it(flow_repo):
    flow.start(flow_repo, "feature", "login")
    with pytest.raises(GitError, match="no remote named 'origin'"):
        flow.publish(flow_repo, "feature", "login")


def test_a_failing_pre_hook_stops_the_start(flow_repo):
    hook = flow_repo.git_dir / "hooks" / "pre-flow-feature-start"
    hook.write_text("#!/bin/sh\nexit 3\n")
    hook.chmod(0o755)
    with pytest.raises(GitError, match="exit code 3"):
        flow.start(flow_repo, "feature", "login")
    assert "feature/login" not in branches(flow_repo)
