import pytest

from workbench.git import GitError
from workbench.git.repository import NotARepository, init_repository, open_repository
from workbench.git.runner import describe_failure


def test_a_repository_is_found_from_any_file_inside_it(make_repo):
    root = make_repo(files={"src/a.py": "x = 1\n"})
    repo = open_repository(root / "src" / "a.py")
    assert repo.root == root and repo.git_dir == root / ".git"


def test_a_plain_folder_is_not_a_repository_and_can_be_initialised(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(NotARepository, match="Initialise"):
        open_repository(folder)
    assert init_repository(folder).root == folder


def test_a_stale_index_lock_says_what_to_do(make_repo):
    root = make_repo(files={"a.txt": "a\n"})
    (root / ".git" / "index.lock").write_text("")
    (root / "a.txt").write_text("b\n")
    with pytest.raises(GitError, match="index.lock"):
        open_repository(root).run(["add", "a.txt"])


def test_unknown_failures_keep_gits_last_line():
    assert describe_failure(["frobnicate"], "fatal: something odd\n") == "git frobnicate failed: something odd"


def test_an_unknown_ssh_host_key_is_not_called_a_network_problem():
    message = describe_failure(["push"], "Host key verification failed.\nfatal: Could not read from remote repository.\n")
    assert "host key" in message and "cannot be reached" not in message
