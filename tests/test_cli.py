"""The `workbench` command: every failure is one line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from workbench import __version__
from workbench.project import create_from_template


def workbench(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_version_prints_the_package_version():
    result = workbench("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"workbench {__version__}"


def test_every_subcommand_has_help():
    for command in ("open", "new", "windows", "screenshot", "templates"):
        result = workbench(command, "--help")
        assert result.returncode == 0 and "Usage:" in result.stdout


def test_new_creates_the_digits_project_and_lists_templates(tmp_path):
    result = workbench("new", "--template", "digits", str(tmp_path / "mnist-like"), "--json")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mnist-like" / "train.py").is_file()
    assert "digits" in workbench("templates").stdout


def test_new_refuses_a_folder_that_has_files_and_changes_nothing(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    result = workbench("new", str(tmp_path / "busy"))
    assert_one_line_error(result, "busy")
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_new_with_an_unknown_template_names_the_known_ones(tmp_path):
    assert_one_line_error(workbench("new", "--template", "nope", str(tmp_path / "x")), "digits")


def test_open_a_path_that_does_not_exist_says_so(tmp_path):
    assert_one_line_error(workbench("open", str(tmp_path / "missing")), "does not exist")


def test_open_a_project_with_a_malformed_project_file_names_the_line_and_starts_nothing(tmp_path):
    project = create_from_template("empty", tmp_path / "broken").root
    (project / "workbench.toml").write_text('[project]\nname = "broken\n')
    before = (project / "workbench.toml").read_bytes()
    assert_one_line_error(workbench("open", str(project)), "line 2")
    assert (project / "workbench.toml").read_bytes() == before
    assert workbench("windows").returncode == 1  # no hub was left behind


def test_windows_without_a_hub_says_how_to_start_one():
    assert_one_line_error(workbench("windows", "--json"), "no Workbench hub is running")


def test_a_runtime_folder_owned_by_someone_else_is_refused(tmp_path):
    foreign = tmp_path / "foreign-runtime"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, 65534, 65534)
    env = {**os.environ, "WORKBENCH_RUNTIME_DIR": str(foreign)}
    assert_one_line_error(workbench("windows", env=env), "another user")


def test_without_a_display_the_app_explains_xvfb_run_and_screenshot():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    assert_one_line_error(workbench(env=env), "xvfb-run", "screenshot")


@pytest.mark.slow
def test_screenshot_renders_the_welcome_and_a_project_window(tmp_path):
    project = create_from_template("digits", tmp_path / "digits").root
    for args, name in (([], "welcome.png"), ([str(project)], "project.png")):
        out = tmp_path / name
        result = workbench("screenshot", *args, "-o", str(out), "--size", "1000x700")
        assert result.returncode == 0, result.stderr
        image = QImage(str(out))
        assert (image.width(), image.height()) == (1000, 700)
    assert not (project / ".workbench" / "hot-exit").exists() or not any((project / ".workbench" / "hot-exit").iterdir())


def test_screenshot_with_a_bad_size_says_what_it_should_look_like(tmp_path):
    assert_one_line_error(workbench("screenshot", "-o", str(tmp_path / "x.png"), "--size", "big"), "1200x780")


def test_a_bad_option_value_is_one_line_that_points_to_help(tmp_path):
    assert_one_line_error(workbench("open", str(tmp_path), "--line", "abc"), "--line", "--help")
    assert_one_line_error(workbench("open", str(tmp_path), "--line", "0"), "--line")
    assert_one_line_error(workbench("no-such-command"), "no-such-command")


def test_a_missing_file_in_an_existing_folder_asks_to_check_the_name(tmp_path):
    assert_one_line_error(workbench("open", str(tmp_path / "nosuch.py")), "Check the file name")
