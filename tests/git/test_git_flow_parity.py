"""Parity with the real git-flow CLI (1.12.3 AVH): twin repositories, the same operations, the
same result.

Both twins start from the same commits with a fixed author and committer date, so the commits,
merges and tags that the CLI makes on one and workbench.git.flow on the other must have the
same shas, not only the same shape.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.git.conftest import git
from workbench.git import flow
from workbench.git.repository import open_repository

pytestmark = pytest.mark.skipif(shutil.which("git-flow") is None, reason="the git-flow CLI is not installed")

FIXED_DATE = "2024-01-02T03:04:05+00:00"


@pytest.fixture(autouse=True)
def fixed_dates(monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)


class CliTwin:
    """Drives the real ``git flow`` command."""

    def __init__(self, root: Path):
        self.root = root

    def init(self, *options: str) -> None:
        git(self.root, "flow", "init", "-d", *options)

    def start(self, kind: str, name: str, base: str | None = None) -> None:
        git(self.root, "flow", kind, "start", name, *([base] if base else []))

    def finish(self, kind: str, name: str, message: str | None = None, keep: bool = False,
               squash: bool = False) -> None:
        options = [*(["-m", message] if message else []), *(["-k"] if keep else []), *(["-S"] if squash else [])]
        git(self.root, "flow", kind, "finish", *options, name)


class OurTwin:
    """Drives workbench.git.flow."""

    def __init__(self, root: Path):
        self.root = root

    def init(self, *options: str) -> None:
        prefix = options[options.index("-t") + 1] if "-t" in options else ""
        flow.init(open_repository(self.root), version_tag_prefix=prefix)

    def start(self, kind: str, name: str, base: str | None = None) -> None:
        flow.start(open_repository(self.root), kind, name, base)

    def finish(self, kind: str, name: str, message: str | None = None, keep: bool = False,
               squash: bool = False) -> None:
        flow.finish(open_repository(self.root), kind, name, message=message, keep=keep, squash=squash)


def commit(root: Path, path: str, text: str, message: str) -> None:
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-q", "-m", message)


def snapshot(root: Path) -> dict:
    """Everything that must match between the twins."""
    config = {}
    for line in git(root, "config", "--local", "--get-regexp", r"^gitflow\.", check=False).splitlines():
        key, _, value = line.partition(" ")
        config[key] = value.replace(str(root), "<repo>")
    structure = [(len(parents.split()), subject) for parents, _, subject in
                 (line.partition("|") for line in
                  git(root, "log", "--all", "--format=%P|%s", "--topo-order").splitlines())]
    return {
        "branches": git(root, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads").splitlines(),
        "tags": git(root, "for-each-ref", "--format=%(refname:short) %(objectname) %(*objectname) %(contents:subject)",
                    "refs/tags").splitlines(),
        "config": config,
        "merge_structure": structure,
        "history": git(root, "log", "--all", "--format=%H %P %s", "--topo-order").splitlines(),
        "head": git(root, "symbolic-ref", "--short", "HEAD").strip(),
    }


@pytest.fixture
def twins(make_repo):
    """``twins(files)`` -> (cli, ours), two repositories with the same first commit (none when
    ``files`` is None)."""

    def make(files: dict[str, str] | None = {"README.md": "hello\n"}):
        return CliTwin(make_repo("cli", files=files)), OurTwin(make_repo("ours", files=files))

    return make


def both(pair, action: str, *args, **kwargs) -> None:
    for twin in pair:
        getattr(twin, action)(*args, **kwargs)


def both_commit(pair, path: str, text: str, message: str) -> None:
    for twin in pair:
        commit(twin.root, path, text, message)


def assert_same(pair) -> None:
    cli, ours = (snapshot(twin.root) for twin in pair)
    for key in cli:
        assert ours[key] == cli[key], key


def test_init_of_an_empty_repository_matches_the_cli(twins):
    pair = twins(files=None)
    both(pair, "init")
    assert_same(pair)
    assert snapshot(pair[1].root)["head"] == "develop"


def test_init_of_a_repository_on_main_uses_main_for_production_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    assert_same(pair)
    assert snapshot(pair[1].root)["config"]["gitflow.branch.master"] == "main"


def test_init_with_a_version_tag_prefix_matches_the_cli(twins):
    pair = twins()
    both(pair, "init", "-t", "v")
    both(pair, "start", "release", "1.0")
    both_commit(pair, "VERSION", "1.0\n", "Bump to 1.0")
    both(pair, "finish", "release", "1.0", message="rel")
    assert_same(pair)
    assert "v1.0" in git(pair[1].root, "tag")


def test_a_one_commit_feature_fast_forwards_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "feature", "login")
    assert_same(pair)
    both_commit(pair, "login.py", "x = 1\n", "Add login")
    both(pair, "finish", "feature", "login")
    assert_same(pair)
    assert all(count <= 1 for count, _ in snapshot(pair[1].root)["merge_structure"])


def test_a_two_commit_feature_gets_a_merge_commit_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "feature", "search")
    both_commit(pair, "search.py", "x = 1\n", "Add search")
    both_commit(pair, "search.py", "x = 2\n", "Tune search")
    both(pair, "finish", "feature", "search")
    assert_same(pair)
    assert (2, "Merge branch 'feature/search' into develop") in snapshot(pair[1].root)["merge_structure"]


def test_the_no_ff_setting_makes_a_merge_commit_even_for_one_commit_as_with_the_cli(twins):
    pair = twins()
    both(pair, "init")
    for twin in pair:
        git(twin.root, "config", "gitflow.feature.finish.no-ff", "true")
    both(pair, "start", "feature", "tiny")
    both_commit(pair, "tiny.py", "x = 1\n", "Tiny change")
    both(pair, "finish", "feature", "tiny")
    assert_same(pair)
    assert (2, "Merge branch 'feature/tiny' into develop") in snapshot(pair[1].root)["merge_structure"]


@pytest.mark.parametrize("kind", ["feature", "release"])
def test_a_squashed_finish_matches_the_cli(twins, kind):
    pair = twins()
    both(pair, "init")
    both(pair, "start", kind, "1.0")
    both_commit(pair, "a.py", "a = 1\n", "First")
    both_commit(pair, "a.py", "a = 2\n", "Second")
    both(pair, "finish", kind, "1.0", message="rel" if kind == "release" else None, squash=True)
    assert_same(pair)


def test_a_kept_feature_and_its_config_match_the_cli(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "feature", "kept")
    both_commit(pair, "a.py", "a = 1\n", "First")
    both(pair, "finish", "feature", "kept", keep=True)
    assert_same(pair)
    assert any(line.startswith("feature/kept ") for line in snapshot(pair[1].root)["branches"])


def test_finishing_again_after_resolving_a_feature_conflict_matches_the_cli(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "feature", "clash")
    both_commit(pair, "README.md", "feature\n", "Feature edit")
    both_commit(pair, "other.md", "more\n", "Feature more")
    for twin in pair:
        git(twin.root, "checkout", "-q", "develop")
    both_commit(pair, "README.md", "develop\n", "Develop edit")
    for twin in pair:
        with pytest.raises((AssertionError, flow.FlowConflict)):
            twin.finish("feature", "clash")
        (twin.root / "README.md").write_text("both\n")
        git(twin.root, "add", "README.md")
        git(twin.root, "commit", "-q", "--no-edit")
    assert_same(pair)
    both(pair, "finish", "feature", "clash")
    assert_same(pair)
    assert not (pair[1].root / ".git" / ".gitflow" / "MERGE_BASE").exists()


def test_a_bugfix_finishes_into_develop_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "bugfix", "crash")
    both_commit(pair, "crash.py", "ok = True\n", "Fix crash")
    both_commit(pair, "crash.py", "ok = 1\n", "Fix crash again")
    both(pair, "finish", "bugfix", "crash")
    assert_same(pair)


def test_a_release_merges_into_master_tags_and_merges_the_tag_back_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "feature", "a")
    both_commit(pair, "a.py", "a = 1\n", "Add a")
    both(pair, "finish", "feature", "a")
    both(pair, "start", "release", "1.0")
    both_commit(pair, "VERSION", "1.0\n", "Bump to 1.0")
    both(pair, "finish", "release", "1.0", message="rel")
    assert_same(pair)
    ours = snapshot(pair[1].root)
    assert any(tag.startswith("1.0 ") and tag.endswith(" rel 1.0") for tag in ours["tags"])
    assert (2, "Merge branch 'release/1.0'") in ours["merge_structure"]
    assert (2, "Merge tag '1.0' into develop") in ours["merge_structure"]
    assert ours["head"] == "develop"


def test_a_hotfix_merges_into_master_and_develop_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "hotfix", "1.0.1")
    both_commit(pair, "fix.txt", "fixed\n", "Fix production")
    both(pair, "finish", "hotfix", "1.0.1", message="hot")
    assert_same(pair)


def test_a_hotfix_without_commits_tags_master_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "hotfix", "1.0.1")
    both(pair, "finish", "hotfix", "1.0.1", message="empty")
    assert_same(pair)


def test_a_hotfix_during_an_open_release_goes_to_develop_only_as_the_cli_does(twins):
    pair = twins()
    both(pair, "init")
    both(pair, "start", "release", "2.0")
    both_commit(pair, "VERSION", "2.0\n", "Bump to 2.0")
    both(pair, "start", "hotfix", "1.0.1")
    both_commit(pair, "fix.txt", "fixed\n", "Fix production")
    both(pair, "finish", "hotfix", "1.0.1", message="hot")
    assert_same(pair)
    release = git(pair[1].root, "log", "--format=%s", "release/2.0").splitlines()
    assert "Fix production" not in release


def test_a_full_cycle_matches_the_cli_at_every_step(twins):
    pair = twins()
    steps = [
        ("init", ()), ("start", ("feature", "one")), ("commit", ("one.py", "1\n", "One")),
        ("finish", ("feature", "one")), ("start", ("feature", "two")),
        ("commit", ("two.py", "2\n", "Two")), ("commit", ("two.py", "22\n", "Two again")),
        ("finish", ("feature", "two")), ("start", ("bugfix", "three")),
        ("commit", ("one.py", "3\n", "Three")), ("finish", ("bugfix", "three")),
        ("start", ("release", "1.0")), ("commit", ("VERSION", "1.0\n", "Bump")),
        ("finish", ("release", "1.0", "rel")), ("start", ("hotfix", "1.0.1")),
        ("commit", ("one.py", "4\n", "Hot")), ("finish", ("hotfix", "1.0.1", "hot")),
        ("start", ("support", "1.x", "1.0")), ("commit", ("old.txt", "old\n", "Old fix")),
    ]
    for action, args in steps:
        if action == "commit":
            both_commit(pair, *args)
        else:
            both(pair, action, *args)
        assert_same(pair)


def test_a_repository_initialised_by_the_cli_is_read_by_flow_config(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "flow", "init", "-d")
    git(root, "flow", "feature", "start", "x")
    repo = open_repository(root)
    config = flow.flow_config(repo)
    assert config == flow.FlowConfig("main", "develop", flow.DEFAULT_PREFIXES, "", str(root / ".git" / "hooks"))
    assert [(b.name, b.base) for b in flow.list_branches(repo, "feature")] == [("x", "develop")]
    flow.finish(repo, "feature", "x")
    assert "feature/x" not in git(root, "branch")


def test_a_repository_initialised_by_flow_py_is_accepted_by_the_cli(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    flow.init(open_repository(root))
    git(root, "flow", "feature", "start", "x")
    commit(root, "x.txt", "x\n", "Add x")
    git(root, "flow", "feature", "finish", "x")
    git(root, "flow", "release", "start", "1.0")
    git(root, "flow", "release", "finish", "-m", "rel", "1.0")
    assert git(root, "tag").split() == ["1.0"]
    assert git(root, "flow", "feature", "list", check=False) == ""
