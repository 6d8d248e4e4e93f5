import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.branches import (
    Head, create_branch, create_tag, current_branch, current_head, delete_branch, delete_tag, list_branches,
    list_tags, rename_branch, switch_branch,
)
from workbench.git.repository import open_repository


def _commit(root, path, text, message):
    (root / path).write_text(text)
    git(root, "add", path)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_local_and_remote_branches_are_listed_with_upstream_and_ahead_behind(make_repo, tmp_path):
    origin = make_repo("origin", files={"a.txt": "a\n"})
    git(tmp_path, "clone", "-q", str(origin), "clone")
    root = tmp_path / "clone"
    _commit(origin, "a.txt", "remote\n", "remote change")
    git(root, "fetch", "-q")
    _commit(root, "b.txt", "b\n", "local 1")
    local_sha = _commit(root, "c.txt", "c\n", "local 2")
    git(root, "branch", "side")

    branches = {branch.name: branch for branch in list_branches(open_repository(root))}

    assert set(branches) == {"main", "side", "origin/main"}
    main = branches["main"]
    assert (main.sha, main.upstream, main.ahead, main.behind, main.is_current) == (local_sha, "origin/main", 2, 1, True)
    assert not branches["side"].is_current and branches["side"].upstream is None
    assert branches["origin/main"].is_remote and not main.is_remote
    assert [b.name for b in list_branches(open_repository(root), include_remote=False)] == ["main", "side"]


def test_current_head_tells_branch_detached_and_unborn_apart(make_repo):
    empty = open_repository(make_repo("empty"))
    assert current_head(empty) == Head(branch="main", sha=None) and current_head(empty).unborn

    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    sha = git(root, "rev-parse", "HEAD").strip()
    assert current_head(repo) == Head(branch="main", sha=sha) and current_branch(repo) == "main"
    git(root, "checkout", "-q", "--detach")
    assert current_head(repo).detached and current_head(repo).sha == sha
    assert current_branch(repo) is None


def test_create_from_a_start_point_and_switch(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    _commit(root, "a.txt", "b\n", "second")
    repo = open_repository(root)

    branch = create_branch(repo, "fix/old", start_point=first)
    assert (branch.name, branch.sha, branch.is_current) == ("fix/old", first, False)
    switch_branch(repo, "fix/old")
    assert current_branch(repo) == "fix/old" and (root / "a.txt").read_text() == "a\n"

    created = create_branch(repo, "feature", switch=True)
    assert created.is_current and current_branch(repo) == "feature"


def test_creating_an_existing_or_badly_named_branch_says_why(make_repo):
    repo = open_repository(make_repo(files={"a.txt": "a\n"}))
    with pytest.raises(GitError, match="already exists"):
        create_branch(repo, "main")
    with pytest.raises(GitError, match="not a valid branch name"):
        create_branch(repo, "bad..name")
    with pytest.raises(GitError, match="no branch, tag or commit called nosuch"):
        create_branch(repo, "x", start_point="nosuch")


def test_switch_blocked_by_local_changes_names_the_files_and_suggests_commit_or_stash(make_repo):
    root = make_repo(files={"a.txt": "a\n", "b.txt": "b\n"})
    git(root, "switch", "-q", "-c", "other")
    _commit(root, "a.txt", "other\n", "change a on other")
    git(root, "switch", "-q", "main")
    (root / "a.txt").write_text("my unsaved work\n")

    with pytest.raises(GitError) as caught:
        switch_branch(open_repository(root), "other")

    message = str(caught.value)
    assert "a.txt" in message and "Commit or stash" in message
    assert current_branch(open_repository(root)) == "main"
    assert (root / "a.txt").read_text() == "my unsaved work\n"


def test_switch_blocked_by_untracked_files_names_them(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "switch", "-q", "-c", "other")
    _commit(root, "new.txt", "tracked on other\n", "add new")
    git(root, "switch", "-q", "main")
    (root / "new.txt").write_text("untracked here\n")
    with pytest.raises(GitError, match="untracked files new.txt"):
        switch_branch(open_repository(root), "other")


def test_switching_to_a_missing_branch_says_there_is_none(make_repo):
    with pytest.raises(GitError, match="no branch called nosuch"):
        switch_branch(open_repository(make_repo(files={"a.txt": "a\n"})), "nosuch")


def test_switching_to_a_remote_only_branch_makes_a_tracking_branch(make_repo, tmp_path):
    origin = make_repo("origin", files={"a.txt": "a\n"})
    git(origin, "branch", "topic")
    git(tmp_path, "clone", "-q", str(origin), "clone")
    repo = open_repository(tmp_path / "clone")
    switch_branch(repo, "topic")
    topic = next(b for b in list_branches(repo) if b.name == "topic")
    assert topic.is_current and topic.upstream == "origin/topic"


def test_rename_keeps_the_commit(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    create_branch(repo, "old")
    renamed = rename_branch(repo, "old", "new")
    assert renamed.sha == git(root, "rev-parse", "HEAD").strip()
    assert [b.name for b in list_branches(repo)] == ["main", "new"]
    with pytest.raises(GitError, match="no branch called old"):
        rename_branch(repo, "old", "newer")


def test_deleting_an_unmerged_branch_suggests_force_and_force_deletes_it(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    git(root, "switch", "-q", "-c", "experiment")
    _commit(root, "b.txt", "b\n", "unmerged work")
    git(root, "switch", "-q", "main")

    with pytest.raises(GitError, match="not merged.*force"):
        delete_branch(repo, "experiment")
    assert "experiment" in [b.name for b in list_branches(repo)]

    delete_branch(repo, "experiment", force=True)
    assert [b.name for b in list_branches(repo)] == ["main"]


def test_a_merged_branch_is_deleted_and_the_current_one_is_refused(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    repo = open_repository(root)
    create_branch(repo, "done")
    delete_branch(repo, "done")
    assert [b.name for b in list_branches(repo)] == ["main"]
    with pytest.raises(GitError, match="current branch"):
        delete_branch(repo, "main")


def test_lightweight_and_annotated_tags_are_created_listed_and_deleted(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    first = git(root, "rev-parse", "HEAD").strip()
    second = _commit(root, "a.txt", "b\n", "second")
    repo = open_repository(root)

    light = create_tag(repo, "v0.1", target=first)
    annotated = create_tag(repo, "v1.0", message="First release\n\nNotes.")

    assert (light.sha, light.annotated) == (first, False)
    assert (annotated.sha, annotated.annotated, annotated.message) == (second, True, "First release\n\nNotes.")
    assert [t.name for t in list_tags(repo)] == ["v0.1", "v1.0"]
    assert git(root, "cat-file", "-t", "v1.0").strip() == "tag"

    with pytest.raises(GitError, match="already exists"):
        create_tag(repo, "v1.0")
    delete_tag(repo, "v0.1")
    assert [t.name for t in list_tags(repo)] == ["v1.0"]
    with pytest.raises(GitError, match="no tag called v0.1"):
        delete_tag(repo, "v0.1")


def test_merging_a_branch_fast_forwards_or_reports_the_conflicted_files(make_repo):
    from workbench.git.branches import merge_branch
    from workbench.git.repository import open_repository

    from .conftest import git

    root = make_repo(files={"a.txt": "one\n", "b.txt": "b\n"})
    repo = open_repository(root)
    git(root, "switch", "-q", "-c", "side")
    (root / "b.txt").write_text("b from side\n")
    git(root, "commit", "-qam", "side edits b")
    git(root, "switch", "-q", "main")
    result = merge_branch(repo, "side")
    assert result.fast_forward and not result.conflicts

    git(root, "switch", "-q", "-c", "other")
    (root / "a.txt").write_text("other\n")
    git(root, "commit", "-qam", "other edits a")
    git(root, "switch", "-q", "main")
    (root / "a.txt").write_text("main\n")
    git(root, "commit", "-qam", "main edits a")
    result = merge_branch(repo, "other")
    assert result.conflicts == ("a.txt",)
    assert (root / ".git" / "MERGE_HEAD").exists()


def test_merging_something_that_does_not_exist_says_so(make_repo):
    import pytest

    from workbench.git import GitError
    from workbench.git.branches import merge_branch
    from workbench.git.repository import open_repository

    repo = open_repository(make_repo(files={"a.txt": "a\n"}))
    with pytest.raises(GitError, match="no branch or commit called nope"):
        merge_branch(repo, "nope")
