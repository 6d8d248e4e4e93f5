"""Debug sessions of real programs under real debugpy: stops, values, steps, breakpoint kinds,
the debug console, and the ways a session can end badly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.debug.conftest import (
    LINE_CALL,
    LINE_COMMENT,
    LINE_LOOP,
    LINE_PRINT,
    LINE_RETURN_Y,
    LINE_SQUARE_BODY,
    LINE_TOTAL,
    LINE_VALUES,
    Recorder,
)
from tests.waiting import wait_until
from workbench.debug import (
    ArraySummary,
    AttachConfig,
    Breakpoint,
    DebugError,
    DebugSession,
    script_launch,
    start_debug_session,
)
from workbench.debug.streams import connect

pytestmark = pytest.mark.slow


def locals_of(session, frame_id):
    scope = next(s for s in session.scopes(frame_id) if s.name == "Locals")
    return {v.name: v for v in session.variables(scope.reference, frame_id)}


def started(script, breakpoints, recorder=None):
    config = script_launch(script)
    session = DebugSession(config, [Breakpoint(str(config.program), line, **options)
                                    for line, options in breakpoints], recorder or Recorder())
    session.start()
    return session


def test_a_breakpoint_on_line_10_stops_there_with_the_locals_and_an_arrays_summary(sample):
    with start_debug_session(sample, [LINE_VALUES]) as stop:
        assert stop.event.reason == "breakpoint"
        assert (stop.event.top.path, stop.event.top.line, stop.event.top.name) == (str(sample), LINE_VALUES, "main")
        session = stop.session
        session.step_over()
        frame = session.next_stop(30).top
        assert frame.line == LINE_TOTAL
        values = locals_of(session, frame.id)["values"]
        assert values.type == "ndarray"
        assert values.summary == ArraySummary(shape=(3, 4), dtype="float32", device="cpu", size=12,
                                              min=0.0, max=11.0, mean=5.5)
        assert values.display_value().startswith("float32 [3, 4] cpu  min 0  max 11  mean 5.5")
        assert "[ 8.  9. 10. 11.]" in session.values_text("values", frame.id)  # the values on demand


def test_step_over_into_and_out_follow_the_code(sample):
    session = started(sample, [(LINE_CALL, {})])
    try:
        assert session.next_stop(30).top.line == LINE_CALL
        session.step_into()
        inside = session.next_stop(30).top
        assert (inside.name, inside.line) == ("square", LINE_SQUARE_BODY)
        session.step_over()
        assert session.next_stop(30).top.line == LINE_RETURN_Y
        session.step_out()
        back = session.next_stop(30).top
        assert back.name == "main" and back.line == LINE_CALL
        assert session.evaluate("i", back.id).variable.value == "0"
        session.step_over()
        assert session.next_stop(30).top.line in (LINE_LOOP, LINE_CALL)
    finally:
        session.close()


def test_conditions_hit_counts_and_log_points(sample):
    recorder = Recorder()
    session = started(sample, [(LINE_SQUARE_BODY, {"condition": "x == 3"}),
                               (LINE_CALL, {"hit_condition": "2"}),
                               (LINE_PRINT, {"log_message": "total is {total} after {i + 1} calls"})], recorder)
    try:
        first = session.next_stop(30)
        assert first.top.line == LINE_CALL
        assert session.evaluate("i", first.top.id).variable.value == "1"  # the 2nd hit, not the 1st
        session.resume()
        second = session.next_stop(30)
        assert second.top.name == "square"
        assert session.evaluate("x", second.top.id).variable.value == "3"
        session.resume()
        end = session.wait_ended(30)
        assert end is not None and end.exit_code == 0 and not end.error
        wait_until(lambda: "total is 30 after 5 calls" in recorder.text(), 10, what="the log point's line")
        # The log point's line and the program's print reach the console by two paths, so the
        # log line can land between the print's pieces ("total", " 30"); take it out to read them.
        wait_until(lambda: "total 30" in recorder.text().replace("total is 30 after 5 calls\n", ""), 10,
                   what="the program's own line")
    finally:
        session.close()


def test_the_debug_console_evaluates_in_the_stopped_frame_and_reports_errors(sample):
    with start_debug_session(sample, [LINE_SQUARE_BODY]) as stop:
        frame = stop.event.top.id
        assert stop.session.evaluate("x + 40", frame).variable.value == "40"
        result = stop.session.evaluate("np.ones((2, 5)) * x", frame).variable
        assert isinstance(result.summary, ArraySummary) and result.summary.shape == (2, 5)
        outer = stop.event.frames[1]
        assert outer.name == "main"
        assert stop.session.evaluate("total", outer.id).variable.value == "0"
        with pytest.raises(DebugError, match="NameError"):
            stop.session.evaluate("no_such_name", frame)


def test_a_breakpoint_on_a_comment_line_is_reported_moved_or_unverified(sample, tmp_path):
    recorder = Recorder()
    beyond = len(sample.read_text().splitlines()) + 30
    session = started(sample, [(LINE_COMMENT, {}), (beyond, {}), (LINE_PRINT, {})], recorder)
    try:
        results = {r.requested_line: r for r in recorder.breakpoints[str(sample)]}
        comment = results[LINE_COMMENT]
        assert comment.moved or not comment.verified
        assert f"line {LINE_COMMENT}" in comment.message.lower() or f"Line {LINE_COMMENT}" in comment.message
        assert results[LINE_PRINT].verified and results[LINE_PRINT].message == ""
        assert not results[beyond].verified or results[beyond].moved
        assert results[beyond].message
    finally:
        session.close()


def test_a_program_that_exits_at_once_ends_the_session_with_its_exit_code(tmp_path):
    script = tmp_path / "quits.py"
    # os._exit: a SystemExit would stop on the uncaught exception first, as it should.
    script.write_text("import os, sys\nprint('bye', file=sys.stderr, flush=True)\nos._exit(3)\n")
    recorder = Recorder()
    session = started(script, [], recorder)
    try:
        with pytest.raises(DebugError, match="exited with code 3 before stopping"):
            session.next_stop(30)
        assert recorder.ended.wait(10)
        assert recorder.end.error and recorder.end.exit_code == 3 and "bye" in recorder.end.message
    finally:
        session.close()


def test_a_script_that_is_not_python_is_refused_before_anything_starts(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(DebugError, match="not a Python script"):
        script_launch(tmp_path / "notes.txt")
    with pytest.raises(DebugError, match="does not exist"):
        script_launch(tmp_path / "missing.py")


def test_a_missing_interpreter_fails_the_start_with_one_clear_message(sample, tmp_path):
    config = script_launch(sample, python=str(tmp_path / "no-python"))
    recorder = Recorder()
    session = DebugSession(config, [], recorder)
    with pytest.raises(DebugError, match="Could not start debugging sample.py") as failed:
        session.start(timeout=30)
    assert recorder.end is not None and recorder.end.message == str(failed.value)
    session.close()


def test_an_adapter_killed_mid_session_ends_it_with_one_message_and_stops_the_program(sample):
    recorder = Recorder()
    session = started(sample, [(LINE_VALUES, {})], recorder)
    try:
        session.next_stop(30)
        program = session.program_pid
        assert program is not None
        os.kill(session.adapter.pid, signal.SIGKILL)
        assert recorder.ended.wait(15)
        assert recorder.end.error
        assert "debugger (debugpy's adapter) was killed by SIGKILL" in recorder.end.message
        with pytest.raises(DebugError, match="not being debugged any more"):
            session.threads()
        wait_until(lambda: not _running(program), 15, what="the program to end with its adapter")
    finally:
        session.close()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_attaching_to_a_program_listening_on_a_port_stops_at_its_breakpoints(sample):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    program = subprocess.Popen([sys.executable, "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
                                "--wait-for-client", str(sample)], stderr=subprocess.DEVNULL)

    def connect_when_listening():
        deadline = time.monotonic() + 30
        while True:
            try:
                return connect("127.0.0.1", port)
            except DebugError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    session = DebugSession(AttachConfig(connect_when_listening, name="sample on a port"),
                           [Breakpoint(str(sample), LINE_SQUARE_BODY)])
    try:
        session.start(timeout=30)
        stop = session.next_stop(30)
        assert (stop.top.name, stop.top.line) == ("square", LINE_SQUARE_BODY)
        session.terminate()
        assert session.wait_ended(15) is not None
        assert program.wait(15) is not None
    finally:
        session.close()
        if program.poll() is None:
            program.kill()


TICKING = """import sys, time
import debugpy
debugpy.listen(("127.0.0.1", int(sys.argv[1])))
print("listening", flush=True)
def tick(count):
    return count + 1
count = 0
while True:
    count = tick(count)
    time.sleep(0.02)
"""
LINE_TICK_BODY = 6


def test_an_attach_refused_while_the_last_debugger_holds_the_program_is_tried_again(tmp_path, monkeypatch):
    # A console's kernel is attached to again as soon as the last cell's session let go; the
    # program's adapter may still hold it then.
    import workbench.debug.session as session_module

    script = tmp_path / "ticking.py"
    script.write_text(TICKING, encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    program = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    sessions = []
    try:
        assert program.stdout.readline().strip() == "listening"

        def attached(breakpoints=()):
            session = DebugSession(AttachConfig(lambda: connect("127.0.0.1", port), name="ticking",
                                                keeps_program=True), breakpoints)
            sessions.append(session)
            return session

        first = attached()
        first.start(timeout=30)
        monkeypatch.setattr(session_module, "ATTACH_RETRY_S", 1.0)
        refused = attached()
        with pytest.raises(DebugError, match="another debugger still holds it .*already being debugged"):
            refused.start(timeout=30)

        monkeypatch.setattr(session_module, "ATTACH_RETRY_S", 20.0)
        second = attached([Breakpoint(str(script), LINE_TICK_BODY)])
        threading.Timer(1.5, first.detach, ("let go",)).start()
        second.start(timeout=30)
        stop = second.next_stop(30)
        assert (stop.top.name, stop.top.line) == ("tick", LINE_TICK_BODY)
        assert first.end.message == "let go" and program.poll() is None
    finally:
        for session in sessions:
            session.close()
        program.kill()
        program.wait(10)


def test_attaching_where_nothing_listens_says_how_to_start_the_program():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    session = DebugSession(AttachConfig(lambda: connect("127.0.0.1", port), name="device script"))
    with pytest.raises(DebugError, match=f"Nothing answers at 127.0.0.1:{port}.*debugpy --listen"):
        session.start(timeout=10)
    session.close()


def test_pause_stops_a_busy_program_where_it_is_and_continue_lets_it_go_on(tmp_path):
    script = tmp_path / "busy.py"
    script.write_text("import time\n\n\ndef work():\n    n = 0\n    print('working', flush=True)\n"
                      "    while True:\n        n += 1\n        if n % 10 == 0:\n            print(f'n={n}', flush=True)\n"
                      "        time.sleep(0.01)\n\n\nwork()\n")
    recorder = Recorder()
    session = started(script, [], recorder)
    try:
        wait_until(lambda: "working" in recorder.text(), 30, what="the program to work")
        session.pause()
        stop = session.next_stop(30)
        assert stop.reason == "pause" and stop.top.name == "work"
        first = int(session.evaluate("n", stop.top.id).variable.value)
        session.resume()
        # Paused again once it has counted on (a fixed time may pass without it running at all
        # on a busy machine).
        wait_until(lambda: any(int(word[2:]) > first for word in recorder.text().split()
                                   if word.startswith("n=") and word[2:].isdigit()),
                   30, what="the program to count on")
        session.pause()
        later = session.next_stop(30)
        assert int(session.evaluate("n", later.top.id).variable.value) > first
        with pytest.raises(DebugError, match="Cannot step over: busy.py is running"):
            session.resume().result(30)
            session.step_over().result(30)
    finally:
        session.close()


def test_a_spare_adapter_started_ahead_is_the_one_debug_uses_and_a_dead_one_is_replaced(sample):
    from workbench.debug.adapter import SpareAdapters
    from workbench.debug.launches import script_launch

    spares = SpareAdapters()
    try:
        spares.prepare()
        waiting = spares.waiting()
        assert waiting is not None and waiting.exit_code() is None
        spares.prepare()
        assert spares.waiting() is waiting  # one is enough
        session = DebugSession(script_launch(sample), [Breakpoint(str(sample), LINE_TOTAL)], spares=spares)
        try:
            session.start(timeout=60)
            assert session.adapter is waiting and spares.waiting() is None
            assert session.next_stop(60).top.line == LINE_TOTAL
        finally:
            session.close()

        spares.prepare()
        dead = spares.waiting()
        dead.stop(grace=0)
        dead.process.wait(10)
        replacement = spares.take()
        assert replacement is not dead and replacement.exit_code() is None
        replacement.stop(grace=0)
    finally:
        spares.close()
    spares.prepare()
    assert spares.waiting() is None  # closed: no adapter is left behind
