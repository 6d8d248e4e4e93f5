import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.conflicts import (
    abort_merge,
    conflicted_files,
    conflicts_left,
    file_conflicts,
    mark_resolved,
    parse_conflicts,
    readable_label,
    resolve_file,
    resolve_hunk,
    resolve_hunk_text,
    with_readable_labels,
)
from workbench.git.repo_state import RepoStateKind, repository_state
from workbench.git.repository import open_repository

BASE = [f"line {n}\n" for n in range(1, 13)]


def _lines(**changes):
    lines = list(BASE)
    for number, text in changes.items():
        lines[int(number[1:]) - 1] = text + "\n"
    return "".join(lines)


def _conflicting_merge(make_repo, conflict_style="merge"):
    """main and feature both change lines 2 and 10 of "mo dèle.py" and both change config.txt;
    merging feature into main stops with both files conflicted."""
    root = make_repo(files={"mo dèle.py": "".join(BASE), "config.txt": "lr = 0.1\n", "other.txt": "o\n"})
    git(root, "config", "merge.conflictStyle", conflict_style)
    git(root, "checkout", "-q", "-b", "feature")
    (root / "mo dèle.py").write_text(_lines(n2="theirs two", n10="theirs ten"))
    (root / "config.txt").write_text("lr = 0.3\n")
    git(root, "commit", "-q", "-am", "feature changes")
    git(root, "checkout", "-q", "main")
    (root / "mo dèle.py").write_text(_lines(n2="ours two", n10="ours ten"))
    (root / "config.txt").write_text("lr = 0.2\n")
    git(root, "commit", "-q", "-am", "main changes")
    git(root, "merge", "feature", check=False)
    return root


def test_a_conflicted_merge_lists_its_conflicted_files(make_repo):
    repo = open_repository(_conflicting_merge(make_repo))
    files = conflicted_files(repo)
    assert [file.path for file in files] == ["config.txt", "mo dèle.py"]
    assert {file.kind for file in files} == {"both modified"}
    assert conflicts_left(repo) == 2


def test_the_hunks_of_a_file_are_read_from_its_markers_with_line_ranges(make_repo):
    repo = open_repository(_conflicting_merge(make_repo))
    hunks = file_conflicts(repo, "mo dèle.py")
    assert len(hunks) == 2
    first, second = hunks
    assert first.ours == ("ours two\n",) and first.theirs == ("theirs two\n",) and first.base is None
    assert first.ours_label == "HEAD" and first.theirs_label == "feature"
    assert first.lines.start == 2 and first.ours_lines.start == first.ours_lines.end == 3
    assert first.theirs_lines.start == 5 and first.lines.end == 6
    text = (repo.root / "mo dèle.py").read_text().splitlines()
    assert text[second.ours_lines.start - 1] == "ours ten"
    assert text[second.lines.end - 1].startswith(">>>>>>>")


def test_the_diff3_style_gives_the_base_version_of_each_hunk(make_repo):
    repo = open_repository(_conflicting_merge(make_repo, conflict_style="diff3"))
    first = file_conflicts(repo, "mo dèle.py")[0]
    assert first.base == ("line 2\n",) and first.base_label
    assert first.base_lines.start == first.ours_lines.end + 2


def test_resolving_a_whole_file_with_theirs_takes_their_version_and_marks_it_resolved(make_repo):
    repo = open_repository(_conflicting_merge(make_repo))
    resolve_file(repo, "config.txt", "theirs")
    assert (repo.root / "config.txt").read_text() == "lr = 0.3\n"
    assert [file.path for file in conflicted_files(repo)] == ["mo dèle.py"]


def test_resolving_hunks_one_by_one_keeps_the_other_hunks_markers_then_the_merge_commits(make_repo):
    root = _conflicting_merge(make_repo)
    repo = open_repository(root)
    resolve_file(repo, "config.txt", "ours")
    assert resolve_hunk(repo, "mo dèle.py", 0, "ours") == 1
    remaining = file_conflicts(repo, root / "mo dèle.py")
    assert len(remaining) == 1 and remaining[0].ours == ("ours ten\n",)
    with pytest.raises(GitError, match="still has conflict markers"):
        mark_resolved(repo, "mo dèle.py")
    assert resolve_hunk(repo, "mo dèle.py", 0, "both") == 0
    assert (root / "mo dèle.py").read_text() == _lines(n2="ours two", n10="ours ten\ntheirs ten")
    mark_resolved(repo, "mo dèle.py")
    assert conflicts_left(repo) == 0
    state = repository_state(repo)
    assert state.kind is RepoStateKind.MERGING and "commit to finish" in state.message
    git(root, "commit", "-q", "--no-edit")
    assert repository_state(repo).kind is RepoStateKind.CLEAN
    assert len(git(root, "log", "-1", "--format=%P").split()) == 2
    assert (root / "config.txt").read_text() == "lr = 0.2\n"


def test_aborting_a_merge_restores_the_branch_as_it_was(make_repo):
    root = _conflicting_merge(make_repo)
    repo = open_repository(root)
    assert repository_state(repo).kind is RepoStateKind.MERGING
    abort_merge(repo)
    assert repository_state(repo).kind is RepoStateKind.CLEAN
    assert (root / "config.txt").read_text() == "lr = 0.2\n"
    with pytest.raises(GitError, match="no merge in progress"):
        abort_merge(repo)


def test_a_file_deleted_by_them_can_be_resolved_by_taking_theirs(make_repo):
    root = make_repo(files={"weights.txt": "w\n"})
    git(root, "checkout", "-q", "-b", "feature")
    git(root, "rm", "-q", "weights.txt")
    git(root, "commit", "-q", "-m", "delete")
    git(root, "checkout", "-q", "main")
    (root / "weights.txt").write_text("w2\n")
    git(root, "commit", "-q", "-am", "edit")
    git(root, "merge", "feature", check=False)
    repo = open_repository(root)
    assert [(file.path, file.kind) for file in conflicted_files(repo)] == [("weights.txt", "deleted by them")]
    resolve_file(repo, "weights.txt", "theirs")
    assert not (root / "weights.txt").exists() and conflicts_left(repo) == 0


def test_hunk_parsing_keeps_crlf_endings_and_rejects_an_unclosed_block():
    text = "a\r\n<<<<<<< HEAD\r\nours\r\n=======\r\ntheirs\r\n>>>>>>> b\r\nz\r\n"
    assert parse_conflicts(text)[0].ours == ("ours\r\n",)
    assert resolve_hunk_text(text, 0, "theirs") == "a\r\ntheirs\r\nz\r\n"
    assert resolve_hunk_text(text, 0, "both") == "a\r\nours\r\ntheirs\r\nz\r\n"
    with pytest.raises(GitError, match="no closing"):
        parse_conflicts("<<<<<<< HEAD\nours\n=======\n")
    with pytest.raises(GitError, match="no conflict number 2"):
        resolve_hunk_text(text, 1, "ours")
    assert parse_conflicts("<<<<<<<< not a marker\n") == []


def _pull_conflict(make_repo, tmp_path):
    """A clone whose ``git pull`` (a merge) of origin/main stops on a conflict in notes.txt."""
    upstream = make_repo("upstream", {"notes.txt": "base\n"})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    (upstream / "notes.txt").write_text("upstream\n")
    git(upstream, "commit", "-q", "-am", "upstream edit")
    (clone / "notes.txt").write_text("local\n")
    git(clone, "commit", "-q", "-am", "local edit")
    git(clone, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert (clone / ".git" / "MERGE_HEAD").exists()
    return clone


def test_a_pulled_side_is_named_by_its_remote_tracking_branch_not_its_full_sha(make_repo, tmp_path):
    clone = _pull_conflict(make_repo, tmp_path)
    repo = open_repository(clone)
    [raw] = file_conflicts(repo, "notes.txt")
    assert len(raw.theirs_label) == 40  # what git wrote into the markers
    [hunk] = with_readable_labels(repo, [raw])
    assert hunk.theirs_label == "origin/main"
    assert hunk.ours_label == raw.ours_label == "HEAD"


def test_a_merged_commit_without_a_branch_in_merge_msg_is_named_by_name_rev_or_a_short_sha(make_repo):
    root = _conflicting_merge(make_repo)
    repo = open_repository(root)
    feature = git(root, "rev-parse", "feature").strip()
    assert readable_label(repo, feature) == "feature"  # MERGE_MSG: "Merge branch 'feature'"
    git(root, "merge", "--abort")
    git(root, "merge", feature, check=False)  # MERGE_MSG: "Merge commit '<sha>'"
    assert readable_label(repo, feature) == "feature"  # from name-rev
    git(root, "merge", "--abort")
    git(root, "branch", "-D", "feature")
    assert readable_label(repo, feature) == feature[:8]
