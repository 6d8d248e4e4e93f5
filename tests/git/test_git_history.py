import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.history import commit_details, log, parse_refs
from workbench.git.repository import open_repository


def _merge_history(make_repo):
    """main: initial ─ main work ─ merge(feature) ; feature: feature one ─ feature two; tags."""
    root = make_repo(files={"a.txt": "a\n"})
    git(root, "tag", "v1.0")
    git(root, "checkout", "-q", "-b", "feature")
    for number in ("one", "two"):
        (root / f"{number}.txt").write_text(number + "\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"feature {number}")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("a\nmain\n")
    git(root, "commit", "-q", "-am", "main work")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    git(root, "tag", "-a", "-m", "release", "v2.0")
    return root


def test_log_lists_merges_with_both_parents_and_children_before_parents(make_repo):
    root = _merge_history(make_repo)
    entries = log(open_repository(root))
    assert [entry.summary for entry in entries][0] == "Merge feature"
    assert len(entries) == 5
    merge = entries[0]
    assert merge.is_merge and len(merge.parents) == 2
    position = {entry.sha: index for index, entry in enumerate(entries)}
    for entry in entries:
        for parent in entry.parents:
            assert position[parent] > position[entry.sha]
    assert merge.date.tzinfo is not None
    assert merge.author == "Ada Tester" and merge.email == "ada@example.com"
    assert merge.short_sha and merge.sha.startswith(merge.short_sha)


def test_log_shows_branches_and_tags_pointing_at_each_commit(make_repo):
    root = _merge_history(make_repo)
    entries = {entry.summary: entry for entry in log(open_repository(root))}
    merge = entries["Merge feature"]
    assert merge.is_head and set(merge.refs) == {"main", "v2.0"} and merge.tags == ("v2.0",)
    assert entries["feature two"].refs == ("feature",) and not entries["feature two"].is_head
    assert entries["initial"].tags == ("v1.0",)


def test_log_of_one_branch_leaves_out_commits_only_on_other_branches(make_repo):
    root = _merge_history(make_repo)
    git(root, "checkout", "-q", "-b", "side", "v1.0")
    (root / "side.txt").write_text("side\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side work")
    repo = open_repository(root)
    assert "side work" not in [entry.summary for entry in log(repo, ref="main")]
    assert "side work" in [entry.summary for entry in log(repo, ref="main", all_refs=True)]
    assert [entry.summary for entry in log(repo)] == ["side work", "initial"]


def test_the_whole_graph_leaves_out_stashes_and_snapshots_of_runs(make_repo):
    root = _merge_history(make_repo)
    (root / "wip.txt").write_text("work in progress\n")
    git(root, "add", "wip.txt")
    git(root, "stash", "push", "-q", "-m", "half done")
    tree = git(root, "write-tree").strip()
    snapshot = git(root, "commit-tree", tree, "-p", "HEAD", "-m", "workbench: code of run 7").strip()
    git(root, "update-ref", "refs/workbench/snapshots/run-7", snapshot)
    git(root, "checkout", "-q", "--detach", "HEAD~1")

    summaries = [entry.summary for entry in log(open_repository(root), all_refs=True)]
    assert "Merge feature" in summaries and "feature two" in summaries
    assert not [s for s in summaries if "index on" in s or "half done" in s or "code of run" in s]
    assert "stash" not in " ".join(" ".join(e.refs) for e in log(open_repository(root), all_refs=True))


def test_log_pages_with_limit_and_skip(make_repo):
    root = _merge_history(make_repo)
    repo = open_repository(root)
    everything = log(repo)
    assert log(repo, limit=2) == everything[:2]
    assert log(repo, limit=2, skip=2) == everything[2:4]
    assert log(repo, skip=10) == []


def test_file_history_follows_the_file_across_a_rename(make_repo):
    root = make_repo(files={"old name.py": "print('hello')\n" * 20})
    (root / "models").mkdir()
    git(root, "mv", "old name.py", "models/new name.py")
    git(root, "commit", "-q", "-m", "rename")
    with (root / "models" / "new name.py").open("a") as handle:
        handle.write("print('more')\n")
    git(root, "commit", "-q", "-am", "edit after rename")
    (root / "other.txt").write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "unrelated")
    repo = open_repository(root)
    summaries = [entry.summary for entry in log(repo, path="models/new name.py")]
    assert summaries == ["edit after rename", "rename", "initial"]
    assert [entry.summary for entry in log(repo, path=root / "models")] == ["edit after rename", "rename"]


def test_non_ascii_names_with_spaces_come_through_unchanged(make_repo):
    root = make_repo(files={"données d'entraînement/modèle é.txt": "α\n"})
    git(root, "checkout", "-q", "-b", "fonctionnalité")
    (root / "données d'entraînement" / "modèle é.txt").write_text("β\n")
    git(root, "commit", "-q", "-am", "Modèle mis à jour ✓")
    git(root, "tag", "étiquette")
    repo = open_repository(root)
    entry = log(repo, path="données d'entraînement/modèle é.txt")[0]
    assert entry.summary == "Modèle mis à jour ✓"
    assert set(entry.refs) == {"fonctionnalité", "étiquette"}
    details = commit_details(repo, entry.sha)
    assert [(file.path, file.status) for file in details.files] == [("données d'entraînement/modèle é.txt", "M")]


def test_commit_details_give_the_full_message_and_changed_files(make_repo):
    root = make_repo(files={"keep.txt": "k\n", "gone.txt": "g\n", "move me.txt": "m\n" * 10})
    git(root, "rm", "-q", "gone.txt")
    git(root, "mv", "move me.txt", "moved.txt")
    (root / "keep.txt").write_text("changed\n")
    (root / "new.txt").write_text("n\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Summary line\n\nA body\nwith two lines.")
    repo = open_repository(root)
    details = commit_details(repo, log(repo)[0].sha)
    assert details.message == "Summary line\n\nA body\nwith two lines."
    assert details.entry.summary == "Summary line"
    files = {file.path: file for file in details.files}
    assert files["keep.txt"].status == "M" and files["gone.txt"].status == "D" and files["new.txt"].status == "A"
    assert files["moved.txt"].status == "R" and files["moved.txt"].old_path == "move me.txt"
    root_details = commit_details(repo, log(repo)[-1].sha)
    assert {file.path for file in root_details.files} == {"keep.txt", "gone.txt", "move me.txt"}


def test_commit_details_of_a_merge_list_what_it_brought_in(make_repo):
    root = _merge_history(make_repo)
    repo = open_repository(root)
    details = commit_details(repo, log(repo)[0].sha)
    assert {file.path for file in details.files} == {"one.txt", "two.txt"}


def test_a_repository_with_no_commits_has_an_empty_history(make_repo):
    repo = open_repository(make_repo())
    assert log(repo) == []
    assert log(repo, all_refs=True) == []
    assert log(repo, path="anything.txt") == []


def test_an_unknown_ref_says_what_is_wrong(make_repo):
    repo = open_repository(make_repo(files={"a": "a\n"}))
    with pytest.raises(GitError, match="no branch, tag or commit named 'nope'"):
        log(repo, ref="nope")
    with pytest.raises(GitError, match="not a branch"):
        log(repo, ref="--all")
    with pytest.raises(GitError, match="no branch, tag or commit"):
        commit_details(repo, "0123456789abcdef")


def test_decorations_are_read_as_short_names():
    refs, tags, is_head = parse_refs("HEAD -> refs/heads/main, tag: refs/tags/v1, refs/remotes/origin/main, "
                                     "refs/remotes/origin/HEAD")
    assert refs == ("main", "v1", "origin/main") and tags == ("v1",) and is_head
    assert parse_refs("") == ((), (), False)
    assert parse_refs("HEAD, refs/heads/x")[2] is True
