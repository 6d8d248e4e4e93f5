"""Run on Device in a project window, on a real agent: from the Explorer's menu of a script and
from the editor (its unsaved text), the script's output shows in the Devices dock's Script tab
while it runs, Stop stops it on the device, and a missing device is one line in the banner."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtGui import QColor

from tests.waiting import pid_alive
from workbench.device.widgets import panel_of
from workbench.device.widgets.script_run import STDERR_COLOR, ScriptView

from .conftest import TIMEOUT_MS, screenshot

SHOTS = Path("/tmp/ide-shots")


def _view(window) -> ScriptView:
    return window.findChild(ScriptView, "device-script-view")


def _menu_ids(window, path: Path) -> dict:
    return {a.objectName(): a for a in window.tree.context_menu_for(path).actions()}


def test_a_script_from_the_explorer_streams_its_output_into_the_script_tab(
        paired_window, digits_project, qtbot, tmp_path):
    go = tmp_path / "go"
    script = digits_project / "checks" / "probe.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f'''
import os, sys, time
print("ready", flush=True)
deadline = time.time() + 60
while not os.path.exists({str(go)!r}):
    if time.time() > deadline:
        sys.exit("the first line never showed")
    time.sleep(0.02)
print("warning: low battery", file=sys.stderr)
print('{{"checked": 3}}')
''')
    _phone, window, panel, _session = paired_window(digits_project)
    view = _view(window)
    assert "device.runScript" not in _menu_ids(window, digits_project / "workbench.toml")
    _menu_ids(window, script)["device.runScript"].trigger()

    assert panel.tabs.currentWidget() is view
    assert view.heading.text() == "probe.py on Bench Phone"
    qtbot.waitUntil(lambda: "ready" in view.text(), timeout=TIMEOUT_MS)
    assert view.running and view.stop_button.isEnabled()  # shown while it still runs
    go.touch()
    qtbot.waitUntil(lambda: not view.running, timeout=TIMEOUT_MS)
    # Each stream keeps its order (the two are read apart, so not their order between them).
    lines = view.text().splitlines()
    assert sorted(lines) == sorted(["ready", "warning: low battery", '{"checked": 3}'])
    assert lines.index("ready") < lines.index('{"checked": 3}')
    assert "probe.py on Bench Phone exited with 0 in" in view.ending.text()
    assert 'result: {"checked": 3}' in view.ending.text()
    assert _color_of(view, "warning") == STDERR_COLOR and _color_of(view, "ready") != STDERR_COLOR
    assert not view.stop_button.isEnabled() and not panel.banner.isVisible()
    assert panel.status.text() == "Ran probe.py on Bench Phone"
    SHOTS.mkdir(parents=True, exist_ok=True)
    screenshot(panel, "device-run-on-device")
    panel.grab().save(str(SHOTS / "device-run-on-device.png"))


def _color_of(view: ScriptView, text: str) -> QColor:
    document = view.output.document()
    cursor = document.find(text)
    assert not cursor.isNull(), text
    return cursor.charFormat().foreground().color()


def test_the_editors_unsaved_text_runs_from_the_palette(paired_window, digits_project, qtbot):
    script = digits_project / "checks" / "edited.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text("print('saved version')\n")
    _phone, window, panel, _session = paired_window(digits_project)
    tab = window.open_file(script)
    tab.insert_text("print('typed, not saved')\n")
    assert tab.is_modified()
    assert window.commands.execute("device.runScript") is True
    view = _view(window)
    qtbot.waitUntil(lambda: not view.running, timeout=TIMEOUT_MS)
    assert "typed, not saved" in view.text()
    assert script.read_text() == "print('saved version')\n"  # nothing was saved for it


def test_stop_ends_the_script_on_the_device(paired_window, digits_project, qtbot, tmp_path):
    pid_file = tmp_path / "pid"
    script = digits_project / "checks" / "forever.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(f'''
import os, time
open({str(pid_file)!r}, "w").write(str(os.getpid()))
print("running", flush=True)
time.sleep(600)
''')
    _phone, window, panel, session = paired_window(digits_project)
    window.commands.execute("device.runScript", path=script)
    view = _view(window)
    qtbot.waitUntil(lambda: "running" in view.text(), timeout=TIMEOUT_MS)
    pid = int(pid_file.read_text())
    view.stop_button.click()
    assert not view.running and view.ending.text() == "Stopped"
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        assert time.monotonic() < deadline, "the script went on running on the device"
        qtbot.wait(50)


def test_without_a_device_run_on_device_says_what_to_do(device_window, digits_project, qtbot):
    script = digits_project / "checks" / "lonely.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text("print(1)\n")
    window = device_window(digits_project)
    panel = panel_of(window)
    assert window.commands.execute("device.runScript", path=script) is False
    assert panel.banner.isVisible()
    assert panel.banner.text().startswith("Select a device in the list first")
    window.open_file(digits_project / "workbench.toml")  # the editor's file is no script
    assert window.commands.execute("device.runScript") is False
    assert "Open a Python script" in panel.banner.text()
