import pytest

from tests.git.conftest import git
from workbench.git import GitError
from workbench.git.blame import NOT_COMMITTED_SUMMARY, blame, parse_porcelain
from workbench.git.repository import open_repository


def _two_authors(make_repo):
    """Ada writes three lines of "train loop.py"; Grace rewrites the second."""
    root = make_repo(files={"train loop.py": "import torch\nlr = 0.1\nprint(lr)\n"})
    (root / "train loop.py").write_text("import torch\nlr = 0.01  # Grace\nprint(lr)\n")
    git(root, "commit", "-q", "-am", "Lower the learning rate", "--author=Grace Hopper <grace@example.com>")
    return root


def test_blame_names_the_author_and_commit_of_each_line(make_repo):
    root = _two_authors(make_repo)
    lines = blame(open_repository(root), "train loop.py")
    assert [line.line_no for line in lines] == [1, 2, 3]
    assert [line.text for line in lines] == ["import torch", "lr = 0.01  # Grace", "print(lr)"]
    assert [line.author for line in lines] == ["Ada Tester", "Grace Hopper", "Ada Tester"]
    assert lines[1].email == "grace@example.com" and lines[1].summary == "Lower the learning rate"
    assert lines[0].summary == "initial" and lines[0].sha == lines[2].sha != lines[1].sha
    assert all(line.committed and line.date.tzinfo is not None for line in lines)


def test_lines_changed_since_the_last_commit_are_marked_not_committed(make_repo):
    root = _two_authors(make_repo)
    (root / "train loop.py").write_text("import torch\nlr = 0.01  # Grace\nlr *= 2\nprint(lr)\n")
    lines = blame(open_repository(root), root / "train loop.py")
    new = lines[2]
    assert new.text == "lr *= 2" and not new.committed and new.sha == "0" * 40
    assert new.summary == NOT_COMMITTED_SUMMARY and new.short_sha == ""
    assert all(line.committed for index, line in enumerate(lines) if index != 2)


def test_blame_at_a_revision_shows_the_file_as_it_was(make_repo):
    root = _two_authors(make_repo)
    lines = blame(open_repository(root), "train loop.py", rev="HEAD~1")
    assert [line.text for line in lines] == ["import torch", "lr = 0.1", "print(lr)"]
    assert {line.summary for line in lines} == {"initial"}


def test_blame_follows_lines_to_the_file_name_they_were_written_under(make_repo):
    root = make_repo(files={"dossier é/vieux nom.py": "".join(f"ligne {n}\n" for n in range(10))})
    git(root, "mv", "dossier é/vieux nom.py", "nouveau nom.py")
    git(root, "commit", "-q", "-m", "renommer")
    lines = blame(open_repository(root), "nouveau nom.py")
    assert {line.original_path for line in lines} == {"dossier é/vieux nom.py"}
    assert lines[3].text == "ligne 3" and lines[3].original_line_no == 4


def test_blaming_a_file_that_was_never_committed_says_to_commit_it(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / "draft.py").write_text("x = 1\n")
    repo = open_repository(root)
    with pytest.raises(GitError, match="never been committed"):
        blame(repo, "draft.py")
    with pytest.raises(GitError, match="does not exist in the working tree"):
        blame(repo, "missing.py")
    with pytest.raises(GitError, match="no commits yet"):
        blame(open_repository(make_repo("empty")), "draft.py")


def test_porcelain_output_with_repeated_commits_reuses_the_first_header():
    sha = "a" * 40
    output = (f"{sha} 1 1 2\nauthor Ada\nauthor-mail <ada@x>\nauthor-time 0\nauthor-tz +0130\n"
              f"summary first\nfilename f.py\n\tone\n{sha} 2 2\n\ttwo\n").encode()
    lines = parse_porcelain(output)
    assert [(line.line_no, line.author, line.summary, line.text) for line in lines] == [
        (1, "Ada", "first", "one"), (2, "Ada", "first", "two")]
    assert lines[0].date.utcoffset().total_seconds() == 5400
