"""Run ▸ Debug Cell in Console, in a project window with a real kernel and debugpy: the cell
stops at the file's breakpoint with the file's own line numbers, its variables stay in the
console when it ends, the kernel lives on, and Stop interrupts a cell that would run on."""

from __future__ import annotations

import pytest

from tests.console.conftest import close_window, make_project, open_window, wait_for
from workbench.debug.console_cell import debugcell_line, parse_endpoint
from workbench.debug.errors import DebugError

CELLS = '''import numpy as np

# %% setup
import numpy as np
weights = np.ones((2, 3), dtype=np.float32)

# %% accumulate
total = 0.0
for step in range(4):
    total += float(weights.sum()) * step
done = "accumulated"

# %% forever
import time
spins = 0
while True:
    spins += 1
    time.sleep(0.01)
'''
LINE_LOOP_BODY = 10
LINE_SPIN = 17


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    from workbench.console.widgets import panel_of

    root = make_project(tmp_path_factory.mktemp("cell-debug") / "project")
    (root / "cells.py").write_text(CELLS, encoding="utf-8")
    window = open_window(root, ("workbench.console.widgets:install", "workbench.debug.widgets:install"))
    panel = panel_of(window)
    wait_for(lambda: panel.current() is not None and panel.current().accepts_input(), what="the console")
    yield window
    close_window(window)


def _controller(window):
    from workbench.debug.widgets import controller_of

    return controller_of(window)


def _ended(controller, ends):
    controller.sig_ended.connect(ends.append)
    return ends


def test_a_cell_stops_at_the_files_breakpoint_and_its_variables_stay_in_the_console(window):
    from workbench.console.widgets import panel_of

    controller = _controller(window)
    console = panel_of(window).current()
    kernel_pid = console.kernel.pid
    cells = window.project.root / "cells.py"
    window.open_file(cells)
    controller.toggle_breakpoint(str(cells.resolve()), LINE_LOOP_BODY)
    window.commands.execute("console.execute", code="weights = None")  # until the setup cell runs
    stops, ends = [], _ended(controller, [])
    controller.sig_stopped.connect(stops.append)

    assert window.commands.execute("debug.debugCell", line=3) is True  # the setup cell: no breakpoint
    wait_for(lambda: ends, what="the setup cell to end")
    assert not stops and "ran to its end" in ends[0].message and not ends[0].error
    assert window.commands.execute("debug.debugCell", line=LINE_LOOP_BODY) is True
    wait_for(lambda: stops, what="the stop at the loop")
    top = stops[0].top
    assert (top.path, top.line) == (str(cells.resolve()), LINE_LOOP_BODY)
    assert controller.session.name == "Cell 'accumulate' of cells.py"
    first_frame = controller.session.stack(stops[0].thread_id)[0]
    step = controller.session.evaluate("step", first_frame.id)
    assert step.variable.value == "0"
    controller.remove_breakpoint(str(cells.resolve()), LINE_LOOP_BODY)
    _run_to_end(controller, stops, ends, 2)
    assert "ran to its end" in ends[1].message
    wait_for(lambda: {"total", "done"} <= {v.name for v in console.variables}, what="the cell's variables")
    values = {v.name: v.summary for v in console.variables}
    assert values["total"] == "36.0" and "accumulated" in values["done"]
    assert console.kernel.pid == kernel_pid and console.kernel.is_alive()
    wait_for(console.accepts_input, what="the prompt after the cell")

    window.commands.execute("console.execute", code="del weights")
    stopped_before = len(stops)
    assert window.commands.execute("debug.debugCell", line=LINE_LOOP_BODY) is True
    wait_for(lambda: len(ends) == 3, what="the failing cell to end")
    assert "stopped with an error" in ends[2].message and len(stops) == stopped_before


def _run_to_end(controller, stops, ends, count: int) -> None:
    # The breakpoint's removal reaches the adapter on a worker: a stop may still come before it.
    seen = len(stops)
    controller.resume()
    while len(ends) < count:
        wait_for(lambda: len(ends) >= count or (len(stops) > seen and controller.stopped),
                 what="the cell to end")
        if len(ends) < count:
            seen = len(stops)
            controller.resume()


def test_stop_lets_go_of_the_kernel_and_interrupts_the_cell(window):
    from workbench.console.widgets import panel_of

    controller = _controller(window)
    console = panel_of(window).current()
    kernel_pid = console.kernel.pid
    cells = window.project.root / "cells.py"
    window.open_file(cells)
    controller.toggle_breakpoint(str(cells.resolve()), LINE_SPIN)
    stops, ends, messages = [], _ended(controller, []), []
    controller.sig_stopped.connect(stops.append)
    controller.sig_message.connect(messages.append)

    window.commands.execute("debug.debugCell", line=LINE_SPIN)
    try:
        wait_for(lambda: stops or ends, what="the stop in the endless loop")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the debugger is {controller.session_state}, the console "
                             f"{console.state}, and the dock said {messages}") from None
    assert stops, f"no stop: the session ended ({ends[0].message}); the dock said {messages}"
    controller.remove_breakpoint(str(cells.resolve()), LINE_SPIN)
    window.commands.execute("debug.stop")
    wait_for(lambda: ends, what="the session to end")
    assert ends[0].message.startswith("Stopped debugging")
    wait_for(console.accepts_input, what="the console's prompt after the interrupt")
    assert console.kernel.pid == kernel_pid and console.kernel.is_alive()
    assert "KeyboardInterrupt" in console.widget._control.toPlainText()


def test_the_endpoint_and_the_magics_line_are_read_and_written_as_the_kernel_does(tmp_path):
    assert parse_endpoint("'127.0.0.1:5678'") == ("127.0.0.1", 5678)
    with pytest.raises(DebugError, match="Install it there"):
        parse_endpoint("'error: debugpy cannot be imported (x). Install it there'")
    with pytest.raises(DebugError, match="no debugger address"):
        parse_endpoint("None")
    assert debugcell_line(tmp_path / "a b.py", 3, 9, tmp_path) == "%debugcell 'a b.py' 3 9"
    assert debugcell_line("/elsewhere/x.py", 1, 2, tmp_path) == "%debugcell /elsewhere/x.py 1 2"
