import os
from pathlib import Path

import pytest

from workbench.project import (
    PROJECT_FILE,
    ProjectError,
    create_from_template,
    list_templates,
    load_project,
    resources_dir,
)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_resources_are_found_in_the_source_checkout():
    assert (resources_dir() / "templates" / "digits" / "template.toml").is_file()


def test_templates_are_listed_with_title_and_description():
    templates = {t.name: t for t in list_templates()}
    assert {"digits", "empty"} <= set(templates)
    assert "digits" in templates["digits"].title.lower()
    assert templates["digits"].description


def test_creating_a_project_copies_the_template_and_writes_the_name(tmp_path):
    dest = tmp_path / "my digits"

    project = create_from_template("digits", dest, name='Dan\'s "digits"')

    assert project.root == dest.resolve()
    assert project.name == 'Dan\'s "digits"'
    assert project.main_file == dest.resolve() / "train.py"
    assert project.settings["training"]["hparams"] == "hparams/digits.hparams"
    for name in ("train.py", "model.py", "data.py", "README.md", ".gitignore",
                 "hparams/digits.hparams"):
        assert (dest / name).is_file(), name
    assert not (dest / "template.toml").exists()
    # The template's comments survive the name being written.
    assert "# The file a new window opens first." in (dest / PROJECT_FILE).read_text()


def test_project_name_defaults_to_the_folder_name(tmp_path):
    assert create_from_template("empty", tmp_path / "scratch").name == "scratch"


def test_an_empty_existing_folder_can_become_a_project(tmp_path):
    dest = tmp_path / "ready"
    dest.mkdir()
    project = create_from_template("empty", dest)
    assert (dest / "main.py").is_file()
    assert project.main_file == dest.resolve() / "main.py"


def test_creating_into_a_non_empty_folder_refuses_and_changes_nothing(tmp_path):
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "train.py").write_text("mine\n")
    before = snapshot(tmp_path)

    with pytest.raises(ProjectError, match="not empty"):
        create_from_template("digits", dest)

    assert snapshot(tmp_path) == before
    assert [p.name for p in tmp_path.iterdir()] == ["busy"]  # no temporary sibling left


def test_unknown_template_message_lists_the_known_ones(tmp_path):
    with pytest.raises(ProjectError) as caught:
        create_from_template("mnist-gan", tmp_path / "x")
    message = str(caught.value)
    assert "mnist-gan" in message
    assert "digits" in message and "empty" in message
    assert not (tmp_path / "x").exists()


def test_missing_parent_folders_are_made_as_mkdir_p_would(tmp_path):
    project = create_from_template("empty", tmp_path / "no" / "such" / "place")
    assert project.root == tmp_path / "no" / "such" / "place" and project.project_file.is_file()


def test_a_file_on_the_way_to_the_project_is_a_clear_error(tmp_path):
    (tmp_path / "blocker").write_text("x")
    with pytest.raises(ProjectError, match="is a file, not a folder"):
        create_from_template("empty", tmp_path / "blocker" / "sub" / "place")


def test_a_failure_half_way_leaves_no_half_made_project(tmp_path, monkeypatch):
    import workbench.project.templates as templates

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(templates, "_write_project_name", fail)
    dest = tmp_path / "proj"
    with pytest.raises(ProjectError, match="No space left"):
        create_from_template("digits", dest)

    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []


def test_created_project_loads_again_the_same(tmp_path):
    created = create_from_template("digits", tmp_path / "d", name="Digits")
    again = load_project(tmp_path / "d")
    assert (again.name, again.main_file, again.settings) == \
        (created.name, created.main_file, created.settings)


@pytest.mark.skipif(not (Path("/proc").is_dir() and os.access("/proc", os.W_OK)),
                    reason="needs a folder that only a real probe finds unwritable")
def test_unwritable_parent_folder_is_a_clear_error():
    with pytest.raises(ProjectError, match="Cannot write in /proc"):
        create_from_template("empty", Path("/proc") / "new-project")


# ---------------------------------------------------------------------------------------------
# The new project as a Git repository


def _git(root: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def own_git_config(tmp_path, monkeypatch):
    """Git reads no configuration of the person running the tests, and no identity from the
    environment: a test sets what it needs."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{role}_{part}", raising=False)
    return tmp_path / "home"


def test_a_project_made_outside_git_is_a_repository_with_the_template_as_its_first_commit(tmp_path,
                                                                                        own_git_config):
    _git(own_git_config, "config", "--global", "user.name", "Ada Tester")
    _git(own_git_config, "config", "--global", "user.email", "ada@example.com")

    root = create_from_template("digits", tmp_path / "digits").root

    assert _git(root, "rev-parse", "--show-toplevel").strip() == str(root)
    assert _git(root, "log", "--format=%an <%ae>|%cn <%ce>|%s").splitlines() == [
        "Ada Tester <ada@example.com>|Ada Tester <ada@example.com>|New project from the digits template"]
    assert _git(root, "status", "--porcelain", "--untracked-files=all") == ""
    tracked = set(_git(root, "ls-files").split())
    assert {"train.py", "model.py", "data.py", ".gitignore", "workbench.toml", "hparams/digits.hparams"} <= tracked
    assert _git(root, "symbolic-ref", "--short", "HEAD").strip() == "main"


def test_without_a_git_identity_only_the_first_commit_is_signed_by_workbench(tmp_path, own_git_config):
    root = create_from_template("empty", tmp_path / "notes").root

    assert _git(root, "log", "--format=%an <%ae>|%cn <%ce>") == \
        "Workbench <workbench@localhost>|Workbench <workbench@localhost>\n"
    assert "user." not in _git(root, "config", "--local", "--list")


def test_a_project_made_inside_a_repository_is_left_to_that_repository(tmp_path, own_git_config):
    outer = tmp_path / "work"
    outer.mkdir()
    _git(outer, "init", "-q")

    root = create_from_template("empty", outer / "notes").root

    assert not (root / ".git").exists()
    assert _git(root, "rev-parse", "--show-toplevel").strip() == str(outer)
    assert _git(outer, "status", "--porcelain") == "?? notes/\n"
