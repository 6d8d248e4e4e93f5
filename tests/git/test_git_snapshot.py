"""What a run records of its code: commit, branch, dirty, and a patch that rebuilds it; or the
working tree as a snapshot commit kept on refs/workbench/snapshots/<run>."""

from __future__ import annotations

import subprocess

import pytest

from tests.git.conftest import git
from workbench.git import GitError, NotARepository
from workbench.git.snapshot import commit_working_tree, take_snapshot


def test_a_folder_outside_git_records_no_commit(tmp_path):
    snapshot = take_snapshot(tmp_path)
    assert (snapshot.commit, snapshot.branch, snapshot.dirty, snapshot.patch) == (None, None, False, "")


def test_a_clean_repository_records_its_commit_and_branch(make_repo):
    repo = make_repo(files={"train.py": "print(1)\n"})
    snapshot = take_snapshot(repo)
    assert snapshot.commit == git(repo, "rev-parse", "HEAD").strip()
    assert snapshot.branch == "main" and not snapshot.dirty and snapshot.patch == ""


def test_the_patch_holds_changes_and_untracked_text_files_without_touching_the_index(make_repo, tmp_path):
    repo = make_repo(files={"train.py": "print(1)\n", "data.txt": "a\n"})
    (repo / "train.py").write_text("print(2)\n")
    (repo / "staged.py").write_text("x = 1\n")
    git(repo, "add", "staged.py")
    (repo / "new_model.py").write_text("class Net: pass\n")
    (repo / "weights.bin").write_bytes(b"\0\1\2" * 10)
    (repo / "runs").mkdir()
    (repo / "runs" / ".gitignore").write_text("*\n")
    (repo / "runs" / "stdout.log").write_text("not code\n")
    index_before = (repo / ".git" / "index").read_bytes()
    status_before = git(repo, "status", "--porcelain")

    snapshot = take_snapshot(repo)

    assert (repo / ".git" / "index").read_bytes() == index_before
    assert git(repo, "status", "--porcelain") == status_before
    assert snapshot.dirty
    assert "+print(2)" in snapshot.patch and "+x = 1" in snapshot.patch and "+class Net: pass" in snapshot.patch
    assert "weights.bin" not in snapshot.patch and snapshot.untracked_skipped == ["weights.bin"]
    assert "not code" not in snapshot.patch
    # The commit plus the patch is the code the run used.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    subprocess.run(["git", "apply"], input=snapshot.patch.encode(), cwd=clone, check=True)
    assert (clone / "train.py").read_text() == "print(2)\n"
    assert (clone / "new_model.py").read_text() == "class Net: pass\n"


def test_a_repository_without_commits_records_its_files_as_new(make_repo):
    repo = make_repo(files=None)
    (repo / "train.py").write_text("print(1)\n")
    snapshot = take_snapshot(repo)
    assert snapshot.commit is None and snapshot.branch == "main" and snapshot.dirty
    assert "+print(1)" in snapshot.patch


def test_a_clean_tree_is_kept_as_head_on_the_run_ref(make_repo):
    repo = make_repo(files={"train.py": "print(1)\n"})
    head = git(repo, "rev-parse", "HEAD").strip()

    snapshot = commit_working_tree(repo, "run-1")

    assert (snapshot.commit, snapshot.dirty, snapshot.ref) == (head, False, "refs/workbench/snapshots/run-1")
    assert git(repo, "rev-parse", "refs/workbench/snapshots/run-1").strip() == head


def test_a_dirty_tree_becomes_a_commit_on_head_without_touching_index_or_head(make_repo):
    repo = make_repo(files={"project/train.py": "print(1)\n", ".gitignore": "*.log\n"})
    (repo / "project" / "train.py").write_text("print(2)\n")
    (repo / "project" / "new_model.py").write_text("class Net: pass\n")
    (repo / "project" / "notes.log").write_text("ignored\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    # status first: it may refresh the index's stat data, which is not what is checked here.
    before = (git(repo, "status", "--porcelain"), git(repo, "symbolic-ref", "HEAD"),
              (repo / ".git" / "index").read_bytes())

    snapshot = commit_working_tree(repo / "project", "run-2")

    assert (git(repo, "status", "--porcelain"), git(repo, "symbolic-ref", "HEAD"),
            (repo / ".git" / "index").read_bytes()) == before
    assert snapshot.dirty and snapshot.project_subdir == "project"
    assert git(repo, "rev-parse", f"{snapshot.commit}^").strip() == head
    assert git(repo, "show", f"{snapshot.commit}:project/train.py") == "print(2)\n"
    assert git(repo, "show", f"{snapshot.commit}:project/new_model.py") == "class Net: pass\n"
    assert "notes.log" not in git(repo, "ls-tree", "-r", "--name-only", snapshot.commit)


def test_a_commit_snapshot_needs_a_repository_and_a_run_id_that_names_a_ref(make_repo, tmp_path):
    with pytest.raises(NotARepository):
        commit_working_tree(tmp_path, "run-1")
    repo = make_repo(files={"train.py": "print(1)\n"})
    with pytest.raises(GitError, match="cannot name a Git ref"):
        commit_working_tree(repo, "run 1..")
