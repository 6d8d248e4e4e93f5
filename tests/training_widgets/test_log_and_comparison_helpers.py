"""The Qt-free helpers of the Runs panel: the incremental log reader, traceback links and what a
comparison lists."""

from __future__ import annotations

from workbench.training.widgets.comparison import differing_hparams, format_value, metric_names
from workbench.training.widgets.log_links import find_links, link_at
from workbench.training.widgets.log_tail import LogTail, RunLogTail


def test_a_log_tail_returns_only_what_was_appended_in_whole_lines(tmp_path):
    path = tmp_path / "stdout.log"
    tail = LogTail(path)
    assert tail.read_new(now=0) == ""  # not created yet
    path.write_bytes(b"one\ntw")
    assert tail.read_new(now=0) == "one\n"
    with open(path, "ab") as handle:
        handle.write(b"o\nthree\n")
    assert tail.read_new(now=0.1) == "two\nthree\n"
    assert tail.read_new(now=0.2) == ""


def test_a_partial_line_shows_after_a_pause_and_utf8_split_across_reads_survives(tmp_path):
    path = tmp_path / "stdout.log"
    text = "épock 1: "
    data = text.encode()
    path.write_bytes(data[:1])  # half of "é"
    tail = LogTail(path)
    assert tail.read_new(now=0) == ""
    with open(path, "ab") as handle:
        handle.write(data[1:])
    assert tail.read_new(now=0.1) == ""
    assert tail.read_new(now=2.0) == "épock 1: \n"  # a prompt with no newline is shown in the end


def test_carriage_returns_keep_what_a_terminal_shows_last(tmp_path):
    path = tmp_path / "stdout.log"
    path.write_bytes(b"10%\r50%\r100%\r\nwindows line\r\n")
    assert LogTail(path).read_new(now=0) == "100%\nwindows line\n"


def test_a_long_log_opened_late_shows_its_end_from_a_whole_line(tmp_path):
    path = tmp_path / "stdout.log"
    path.write_text("".join(f"line {i}\n" for i in range(1000)))
    tail = LogTail(path, first_read_bytes=100)
    text = tail.read_new(now=0)
    assert tail.skipped and text.endswith("line 999\n") and text.startswith("line ")
    assert len(text) <= 100


def test_a_truncated_log_is_read_again_from_the_top(tmp_path):
    path = tmp_path / "stdout.log"
    path.write_text("a long first line\n")
    tail = LogTail(path)
    tail.read_new(now=0)
    path.write_text("new\n")
    assert tail.read_new(now=0) == "new\n"


def test_a_runs_two_logs_are_read_in_the_order_they_came_where_it_was_noted(tmp_path):
    (tmp_path / "stdout.log").write_text("step=1\nstopped at step 1\nresumed\nstep=2\n")
    (tmp_path / "stderr.log").write_text("first note\nsecond note\n")
    first, note, resumed = len("step=1\nstopped at step 1\n"), len("first note\n"), len("resumed\nstep=2\n")
    (tmp_path / "log-order").write_text(f"stdout {first}\nstderr {note}\nstdout {first + resumed}\n")
    tail = RunLogTail(tmp_path)
    assert tail.read_new(now=0) == [("stdout", "step=1\nstopped at step 1\n"), ("stderr", "first note\n"),
                                    ("stdout", "resumed\nstep=2\n"), ("stderr", "second note\n")]
    with open(tmp_path / "stdout.log", "a") as out:
        out.write("step=3\n")
    assert tail.read_new(now=0.1) == [("stdout", "step=3\n")]


def test_without_a_note_of_their_order_a_runs_logs_come_stdout_first(tmp_path):
    (tmp_path / "stdout.log").write_text("step=1\n")
    (tmp_path / "stderr.log").write_text("warning\n")
    assert RunLogTail(tmp_path).read_new(now=0) == [("stdout", "step=1\n"), ("stderr", "warning\n")]


def test_traceback_frames_are_links_and_pseudo_files_are_not():
    line = '  File "/p/train.py", line 42, in main'
    [link] = find_links(line)
    assert (link.path, link.line) == ("/p/train.py", 42)
    assert link_at(line, line.index("train")) == link
    assert link_at(line, line.index("main")) is None
    assert find_links('  File "<frozen runpy>", line 88, in _run_code') == []


def test_a_comparison_lists_only_differing_hyper_parameters():
    rows = differing_hparams([{"learning_rate": 0.01, "num_epochs": 5},
                              {"learning_rate": 0.02, "num_epochs": 5, "seed": 1}])
    assert rows == [("learning_rate", [0.01, 0.02]), ("seed", [None, 1])]
    assert metric_names([{"step": 3, "val_acc": 1.0, "zeta": 2, "loss": 0.1}]) == ["loss", "val_acc", "zeta"]
    assert [format_value(v) for v in (None, True, 0.123456, ["a", 1])] == ["—", "true", "0.1235", "a, 1"]
