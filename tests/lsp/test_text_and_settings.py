"""The Qt-free arithmetic and settings under the language server: what changed between two
texts, applying edits, the project's line length and interpreter, the server's settings,
when typing asks for completions, and how problems become underlines."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from workbench.lsp.config import DEFAULT_MAX_LINE_LENGTH, server_config
from workbench.lsp.editor_answers import editor_diagnostics, name_at, worth_asking
from workbench.lsp.files import apply_to_disk, is_installed_file
from workbench.lsp.results import FileEdit, Problem, Signature, Span, TextEdit
from workbench.lsp.text_sync import apply_edits, line_edits, offset_of, position_of, text_change


def replay(old: str, change) -> str:
    start = offset_of(old, change.line, change.column)
    end = offset_of(old, change.end_line, change.end_column)
    return old[:start] + change.text + old[end:]


def test_the_change_between_two_texts_replays_to_the_new_one():
    generator = random.Random(7)
    alphabet = "ab \n_(é😀"
    for _ in range(500):
        old = "".join(generator.choice(alphabet) for _ in range(generator.randint(0, 40)))
        new = list(old)
        for _ in range(generator.randint(1, 3)):
            at = generator.randint(0, len(new))
            del new[at:at + generator.randint(0, 3)]
            new[at:at] = generator.choice(alphabet) * generator.randint(0, 2)
        new = "".join(new)
        change = text_change(old, new)
        assert (change is None) == (old == new)
        if change is not None:
            assert replay(old, change) == new, (old, new, change)


def test_a_keystroke_is_one_small_change():
    old = "import torch\nnet = build(8)\n"
    change = text_change(old, old.replace("build(8)", "build(16)"))
    assert (change.line, change.column, change.end_line, change.end_column, change.text) == (1, 12, 1, 13, "16")
    assert position_of(old, len(old)) == (2, 0)


def test_edits_apply_from_the_end_and_overlapping_ones_are_refused():
    text = "a = 1\nb = 2\n"
    edits = [TextEdit(Span(1, 0, 1, 1), "alpha"), TextEdit(Span(2, 0, 2, 1), "beta")]
    assert apply_edits(text, edits) == "alpha = 1\nbeta = 2\n"
    assert apply_edits(text, [TextEdit(Span(1, 0, 3, 0), "whole\n")]) == "whole\n"  # a formatter's answer
    with pytest.raises(ValueError):
        apply_edits(text, [TextEdit(Span(1, 0, 1, 3), "x"), TextEdit(Span(1, 2, 1, 4), "y")])


def test_line_edits_touch_only_the_lines_that_differ():
    old = "one\ntwo\nthree\nfour\n"
    new = "one\nTWO\nthree\nfour\nfive\n"
    edits = line_edits(old, new)
    assert [edit.span.line for edit in edits] == [2, 5]
    assert apply_edits(old, edits) == new


def test_the_line_length_comes_from_the_project_else_100(tmp_path):
    assert server_config(tmp_path, {}).max_line_length == DEFAULT_MAX_LINE_LENGTH == 100
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 88\n")
    assert server_config(tmp_path, {}).max_line_length == 88
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 110\n")
    assert server_config(tmp_path, {}).max_line_length == 110
    assert server_config(tmp_path, {"lsp": {"max_line_length": 120}}).max_line_length == 120
    config = server_config(tmp_path, {"lsp": {"max_line_length": "long"}})
    assert config.max_line_length == 110 and "positive whole number" in config.problems[0]
    plugins = server_config(tmp_path, {}).server_settings()["pylsp"]["plugins"]
    assert plugins["pycodestyle"] == {"enabled": True, "maxLineLength": 110}
    assert plugins["pyflakes"]["enabled"] and plugins["autopep8"]["enabled"]
    assert not plugins["flake8"]["enabled"] and not plugins["pylint"]["enabled"] and not plugins["yapf"]["enabled"]


def test_jedi_gets_the_project_interpreter_and_a_missing_one_is_a_problem(tmp_path):
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    os.chmod(python, 0o755)
    config = server_config(tmp_path, {"python": {"interpreter": "env/bin/python"}})
    assert config.python == str(python) and config.problems == ()
    assert config.server_settings()["pylsp"]["plugins"]["jedi"] == {"environment": str(python)}
    config = server_config(tmp_path, {"training": {"python": "missing/bin/python"}})
    assert config.python is None and "[training] python" in config.problems[0]
    assert server_config(tmp_path, {}).server_settings()["pylsp"]["plugins"]["jedi"] == {}
    assert server_config(tmp_path, {"lsp": {"command": ["pylsp", "--verbose"]}}).command == ("pylsp", "--verbose")
    assert "list of strings" in server_config(tmp_path, {"lsp": {"command": 3}}).problems[0]


def test_typing_asks_after_a_dot_or_two_letters_outside_comments_and_strings():
    assert worth_asking("x = nn.", 7, explicit=False)
    assert worth_asking("x = bu", 6, explicit=False)
    assert not worth_asking("x = b", 5, explicit=False)
    assert not worth_asking("x = 12", 6, explicit=False)
    assert not worth_asking("# see nn.", 9, explicit=False)
    assert not worth_asking("s = 'nn.", 8, explicit=False)
    assert worth_asking("s = 'a' + nn.", 13, explicit=False)
    assert worth_asking("", 0, explicit=True)
    assert name_at("net = build(8)", 8) == (6, 11) and name_at("x = (", 5) is None


def test_problems_underline_the_name_they_quote_and_noqa_silences_them():
    path = Path("train.py")
    lines = {1: "import data  # noqa: F401  registers", 2: "print(hed)", 3: "x = 1  # noqa: E501"}
    problems = [Problem(path, Span(1, 0, 1, 11), "'data' imported but unused", "warning", "pyflakes"),
                Problem(path, Span(2, 6, 2, 10), "undefined name 'hed'", "error", "pyflakes"),
                Problem(path, Span(3, 0, 3, 5), "'x' imported but unused", "warning", "pyflakes"),
                Problem(path, Span(3, 0, 4, 2), "W291 trailing whitespace", "information", "pycodestyle", "W291")]
    found = editor_diagnostics(problems, lambda line: lines.get(line, ""))
    assert [(d.line, d.start, d.end, d.severity, d.source) for d in found] == [
        (2, 6, 9, "error", "pyflakes"), (3, 0, 1, "warning", "pyflakes"), (3, 0, 1 << 30, "warning", "pycodestyle")]


def test_a_parameter_is_found_as_a_whole_name_in_the_signature():
    signature = Signature("Conv2d(in_channels: int, channels: int)", ("in_channels", "channels"))
    start, end = signature.parameter_span(1)
    assert signature.label[start - 2:end] == ", channels"
    assert signature.parameter_span(2) is None


def test_edits_to_files_on_disk_keep_their_line_endings_and_can_be_undone(tmp_path):
    path = tmp_path / "shapes.py"
    path.write_bytes(b"def area(w, h):\r\n    return w * h\r\n")
    change = apply_to_disk([FileEdit(path, (TextEdit(Span(1, 4, 1, 8), "surface"),))])
    assert path.read_bytes() == b"def surface(w, h):\r\n    return w * h\r\n"
    assert change.undo() == []
    assert path.read_bytes() == b"def area(w, h):\r\n    return w * h\r\n"
    missing = FileEdit(tmp_path / "gone.py", (TextEdit(Span(1, 0, 1, 1), "x"),))
    with pytest.raises(Exception, match="Nothing was changed"):
        apply_to_disk([FileEdit(path, (TextEdit(Span(1, 4, 1, 8), "surface"),)), missing])
    assert path.read_bytes() == b"def area(w, h):\r\n    return w * h\r\n"


def test_files_of_installed_packages_are_told_apart_from_the_project(tmp_path):
    import importlib.util

    assert is_installed_file(importlib.util.find_spec("torch").origin, tmp_path)
    assert is_installed_file(os.__file__, tmp_path)
    assert not is_installed_file(tmp_path / "train.py", tmp_path)
    assert is_installed_file(tmp_path / ".venv" / "lib" / "site-packages" / "x.py", tmp_path)
