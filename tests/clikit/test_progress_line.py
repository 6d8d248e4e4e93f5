"""The progress line every command shows: redrawn in place on a terminal with the log above it,
one line per stage in a pipe, sparse lines for a stage that counts its way."""

from __future__ import annotations

import io

from workbench.clikit import PROGRESS_EVERY_S, ProgressLine
from workbench.tasks import Progress


def test_on_a_terminal_a_report_redraws_one_line_with_its_bar_and_percentage():
    screen = io.StringIO()
    line = ProgressLine(screen, interactive=True)
    line(Progress("Pushing digits.onnx to Phone: 0 B of 8 MB", 0.0))
    line(Progress("Pushing digits.onnx to Phone: 4 MB of 8 MB", 0.5))
    line(Progress("Pushing digits.onnx to Phone: 4 MB of 8 MB", 0.5))  # nothing new: not drawn again
    line.log("the device has room")
    line(Progress("Loading digits.onnx on Phone…"))  # a new stage, of no known length: no bar
    line.close()
    assert screen.getvalue().split("\r")[1:] == [
        "Pushing digits.onnx to Phone: 0 B of 8 MB [--------------------]   0%\x1b[K",
        "Pushing digits.onnx to Phone: 4 MB of 8 MB [##########----------]  50%\x1b[K",
        "\x1b[Kthe device has room\n",
        "Pushing digits.onnx to Phone: 4 MB of 8 MB [##########----------]  50%\x1b[K",
        "Loading digits.onnx on Phone…\x1b[K",
        "\x1b[K"]


def test_in_a_pipe_each_stage_is_one_line_and_the_log_follows_it():
    log = io.StringIO()
    line = ProgressLine(log, interactive=False)
    for index, name in enumerate(("Reading", "Counting", "Checking")):
        line.begin(name, index, 3)
        line.update(0.5)
        line.update(1.0)
        if name == "Counting":
            line.log("step 1 of 2")
    line.close()
    assert log.getvalue() == "[1/3] Reading\n[2/3] Counting\nstep 1 of 2\n[3/3] Checking\n"


def test_a_stage_that_counts_its_way_prints_a_line_each_quarter_or_every_few_seconds_in_a_pipe():
    now = [0.0]
    log = io.StringIO()
    line = ProgressLine(log, interactive=False, clock=lambda: now[0])
    for done in range(0, 41):  # 40 MB, one report a megabyte, a tenth of a second apart
        line(Progress(f"Uploading the code: {done} MB of 40 MB", done / 40))
        now[0] += 0.1
    assert [text.split(": ")[1] for text in log.getvalue().splitlines()] == [
        "0 MB of 40 MB", "10 MB of 40 MB", "20 MB of 40 MB", "30 MB of 40 MB", "40 MB of 40 MB"]
    log.truncate(0)
    log.seek(0)
    for done in range(0, 12):  # a slow link: the time says when, not the quarters
        line(Progress(f"Syncing data: {done} MB of 100 MB", done / 100))
        now[0] += PROGRESS_EVERY_S / 5
    assert [text.split(": ")[1] for text in log.getvalue().splitlines()] == [
        "0 MB of 100 MB", "5 MB of 100 MB", "10 MB of 100 MB"]


def test_a_line_longer_than_the_terminal_is_cut_so_it_can_be_redrawn(monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")
    screen = io.StringIO()
    line = ProgressLine(screen, interactive=True)
    line(Progress("Syncing data: 1 of 9 files, 10 MB of 90 MB", 0.1))
    assert screen.getvalue() == "\r" + "Syncing data: 1 of 9 files, 10 MB of 90 MB"[:29] + "\x1b[K"



def test_the_command_lines_of_the_capabilities_keep_no_terminal_or_ctrl_c_code_of_their_own():
    """Progress lines, Ctrl+C handlers and terminal checks live in the kit only, so that every
    command shows and stops the same way."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "workbench"
    own_copies = [f"{path.relative_to(package)}: {pattern}" for path in sorted(package.rglob("cli.py"))
                  for pattern in ("signal.signal(", "\\x1b[K", ".isatty() and", "TERM")
                  if pattern in path.read_text(encoding="utf-8")]
    assert own_copies == []
