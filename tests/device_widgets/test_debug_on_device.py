"""Run ▸ Debug on Device in a project window, on a real agent: the editor's breakpoint stops the
script on the device, the Debug dock shows the project's file and the device's variables,
Restart starts the script on the device again, and Stop leaves nothing running there."""

from __future__ import annotations

import time

from tests.waiting import pid_alive
from workbench.debug.widgets import controller_of, panel_of as debug_panel_of
from workbench.device.widgets import panel_of

from .conftest import TIMEOUT_MS

SCRIPT = """import os
open(os.environ["PID_FILE"], "a").write(f"{os.getpid()}\\n")
scores = [0.25, 0.5, 0.75]
best = max(scores)
for index, score in enumerate(scores):
    ratio = score / best
    print(index, ratio, flush=True)
"""
LOOP_LINE = 6

DEBUGGER = ("workbench.debug.widgets:install",)


def test_a_breakpoint_stops_the_script_on_the_device_and_restart_runs_it_again(
        paired_window, digits_project, qtbot, tmp_path):
    pids = tmp_path / "pids"
    # The agent runs on this computer: the script on the device can write where this test reads.
    script = digits_project / "checks" / "verify_on_device.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(SCRIPT.replace('os.environ["PID_FILE"]', repr(str(pids))))
    _phone, window, _panel, _session = paired_window(digits_project, DEBUGGER)
    controller = controller_of(window)
    controller.toggle_breakpoint(str(script.resolve()), LOOP_LINE)

    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS) as stopped:
        assert window.commands.execute("debug.debugOnDevice", path=str(script)) is True
    frame = stopped.args[0].top
    assert (frame.path, frame.line) == (str(script.resolve()), LOOP_LINE)
    assert controller.session.name == "verify_on_device.py on Bench Phone"
    # The editor shows the project's file at the device's line.
    qtbot.waitUntil(lambda: window.current_editor() is not None
                    and window.current_editor().path == script.resolve(), timeout=TIMEOUT_MS)
    dock_panel = debug_panel_of(window)
    qtbot.waitUntil(lambda: {"best", "score"} <= set(dock_panel.variables.loaded_names()),
                    timeout=TIMEOUT_MS)
    first = int(pids.read_text().split()[0])
    assert pid_alive(first)

    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS):
        window.commands.execute("debug.restart")
    pid_lines = pids.read_text().split()
    assert len(pid_lines) == 2  # the device started the script anew
    second = int(pid_lines[1])
    _wait_gone(qtbot, first)

    with qtbot.waitSignal(controller.sig_ended, timeout=TIMEOUT_MS):
        window.commands.execute("debug.stop")
    _wait_gone(qtbot, second)
    assert controller._device_runs == {}  # the link of each run was closed


def _wait_gone(qtbot, pid: int) -> None:
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"the script ({pid}) went on running on the device"
        qtbot.wait(50)


def test_without_a_device_debug_on_device_says_what_to_do(device_window, digits_project, qtbot):
    script = digits_project / "checks" / "lonely.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text("print(1)\n")
    window = device_window(digits_project, DEBUGGER)
    panel = panel_of(window)
    assert window.commands.execute("debug.debugOnDevice", path=str(script)) is False
    assert panel.banner.text().startswith("Select a device in the list first")
    assert controller_of(window).session_state == "idle"
    window.open_file(digits_project / "workbench.toml")
    assert window.commands.execute("debug.debugOnDevice") is False
    assert "to debug it on a device" in panel.banner.text()


def test_an_agent_that_goes_away_mid_debug_ends_the_session_with_one_clear_message(
        paired_window, digits_project, qtbot, tmp_path):
    pids = tmp_path / "pids"
    script = digits_project / "checks" / "verify_on_device.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(SCRIPT.replace('os.environ["PID_FILE"]', repr(str(pids))))
    phone, window, _panel, _session = paired_window(digits_project, DEBUGGER)
    controller = controller_of(window)
    controller.toggle_breakpoint(str(script.resolve()), LOOP_LINE)
    messages = []
    controller.sig_message.connect(messages.append)

    with qtbot.waitSignal(controller.sig_stopped, timeout=TIMEOUT_MS):
        window.commands.execute("debug.debugOnDevice", path=str(script))
    with qtbot.waitSignal(controller.sig_ended, timeout=TIMEOUT_MS) as ended:
        phone.stop()  # the device's agent ends (the phone was unplugged, the board rebooted)
    end = ended.args[0]
    assert end.error and "Bench Phone" in end.message and "dropped during debugging" in end.message
    assert messages == []  # the end says it, once
    assert controller.session_state == "ended" and not controller.active
    _wait_gone(qtbot, int(pids.read_text().split()[0]))
