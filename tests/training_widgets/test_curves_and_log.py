"""Live curves follow a metrics file a real child process appends to, and the log links a
traceback to the editor."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from PySide6.QtCore import Qt

from tests.training_widgets.conftest import explode_line, finish, run_state, wait_for
from workbench.training.widgets import panel_of
from workbench.training.widgets.curves import CurvesView
from workbench.training.widgets.run_poller import RunPoller, WatchedRun

WRITER = textwrap.dedent('''\
    import json, sys, time
    path = sys.argv[1]
    with open(path, "a") as out:
        for step in range(1, 41):
            out.write(json.dumps({"step": step, "time": time.time(), "loss": 1 / step, "acc": step / 50}) + "\\n")
            out.flush()
            if step % 10 == 0:
                out.write(json.dumps({"step": step, "epoch": step // 10, "val_loss": 1.5 / step}) + "\\n")
                out.flush()
            time.sleep(0.05)
''')


def test_curves_grow_while_a_child_process_appends_to_the_metrics_file(qtbot, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    curves = CurvesView()
    qtbot.addWidget(curves)
    curves.resize(900, 260)
    curves.show()
    curves.set_runs(["r1"])
    poller = RunPoller(curves)
    # Kept as they come, on the poller's thread, and drawn here: a lambda slot runs on the emitting thread.
    read = []
    poller.sig_metrics_read.connect(lambda g, run_id, records, restarted: read.append((run_id, records)))
    poller.watch([WatchedRun("r1", metrics)])
    drawn = []

    def plotted(name: str) -> int:
        for run_id, records in read[len(drawn):]:
            drawn.append(run_id)
            curves.add_records(run_id, records)
        return curves.plotted("r1", name)

    child = subprocess.Popen([sys.executable, "-c", WRITER, str(metrics)])
    try:
        wait_for(qtbot, lambda: 0 < plotted("loss") < 40, timeout=10_000)
        seen_while_running = curves.plotted("r1", "loss")
        wait_for(qtbot, lambda: plotted("loss") == 40, timeout=15_000)
    finally:
        child.wait(timeout=20)
        poller.stop()
    assert seen_while_running < 40  # points arrived while the file was still being written
    assert curves.plotted("r1", "val_loss") == 4
    assert curves.plotted("r1", "acc") == 40
    steps, values = curves.points("r1", "loss")
    assert steps[:3] == [1.0, 2.0, 3.0] and values[0] == 1.0
    assert curves.legend_labels("loss") == ["loss", "val_loss"]
    # An accuracy from 0 to 1 is labelled as it is, not "200-800 (x0.001)".
    accuracy_axis = curves._plot_widgets["acc"].getPlotItem().getAxis("left")
    assert accuracy_axis.autoSIPrefixScale == 1.0 and "x0.001" not in accuracy_axis.labelString()


def test_clicking_a_traceback_line_in_the_log_opens_the_editor_at_that_line(qtbot, open_window, toy_project):
    window = open_window(toy_project)
    info = finish(qtbot, window.commands.execute("training.trainLocally", overrides=["fail=true"]))
    panel = panel_of(window)
    wait_for(qtbot, lambda: run_state(window, info.id) == "failed")
    assert panel.selected_runs() == [info.id]
    assert panel.details.tabs.currentWidget() is panel.details.log  # a failed run shows its log first
    text = panel.details.log.text
    wait_for(qtbot, lambda: "the model diverged" in text.toPlainText())
    assert "the model diverged" in panel.details.header.text()  # the error line heads the details

    document = text.document()
    frames = [document.findBlockByNumber(i) for i in range(document.blockCount())
              if 'train.py", line' in document.findBlockByNumber(i).text()]
    block = frames[-1]  # the innermost frame: the raise
    column = block.text().index("train.py")
    cursor = text.textCursor()
    cursor.setPosition(block.position() + column + 2)
    text.ensureCursorVisible()
    point = text.cursorRect(cursor).center()
    window.open_file(toy_project / "toy.hparams")  # something else in front first
    qtbot.mouseClick(text.viewport(), Qt.MouseButton.LeftButton, pos=point)
    editor = window.current_editor()
    assert editor.path == (toy_project / "train.py").resolve()
    assert editor.cursor_position()[0] == explode_line()


def test_the_log_follows_new_output_until_the_user_scrolls_up(qtbot):
    from workbench.training.widgets.log_view import LogView

    view = LogView()
    qtbot.addWidget(view)
    view.resize(400, 200)
    view.show()
    view.append("".join(f"line {i}\n" for i in range(200)))
    bar = view.text.verticalScrollBar()
    wait_for(qtbot, lambda: bar.value() == bar.maximum() > 0)
    bar.setValue(0)
    assert not view.follow.isChecked()
    view.append("more\n")
    assert bar.value() == 0
    view.follow.setChecked(True)
    assert bar.value() == bar.maximum()


def test_the_log_view_shows_a_cluster_runs_notes_where_they_came_and_workbenchs_own_as_notes(qtbot, tmp_path):
    from workbench.training.widgets.log_view import NOTE_COLOUR, STDERR_COLOUR, LogView

    (tmp_path / "metrics.jsonl").touch()
    (tmp_path / "stdout.log").write_text("step=1\nstopped at step 1\nresumed\nstep=2\n")
    (tmp_path / "stderr.log").write_text("workbench: job step 7.0 stopped on request       \nTraceback\n")
    stderr = (tmp_path / "stderr.log").read_text()
    first = len("step=1\nstopped at step 1\n")
    (tmp_path / "log-order").write_text(f"stdout {first}\nstderr {stderr.index('Traceback')}\n")
    view = LogView()
    qtbot.addWidget(view)
    poller = RunPoller(view)
    read = []  # kept as they come (on the poller's thread, maybe before watch() returns) and shown here
    poller.sig_log_read.connect(lambda g, run_id, stream, text: read.append((g, stream, text)))
    generation = poller.watch([WatchedRun("r1", tmp_path / "metrics.jsonl", tmp_path)])
    shown = []

    def show_read() -> str:
        for g, stream, text in read[len(shown):]:
            shown.append(g)
            if g == generation:
                view.append(text, stream)
        return view.text.toPlainText()

    try:
        wait_for(qtbot, lambda: "Traceback" in show_read())
    finally:
        poller.stop()
    lines = view.text.toPlainText().splitlines()
    assert [line.rstrip() for line in lines] == ["step=1", "stopped at step 1", "workbench: job step 7.0 stopped "
                                                 "on request", "resumed", "step=2", "Traceback"]
    document = view.text.document()

    def colour(line: int) -> str:
        return document.findBlockByNumber(line).begin().fragment().charFormat().foreground().color().name()

    assert colour(2) == NOTE_COLOUR and colour(5) == STDERR_COLOUR
