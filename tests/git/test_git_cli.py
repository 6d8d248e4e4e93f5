"""``workbench git …`` as a user runs it: a real process, one-line errors, --json where it reports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.git.conftest import git


def workbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "git", *args], capture_output=True, text=True,
                          timeout=60)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 1, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def flow_root(make_repo):
    root = make_repo(files={"app.py": "x = 1\n"})
    ok(workbench("flow", "init", str(root), "-d"))
    return root


def test_status_lists_changed_files_by_group(make_repo):
    root = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    (root / "a.txt").write_text("changed\n")
    (root / "b.txt").write_text("staged\n")
    git(root, "add", "b.txt")
    (root / "new.txt").write_text("new\n")
    out = ok(workbench("status", str(root)))
    assert out.splitlines()[0] == "On branch main"
    assert "  staged     M.  b.txt" in out and "  unstaged   .M  a.txt" in out and "untracked  ??  new.txt" in out


def test_status_json_has_the_branch_and_the_groups(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "a.txt").write_text("changed\n")
    data = json.loads(ok(workbench("status", str(root), "--json")))
    assert data["branch"] == "main" and data["is_clean"] is False
    assert [c["path"] for c in data["unstaged"]] == ["a.txt"]


def test_status_of_a_clean_repository_says_so(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    assert "working tree is clean" in ok(workbench("status", str(root)))


def test_status_outside_a_repository_is_a_one_line_error(tmp_path):
    assert_one_line_error(workbench("status", str(tmp_path)), "is not in a Git repository")


def test_flow_init_sets_up_the_cli_config(flow_root):
    assert git(flow_root, "config", "gitflow.branch.develop").strip() == "develop"
    assert git(flow_root, "symbolic-ref", "--short", "HEAD").strip() == "develop"


def test_flow_init_json_reports_the_config(make_repo):
    root = make_repo(files=None)
    data = json.loads(ok(workbench("flow", "init", str(root), "--tag-prefix", "v", "--json")))
    assert (data["master"], data["develop"], data["version_tag_prefix"]) == ("master", "develop", "v")


def test_flow_commands_before_init_say_how_to_set_it_up(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    assert_one_line_error(workbench("flow", "feature", "start", "x", str(root)), "workbench git flow init")
    assert_one_line_error(workbench("flow", "list", str(root)), "not set up for git-flow")


def test_a_feature_starts_and_finishes_from_the_command_line(flow_root):
    assert "Started feature login on feature/login" in ok(workbench("flow", "feature", "start", "login", str(flow_root)))
    (flow_root / "login.py").write_text("a\n")
    git(flow_root, "add", "login.py")
    git(flow_root, "commit", "-q", "-m", "Login")
    out = ok(workbench("flow", "feature", "finish", "login", str(flow_root)))
    assert "merged into develop" in out and "deleted feature/login" in out
    assert "feature/login" not in git(flow_root, "branch")


def test_a_release_finish_tags_with_the_message(flow_root):
    ok(workbench("flow", "release", "start", "1.0", str(flow_root)))
    data = json.loads(ok(workbench("flow", "release", "finish", "1.0", str(flow_root), "-m", "rel", "--json")))
    assert (data["tag"], data["merged_into"]) == ("1.0", ["main", "develop"])
    assert git(flow_root, "tag", "-n1").split(None, 1) == ["1.0", "rel 1.0\n"]


def test_a_second_release_is_a_one_line_error(flow_root):
    ok(workbench("flow", "release", "start", "1.0", str(flow_root)))
    assert_one_line_error(workbench("flow", "release", "start", "1.1", str(flow_root)), "Finish release 1.0 first")


def test_a_name_with_a_space_is_a_one_line_error(flow_root):
    assert_one_line_error(workbench("flow", "feature", "start", "my thing", str(flow_root)), "whitespace")


def test_flow_list_shows_open_branches_with_json(flow_root):
    ok(workbench("flow", "feature", "start", "a", str(flow_root)))
    ok(workbench("flow", "bugfix", "start", "b", str(flow_root)))
    out = ok(workbench("flow", "list", str(flow_root)))
    assert "  feature  a  (from develop)" in out and "* bugfix   b  (from develop)" in out
    data = json.loads(ok(workbench("flow", "list", str(flow_root), "--json")))
    assert [b["name"] for b in data["feature"]] == ["a"] and data["release"] == []


def test_publish_pushes_to_the_remote(flow_root, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(flow_root, "remote", "add", "origin", str(remote))
    ok(workbench("flow", "feature", "start", "a", str(flow_root)))
    assert "Published feature/a on origin" in ok(workbench("flow", "feature", "publish", "a", str(flow_root)))
    assert "feature/a" in git(remote, "branch")


@pytest.mark.parametrize("command", [
    [], ["status"], ["flow"], ["flow", "init"], ["flow", "list"],
    *[["flow", kind, action] for kind in ("feature", "bugfix", "release", "hotfix", "support")
      for action in ("start", "finish", "publish")],
])
def test_every_command_has_help(command):
    out = ok(workbench(*command, "--help"))
    assert out.startswith("Usage: workbench git")
