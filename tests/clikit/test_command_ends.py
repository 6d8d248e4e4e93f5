"""How every command ends, tried in real child processes: Ctrl+C once (the work stops
gracefully, exit 130) and twice (at once), one-line errors with exit 1, a bug with its
traceback, the --json contract, and the progress line on a real terminal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.terminal import stderr_on_a_terminal

# A command built on the kit alone. --mode says how its work goes: `listens` stops at the token
# the first Ctrl+C cancels; `deaf` never looks at it; `fails` raises a capability's error;
# `bug` raises something else; `progress` draws three stages.
COMMAND = textwrap.dedent("""
    import sys
    import time

    import click

    from workbench.clikit import CtrlC, ProgressLine, emit, reports_errors
    from workbench.tasks import Progress


    def code_of(error):
        return {"code": getattr(error, "code", None)}


    @click.command()
    @click.option("--mode", default="listens")
    @click.option("--json", "as_json", is_flag=True)
    @reports_errors(error_fields=code_of)
    def main(mode, as_json):
        if mode == "fails":
            from workbench.device.errors import DeviceError

            raise DeviceError("Phone A (127.0.0.1:7300) stopped answering; is the agent still running?")
        if mode == "bug":
            {}["no such key"]
        if mode == "progress":
            line = ProgressLine()
            for name in ("Reading", "Counting", "Writing"):
                line(Progress(f"{name}: 0 of 2", 0.0))
                line.log(f"log of {name}")
                line(Progress(f"{name}: 1 of 2", 0.5))
            line.close()
            emit({"done": True}, as_json, "done")
            return
        with CtrlC() as ctrl_c:
            print("ready", file=sys.stderr, flush=True)
            while not ctrl_c.token.cancelled:
                time.sleep(0.01)
            print("stopping", file=sys.stderr, flush=True)
            if mode == "listens":
                ctrl_c.token.raise_if_cancelled()
            while True:  # deaf: only a second Ctrl+C ends it
                time.sleep(0.01)


    main()
""")


def start(*args: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", COMMAND, *args], stdout=subprocess.PIPE,
                            stderr=options.pop("stderr", subprocess.PIPE), text=True, **options)


def wait_for_line(stream, text: str) -> None:
    seen = []
    while True:
        line = stream.readline()
        assert line, f"the command ended before saying {text!r}: {seen}"
        if line.strip() == text:
            return
        seen.append(line)


def test_the_first_ctrl_c_stops_the_work_gracefully_with_exit_status_130():
    command = start()
    wait_for_line(command.stderr, "ready")
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=30)
    assert command.returncode == 130 and out == ""
    assert err.splitlines() == ["stopping", "workbench: cancelled"]


def test_with_json_a_cancel_is_one_json_object_on_stdout():
    command = start("--json")
    wait_for_line(command.stderr, "ready")
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=30)
    assert command.returncode == 130
    assert json.loads(out) == {"error": "cancelled", "cancelled": True}
    assert err.splitlines()[-1] == "workbench: cancelled"


def test_a_second_ctrl_c_stops_work_that_does_not_listen_at_once():
    command = start("--mode", "deaf")
    wait_for_line(command.stderr, "ready")
    command.send_signal(signal.SIGINT)
    wait_for_line(command.stderr, "stopping")
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=30)
    assert command.returncode == 130 and out == ""
    assert err.splitlines() == ["workbench: cancelled"] and "Traceback" not in err


def test_an_error_is_one_line_and_exit_status_1_and_with_json_one_object_with_the_commands_keys():
    message = "Phone A (127.0.0.1:7300) stopped answering; is the agent still running?"
    failed = subprocess.run([sys.executable, "-c", COMMAND, "--mode", "fails"], capture_output=True, text=True,
                            timeout=30)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines() == [f"workbench: {message}"]
    as_json = subprocess.run([sys.executable, "-c", COMMAND, "--mode", "fails", "--json"], capture_output=True,
                             text=True, timeout=30)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {"error": message, "code": ""}
    assert as_json.stderr.splitlines() == [f"workbench: {message}"]


def test_a_bug_keeps_its_traceback():
    bug = subprocess.run([sys.executable, "-c", COMMAND, "--mode", "bug", "--json"], capture_output=True,
                         text=True, timeout=30)
    assert bug.returncode == 1 and bug.stdout == ""
    assert "Traceback (most recent call last):" in bug.stderr
    assert bug.stderr.splitlines()[-1] == "KeyError: 'no such key'"


def test_in_a_pipe_the_progress_is_a_line_per_stage_and_the_result_is_on_stdout():
    done = subprocess.run([sys.executable, "-c", COMMAND, "--mode", "progress"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout == "done\n"
    assert done.stderr.splitlines() == ["Reading: 0 of 2", "log of Reading", "Reading: 1 of 2",
                                        "Counting: 0 of 2", "log of Counting", "Counting: 1 of 2",
                                        "Writing: 0 of 2", "log of Writing", "Writing: 1 of 2"]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_on_a_terminal_the_progress_line_is_redrawn_in_place_and_cleared_before_the_result():
    command, out, text = stderr_on_a_terminal(
        lambda terminal: start("--mode", "progress", stderr=terminal,
                               env={**os.environ, "TERM": "xterm", "COLUMNS": "80"}), timeout=30)
    assert command.returncode == 0 and out == "done\n"
    assert "\rCounting: 0 of 2 [--------------------]   0%\x1b[K" in text
    assert "\r\x1b[Klog of Counting\r\n\rCounting: 0 of 2 [--------------------]   0%\x1b[K" in text
    assert "\rCounting: 1 of 2 [##########----------]  50%\x1b[K" in text
    assert text.endswith("\r\x1b[K") and text.count("\n") == 3  # the three log lines only
