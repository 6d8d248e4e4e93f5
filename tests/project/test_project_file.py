import hashlib
import os
from pathlib import Path

import pytest

from workbench.project import PROJECT_FILE, ProjectError, is_writable, load_project, project_key


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_malformed_project_file_error_names_line_and_column_and_leaves_it_untouched(tmp_path):
    text = '[project]\nname = "ok"\nmain = = "train.py"\n'
    file = write(tmp_path / PROJECT_FILE, text)
    before = file.stat().st_mtime_ns

    with pytest.raises(ProjectError) as caught:
        load_project(tmp_path)

    message = str(caught.value)
    assert str(file) in message
    assert "line 3, column 8" in message
    assert "untouched" in message
    assert file.read_text(encoding="utf-8") == text
    assert file.stat().st_mtime_ns == before


def test_project_file_cut_short_still_reports_a_line_and_column(tmp_path):
    write(tmp_path / PROJECT_FILE, "[project]\nname = [\n")
    with pytest.raises(ProjectError, match=r"line \d+, column \d+"):
        load_project(tmp_path)


def test_wrong_type_for_a_known_key_names_the_key(tmp_path):
    write(tmp_path / PROJECT_FILE, "[project]\nname = 42\n")
    with pytest.raises(ProjectError, match="project.name"):
        load_project(tmp_path)


def test_main_of_the_wrong_type_names_the_key(tmp_path):
    write(tmp_path / PROJECT_FILE, "[project]\nmain = [1]\n")
    with pytest.raises(ProjectError, match="project.main"):
        load_project(tmp_path)


def test_missing_folder_is_reported_as_not_existing(tmp_path):
    with pytest.raises(ProjectError, match="does not exist"):
        load_project(tmp_path / "nowhere")


def test_a_file_is_reported_as_not_a_folder(tmp_path):
    file = write(tmp_path / "notes.txt", "hello")
    with pytest.raises(ProjectError, match="is a file, not a folder"):
        load_project(file)


def test_folder_without_project_file_is_a_project_named_after_the_folder(tmp_path):
    folder = tmp_path / "my-experiments"
    folder.mkdir()

    project = load_project(folder)

    assert project.name == "my-experiments"
    assert project.root == folder.resolve()
    assert project.has_project_file is False
    assert project.settings == {}
    assert project.main_file is None
    assert project.writable is True
    assert not (folder / PROJECT_FILE).exists()


def test_project_file_gives_name_main_and_settings(tmp_path):
    write(tmp_path / PROJECT_FILE,
          '[project]\nname = "Digits"\nmain = "train.py"\n[training]\nscript = "train.py"\n')
    write(tmp_path / "train.py", "")
    write(tmp_path / "README.md", "")

    project = load_project(tmp_path)

    assert project.name == "Digits"
    assert project.main_file == tmp_path.resolve() / "train.py"
    assert project.settings["training"] == {"script": "train.py"}
    assert project.has_project_file


def test_main_file_defaults_to_readme(tmp_path):
    write(tmp_path / "a.py", "")
    write(tmp_path / "README.md", "")
    assert load_project(tmp_path).main_file == tmp_path.resolve() / "README.md"


def test_main_file_without_readme_is_the_first_python_file_at_the_root(tmp_path):
    write(tmp_path / "zeta.py", "")
    write(tmp_path / "alpha.py", "")
    write(tmp_path / "sub" / "aaa.py", "")
    assert load_project(tmp_path).main_file == tmp_path.resolve() / "alpha.py"


def test_main_file_that_is_missing_falls_back_to_the_default(tmp_path):
    write(tmp_path / PROJECT_FILE, '[project]\nmain = "gone.py"\n')
    write(tmp_path / "README.md", "")
    assert load_project(tmp_path).main_file == tmp_path.resolve() / "README.md"


def test_writable_probe_leaves_nothing_behind(tmp_path):
    assert load_project(tmp_path).writable is True
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not (Path("/proc").is_dir() and os.access("/proc", os.W_OK)),
                    reason="needs a folder that os.access wrongly calls writable (root + /proc)")
def test_writable_is_a_real_probe_not_os_access():
    # As root, os.access says /proc is writable; creating a file there still fails.
    assert is_writable(Path("/proc")) is False


def test_project_key_is_stable_and_follows_the_resolved_path(tmp_path):
    (tmp_path / "p").mkdir()
    key = project_key(tmp_path / "p")
    assert key == project_key(tmp_path / "p" / ".." / "p")
    assert key != project_key(tmp_path)
    assert len(key) == 16
    expected = hashlib.sha256(str((tmp_path / "p").resolve()).encode()).hexdigest()[:16]
    assert key == expected
