"""`workbench model …`, as a user types it: subcommands generated from the tools' declarations,
one-line errors, progress on stderr, the report (or --json) on stdout, Ctrl+C."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.modeltools.job_helpers import COUNT, TOOLS, child_tools_path, existing_built_ins
from workbench import extensions
from workbench.cli import cli
from workbench.extensions import Extensions
from workbench.modeltools import Param, ToolSpec, registry
from workbench.clikit import ProgressLine
from workbench.modeltools.cli import JobNews
from tests.terminal import stderr_on_a_terminal

pytestmark = pytest.mark.slow

HEAVY = ("torch", "onnx", "onnxruntime", "onnxscript", "onnxslim", "MNN", "torch_pruning")

ECHO = ToolSpec(name="echo", title="Echo", summary="Say the model's name back.",
                params=(Param("model", "path", "The model.", positional=True, required=True),),
                run="tests.modeltools.job_helpers:run_count")


@pytest.fixture
def tools(monkeypatch, tmp_path):
    """The test tools as the built-in ones (here and in the job processes), and a plugin's tool."""
    monkeypatch.setattr(registry, "BUILT_IN", TOOLS)
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", TOOLS))
    plugins = Extensions()
    plugins._current_plugin = "demo"
    plugins.add_model_tool(ECHO)
    monkeypatch.setattr(extensions, "_loaded", plugins)


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "numbers.txt"
    path.write_text("1 2 3\n")
    return path


def invoke(*args: str):
    return CliRunner().invoke(cli, ["model", *map(str, args)], prog_name="workbench", catch_exceptions=False)


def workbench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def partial_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.partial"))


def test_json_prints_the_report_and_nothing_else_on_stdout(tools, source):
    result = invoke("count", source, "--steps", "2", "--tags", "a, b", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    target = source.with_name("numbers.count.txt")
    assert report["tool"] == "count" and report["figures"]["steps"] == 2
    assert report["outputs"] == [str(target)] and target.read_text() == "a\nb\n1\n2\n"
    assert "[2/3] Counting" in result.stderr
    noisy = invoke("count", source, "--behaviour", "print", "--json")  # a library prints on stdout
    assert noisy.exit_code == 0 and json.loads(noisy.stdout)["tool"] == "count"
    assert "noise written to fd 1 by a C library" in noisy.stderr


def test_the_report_is_printed_as_text_and_progress_as_stage_lines_off_a_terminal(tools, source, tmp_path):
    target = tmp_path / "out" / "counted.txt"
    result = invoke("count", source, "-o", target, "--steps", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Counted 2 steps" and lines[-1] == f"wrote {target}"
    assert [line.split()[0].lower() for line in lines[1:-1]] == ["steps", "niceness"]
    assert result.stderr == ("[1/3] Reading\n[2/3] Counting\nstep 1 of 2\nstep 2 of 2\n[3/3] Checking\n")
    assert target.read_text() == "1\n2\n"


def test_booleans_and_several_paths_take_their_forms(tools, source, tmp_path):
    quiet = invoke("count", source, "--no-verbose", "--steps", "2")
    assert quiet.exit_code == 0 and "step 1 of 2" not in quiet.stderr
    other = tmp_path / "more.txt"
    other.write_text("4 5\n")
    merged = invoke("merge", source, other, "-o", tmp_path / "all.txt")
    assert merged.exit_code == 0, merged.stderr
    assert (tmp_path / "all.txt").read_text() == "1 2 3\n4 5\n"


@pytest.mark.parametrize("args, message", [
    (["--steps", "many"], "workbench: --steps: 'many' is not a whole number"),
    (["--steps", "0"], "workbench: --steps: 0 is below the minimum 1"),
    (["--delay", "soon"], "workbench: --delay: 'soon' is not a number"),
    (["--behaviour", "fial"], "workbench: --behaviour: 'fial' is not one of none, fail, bug, print, "
                              "ignore_cancel, stuck, linger (did you mean fail?)"),
])
def test_a_bad_value_is_one_line_naming_the_flag(tools, source, args, message):
    result = invoke("count", source, *args)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [message]
    assert not source.with_name("numbers.count.txt").exists()


def test_an_error_of_the_tool_is_one_line_without_a_traceback(tools, source):
    result = invoke("count", source, "--behaviour", "fail")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (f"workbench: {source} is not a text file to count; "
                                              "give a .txt file")
    assert "Traceback" not in result.stderr


def test_with_json_an_error_is_one_json_object_on_stdout_and_one_line_on_stderr(tools, source):
    failed = invoke("count", source, "--behaviour", "fail", "--json")
    message = f"{source} is not a text file to count; give a .txt file"
    assert failed.exit_code == 1
    assert json.loads(failed.stdout) == {"error": message, "tool": "count"}
    assert failed.stderr.splitlines()[-1] == f"workbench: {message}"
    bad_value = invoke("count", source, "--steps", "many", "--json")
    assert bad_value.exit_code == 1
    assert json.loads(bad_value.stdout) == {"error": "--steps: 'many' is not a whole number",
                                            "tool": "count"}
    assert bad_value.stderr.splitlines() == ["workbench: --steps: 'many' is not a whole number"]


def test_bare_model_prints_the_groups_help_and_no_error(tools):
    done = workbench("model")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Usage: workbench model [OPTIONS] COMMAND [ARGS]...")
    assert "count" in done.stdout and "(see `" not in done.stdout
    assert done.stdout == workbench("model", "--help").stdout


def test_a_bug_in_a_tool_says_so_in_one_line_and_leaves_its_traceback_in_the_log(tools, source):
    result = invoke("count", source, "--behaviour", "bug")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == ("workbench: the count tool failed unexpectedly: "
                                              "KeyError: 'no such key'; the log has the details")
    assert "Traceback (most recent call last):" in result.stderr


def test_missing_arguments_and_unknown_tools_are_one_line(tools, source):
    missing = workbench("model", "count")
    assert missing.returncode == 2 and missing.stderr.splitlines() == [
        "workbench: Missing argument 'MODEL'. (see `workbench model count --help`)"]
    no_output = workbench("model", "merge", source)
    assert no_output.returncode == 2 and len(no_output.stderr.splitlines()) == 1
    assert "Missing option '-o' / '--output'" in no_output.stderr
    unknown = workbench("model", "cuont", source)
    assert unknown.returncode == 1 and len(unknown.stderr.splitlines()) == 1
    # (installed plugins' tools are listed after the built-in ones)
    assert unknown.stderr.startswith("workbench: There is no model tool 'cuont' (tools: count, merge")
    assert unknown.stderr.endswith("Did you mean count?\n")


def test_project_must_be_a_project(tools, source, tmp_path):
    result = invoke("count", source, "--project", tmp_path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"workbench: {tmp_path} is not a Workbench project (it has no "
                                          "workbench.toml); give the project's folder with --project"]


def test_a_tools_help_shows_its_parameters_with_their_defaults(tools):
    result = invoke("count", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())  # unwrapped
    assert "Usage: workbench model count [OPTIONS] MODEL" in text
    assert "Count steps into a text file." in text and "MODEL The input file." in text
    for fragment in ("-o, --output PATH The text file to write (default: <input>.count.txt beside the input).",
                     "--steps N How many steps to count. [default: 3]",
                     "--behaviour [none|fail|bug|print|ignore_cancel|stuck|linger] How the run goes wrong. [default: none]",
                     "--verbose / --no-verbose Log every step. [default: verbose]",
                     "--tags A,B,... Words to write first.", "--json", "--project PATH"):
        assert fragment in text


def test_model_help_and_list_show_every_tool_plugins_included(tools):
    help_text = " ".join(invoke("--help").stdout.split())
    assert "count Count steps into a text file." in help_text
    assert "merge Concatenate several text files." in help_text
    assert "echo Say the model's name back. (plugin demo)" in help_text
    listed = json.loads(invoke("list", "--json").stdout)
    assert [t["name"] for t in listed] == ["count", "merge", "echo"]
    assert listed[2]["plugin"] == "demo" and listed[0]["params"][0]["name"] == "model"
    assert [p["name"] for p in listed[0]["params"]] == [p.name for p in COUNT.params]
    text = invoke("list").stdout
    assert "echo: Say the model's name back. (plugin demo)" in text
    assert "    MODEL" in text and "-o, --output PATH" in text and "[default: 3]" in text


def test_the_progress_line_on_a_terminal_is_redrawn_in_place_with_the_log_above():
    stream = io.StringIO()
    progress = ProgressLine(stream, interactive=True)
    shown = JobNews(progress)
    for event in ({"event": "stage", "name": "Counting", "index": 1, "count": 4},
                  {"event": "progress", "fraction": 0.5},
                  {"event": "log", "text": "halfway"},
                  {"event": "progress", "fraction": 0.5},  # nothing new: not drawn again
                  {"event": "partial", "path": "/x/.a.1234.onnx.partial"}):
        shown.show(event)
    progress.close()
    written = stream.getvalue()
    assert written.split("\r")[1:] == [
        "[2/4] Counting [#####---------------]  25%\x1b[K",
        "[2/4] Counting [########------------]  38%\x1b[K",
        "\x1b[Khalfway\n",
        "[2/4] Counting [########------------]  38%\x1b[K",
        "\x1b[K"]


def test_on_a_terminal_the_progress_line_is_drawn_on_stderr_and_the_report_on_stdout(tools, source):
    import os

    command, out, text = stderr_on_a_terminal(lambda terminal: subprocess.Popen(
        [sys.executable, "-m", "workbench", "model", "count", str(source), "--steps", "2"],
        stdout=subprocess.PIPE, stderr=terminal, env={**os.environ, "TERM": "xterm"}))
    assert command.returncode == 0 and out.decode().startswith("Counted 2 steps")
    assert "\r[2/3] Counting [##########----------]  50%\x1b[K" in text
    assert "\r\x1b[Kstep 1 of 2" in text and text.endswith("\r\x1b[K")


def test_model_help_loads_no_heavy_library(tmp_path, monkeypatch):
    """Every installed tool's declaration is read, and none of them may start torch or onnx."""
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", existing_built_ins() + TOOLS))
    code = ("import json, sys\n"
            "from workbench.cli import main\n"
            "sys.argv = ['workbench', 'model', '--help']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "count" in done.stdout
    loaded = json.loads(done.stderr.splitlines()[-1])
    assert [name for name in loaded if name.split(".")[0] in HEAVY] == []


def _start_counting(source: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "workbench", "model", "count", str(source), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_until(stream, fragment: str) -> str:
    seen = ""
    while fragment not in seen:
        line = stream.readline()
        assert line, f"the command ended before printing {fragment!r}: {seen}"
        seen += line
    return seen


def test_ctrl_c_cancels_the_tool_and_nothing_is_written(tools, source):
    command = _start_counting(source, "--steps", "100000", "--delay", "0.01")
    _read_until(command.stderr, "step 2 of")
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=60)
    assert command.returncode == 130 and out == ""  # 128 + SIGINT, as shells expect
    assert "Cancelling" in err and err.splitlines()[-1] == "workbench: Cancelled; no output was written."
    assert not source.with_name("numbers.count.txt").exists() and partial_files(source.parent) == []


def test_ctrl_c_with_json_says_cancelled_in_json(tools, source):
    command = _start_counting(source, "--steps", "100000", "--delay", "0.01", "--json")
    _read_until(command.stderr, "step 2 of")
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=60)
    assert command.returncode == 130
    assert json.loads(out) == {"error": "Cancelled; no output was written.", "tool": "count",
                               "cancelled": True}
    assert err.splitlines()[-1] == "workbench: Cancelled; no output was written."


def test_a_second_ctrl_c_stops_a_tool_that_does_not_listen(tools, source):
    command = _start_counting(source, "--behaviour", "stuck")
    _read_until(command.stderr, "stuck in a call")
    command.send_signal(signal.SIGINT)
    _read_until(command.stderr, "Cancelling")
    time.sleep(0.2)
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=60)
    assert command.returncode == 130 and out == ""
    assert err.splitlines()[-1] == "workbench: Cancelled; no output was written."
    assert not source.with_name("numbers.count.txt").exists() and partial_files(source.parent) == []


def tiny_onnx(path: Path) -> Path:
    """A one-layer ONNX model (x @ w + b), built without torch."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(2, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y0"]), helper.make_node("Add", ["y0", "b"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])], [weights, bias])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_inspect_runs_from_the_command_line(monkeypatch, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    built_in = existing_built_ins()
    if "workbench.modeltools.inspect:SPEC" not in built_in:
        pytest.skip("the inspect tool is not in this checkout")
    monkeypatch.setattr(registry, "BUILT_IN", built_in)
    monkeypatch.setenv("PYTHONPATH", child_tools_path(tmp_path / "site", built_in))
    result = invoke("inspect", model, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["tool"] == "inspect" and report["figures"]
    text = invoke("inspect", model)
    assert text.exit_code == 0 and text.stdout.startswith(report["title"])
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(model.read_bytes()[:60])
    failed = invoke("inspect", broken)
    assert failed.exit_code == 1 and failed.stderr.splitlines()[-1].startswith("workbench: ")
    assert "broken.onnx" in failed.stderr.splitlines()[-1] and "Traceback" not in failed.stderr
