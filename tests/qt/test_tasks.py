import threading

from workbench.qt.tasks import TaskRunner
from workbench.tasks import Progress


def test_a_result_comes_back_on_the_gui_thread(qtbot):
    runner = TaskRunner()
    results = []
    runner.run("sum", lambda a, b: (a + b, threading.current_thread().name), 2, 3, on_done=results.append)
    qtbot.waitUntil(lambda: bool(results))
    assert results[0][0] == 5 and results[0][1] != threading.current_thread().name


def test_a_newer_call_of_the_same_key_drops_the_older_result(qtbot):
    runner = TaskRunner()
    release = threading.Event()
    results = []

    def slow(cancel):
        release.wait(5)
        return "old"

    runner.run("status", slow, on_done=results.append)
    runner.run("status", lambda: "new", on_done=results.append)
    qtbot.waitUntil(lambda: results == ["new"])
    release.set()
    runner.wait(5000)
    qtbot.wait(50)
    assert results == ["new"]


def test_errors_and_progress_reach_the_gui(qtbot):
    runner = TaskRunner()
    errors, lines = [], []
    runner.sig_progress.connect(lines.append)

    def pushes(progress):
        progress(Progress("Writing objects 50%", 0.5))
        raise ValueError("rejected")

    with qtbot.waitSignal(runner.sig_busy_changed) as busy:
        runner.run("push", pushes, on_error=errors.append, title="Pushing")
    assert busy.args == [True]
    qtbot.waitUntil(lambda: bool(errors))
    assert str(errors[0]) == "rejected"
    assert "Pushing: Writing objects 50%" in lines


def _streaming(release: threading.Event):
    def stream(cancel):
        while not (release.is_set() or cancel.cancelled):
            release.wait(0.05)

    return stream


def _benchmarking(progress):
    progress(Progress("Benchmarking here: 50 runs", 0.5))
    return "done"


def test_a_finished_call_leaves_no_status_line_while_a_stream_without_one_runs(qtbot):
    runner = TaskRunner()
    lines, results = [], []
    runner.sig_progress.connect(lines.append)
    release = threading.Event()
    runner.run("device.logs", _streaming(release))
    try:
        runner.run("device.verify", _benchmarking, on_done=results.append, title="Verifying")
        qtbot.waitUntil(lambda: results == ["done"])
        assert "Verifying: Benchmarking here: 50 runs" in lines
        assert runner.is_running("device.logs")
        assert lines[-1] == "" and runner.progress_line() == ""
    finally:
        release.set()
        runner.wait(5000)


def test_the_status_line_goes_back_to_a_call_still_running_when_a_later_one_ends(qtbot):
    runner = TaskRunner()
    lines, results = [], []
    runner.sig_progress.connect(lines.append)
    release = threading.Event()
    runner.run("device.logs", _streaming(release), title="Following the log")
    try:
        runner.run("device.verify", _benchmarking, on_done=results.append, title="Verifying")
        qtbot.waitUntil(lambda: results == ["done"])
        assert lines[-1] == "Following the log" == runner.progress_line()

        runner.run("device.push", _streaming(release), title="Pushing")
        assert lines[-1] == "Pushing"
        runner.cancel("device.push")
        assert lines[-1] == "Following the log"
        runner.cancel("device.logs")
        assert lines[-1] == "" and runner.progress_line() == ""
    finally:
        release.set()
        runner.wait(5000)
