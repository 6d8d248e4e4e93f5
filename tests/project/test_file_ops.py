import pytest

from workbench.project import ProjectError, create_file, create_folder, delete, rename


@pytest.mark.parametrize("bad", ["", "   ", "a/b", "a\\b", "..", ".", "x\0y"])
def test_invalid_names_are_refused(tmp_path, bad):
    with pytest.raises(ProjectError):
        create_file(tmp_path, bad)
    with pytest.raises(ProjectError):
        create_folder(tmp_path, bad)
    assert list(tmp_path.iterdir()) == []


def test_create_file_makes_an_empty_file(tmp_path):
    path = create_file(tmp_path, " notes.md ")
    assert path == tmp_path / "notes.md"
    assert path.read_bytes() == b""


def test_create_file_never_replaces_an_existing_one(tmp_path):
    (tmp_path / "train.py").write_text("precious")
    with pytest.raises(ProjectError, match="already exists"):
        create_file(tmp_path, "train.py")
    assert (tmp_path / "train.py").read_text() == "precious"


def test_create_folder_refuses_an_existing_name(tmp_path):
    assert create_folder(tmp_path, "data").is_dir()
    with pytest.raises(ProjectError, match="already exists"):
        create_folder(tmp_path, "data")


def test_creating_in_a_missing_folder_says_so(tmp_path):
    with pytest.raises(ProjectError, match="does not exist"):
        create_file(tmp_path / "gone", "a.py")


def test_rename_keeps_the_content_and_returns_the_new_path(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    new = rename(tmp_path / "a.py", "b.py")
    assert new == tmp_path / "b.py"
    assert new.read_text() == "x = 1\n"
    assert not (tmp_path / "a.py").exists()


def test_rename_onto_an_existing_name_refuses_and_loses_nothing(tmp_path):
    (tmp_path / "a.py").write_text("a")
    (tmp_path / "b.py").write_text("b")
    with pytest.raises(ProjectError, match="already exists"):
        rename(tmp_path / "a.py", "b.py")
    assert (tmp_path / "a.py").read_text() == "a"
    assert (tmp_path / "b.py").read_text() == "b"


def test_rename_of_a_missing_file_says_so(tmp_path):
    with pytest.raises(ProjectError, match="does not exist"):
        rename(tmp_path / "ghost.py", "b.py")


def test_rename_refuses_a_name_with_a_slash(tmp_path):
    (tmp_path / "a.py").write_text("a")
    with pytest.raises(ProjectError, match="slash"):
        rename(tmp_path / "a.py", "../b.py")
    assert (tmp_path / "a.py").exists()


def test_delete_moves_to_the_trash_under_its_project_path(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text("net")

    where = delete(tmp_path / "src" / "model.py", root=tmp_path)

    assert not (tmp_path / "src" / "model.py").exists()
    assert where.read_text() == "net"
    assert where.relative_to(tmp_path / ".workbench" / "trash").parts[1:] == ("src", "model.py")


def test_deleting_the_same_name_twice_keeps_both_copies(tmp_path):
    (tmp_path / "a.txt").write_text("first")
    first = delete(tmp_path / "a.txt", root=tmp_path)
    (tmp_path / "a.txt").write_text("second")
    second = delete(tmp_path / "a.txt", root=tmp_path)
    assert first != second
    assert (first.read_text(), second.read_text()) == ("first", "second")


def test_delete_finds_the_project_root_by_its_project_file(tmp_path):
    (tmp_path / "workbench.toml").write_text("")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    where = delete(tmp_path / "deep" / "er")
    assert where.is_relative_to(tmp_path / ".workbench" / "trash")
    assert where.is_dir()


def test_delete_refuses_the_project_folder_and_workbench_state(tmp_path):
    (tmp_path / ".workbench").mkdir()
    with pytest.raises(ProjectError, match="project folder itself"):
        delete(tmp_path, root=tmp_path)
    with pytest.raises(ProjectError, match="Workbench's own state"):
        delete(tmp_path / ".workbench", root=tmp_path)
    assert (tmp_path / ".workbench").is_dir()


def test_delete_of_a_missing_file_says_so(tmp_path):
    with pytest.raises(ProjectError, match="does not exist"):
        delete(tmp_path / "ghost", root=tmp_path)
