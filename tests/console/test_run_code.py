"""What the editor's Run commands send to the console, and which Python the console runs: plain
text and settings in, plain text out (no kernel, no Qt)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from workbench.console import ConsoleError, cell_at, code_of_selection, line_after_cell, project_interpreter, run_file_code
from workbench.project import load_project

CELLS = """import numpy as np

# %% load
data = np.arange(6)
total = data.sum()
#%% plot
    indented = 1

# %%
last = True"""


def test_a_cell_runs_from_its_marker_to_the_line_before_the_next_one():
    cell = cell_at(CELLS, 5)
    assert (cell.first, cell.last, cell.title) == (3, 5, "load")
    assert cell.code == "# %% load\ndata = np.arange(6)\ntotal = data.sum()"


def test_the_code_above_the_first_marker_is_a_cell_and_a_file_without_markers_is_one():
    assert cell_at(CELLS, 1).code == "import numpy as np"
    assert cell_at(CELLS, 2).last == 2
    assert cell_at("a = 1\nb = 2\n", 2).code == "a = 1\nb = 2"


def test_a_cell_on_its_marker_line_and_the_last_cell_reach_their_ends():
    assert cell_at(CELLS, 6).title == "plot"
    assert cell_at(CELLS, 6).code == "#%% plot\n    indented = 1"  # only the marker line is at column 0
    last = cell_at(CELLS, 10)
    assert (last.first, last.last, last.code) == (9, 10, "# %%\nlast = True")


def test_run_cell_and_advance_goes_to_the_next_cells_first_line_and_stays_in_the_last():
    assert line_after_cell(CELLS, cell_at(CELLS, 4)) == 6
    assert line_after_cell(CELLS, cell_at(CELLS, 10)) == 10


def test_a_selection_inside_a_block_is_dedented_and_loses_its_trailing_blank_lines():
    selected = "        x = 1\u2029        if x:\u2029            y = 2\u2029\u2029"
    assert code_of_selection(selected) == "x = 1\nif x:\n    y = 2"


def test_run_file_quotes_a_path_with_spaces(tmp_path):
    path = tmp_path / "my scripts" / "it's.py"
    code = run_file_code(path)
    assert code.startswith("%run ")
    if os.name != "nt":
        import shlex

        assert shlex.split(code[len("%run "):]) == [str(path)]


def _project(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "workbench.toml").write_text(toml, encoding="utf-8")
    return tmp_path


def test_without_a_setting_the_console_runs_workbenchs_own_python(tmp_path):
    interpreter = project_interpreter(load_project(_project(tmp_path, "[project]\nname = 'p'\n")))
    assert interpreter.path == Path(sys.executable) and not interpreter.configured


def test_a_relative_interpreter_is_found_in_the_project_folder(tmp_path):
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    interpreter = project_interpreter(load_project(_project(tmp_path, "[python]\ninterpreter = 'env/bin/python'\n")))
    assert interpreter.path == python and interpreter.configured


def test_a_missing_interpreter_names_the_setting_and_the_fix(tmp_path):
    project = load_project(_project(tmp_path, "[python]\ninterpreter = 'env/bin/python'\n"))
    with pytest.raises(ConsoleError) as error:
        project_interpreter(project)
    message = str(error.value)
    assert str(tmp_path / "env" / "bin" / "python") in message and "does not exist" in message
    assert "[python] interpreter" in message and "workbench.toml" in message and sys.executable in message


def test_an_interpreter_of_the_wrong_type_is_refused(tmp_path):
    with pytest.raises(ConsoleError, match="must be a string"):
        project_interpreter(load_project(_project(tmp_path, "[python]\ninterpreter = 3\n")))
