"""The Devices panel after things went wrong and what a person reads there: a device whose agent
came back shows online again once a call on it succeeds, Refresh clears an old message, Pair…
offers the selected device that is not paired yet, a file that is no model is not pushed, and
log and history times read as local times."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt

from workbench.device.link import DeviceLink
from workbench.device.verify import OutputCheck, Verification
from workbench.device.widgets import panel_of

from .conftest import TIMEOUT_MS


def _row(panel, address: str) -> dict | None:
    return next((r for r in panel.device_rows() if r["address"] == address), None)


def test_a_device_back_after_its_agent_restarted_shows_online_once_a_call_on_it_works(
        paired_window, digits_project, qtbot):
    from tests.device.conftest import AgentProcess

    phone, window, panel, session = paired_window(digits_project)
    phone.kill()
    with qtbot.waitSignal(session.sig_devices_listed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.refresh_button, Qt.MouseButton.LeftButton)
    assert _row(panel, phone.address)["status"] == "offline"

    restarted = AgentProcess(phone.data_dir, "Bench Phone", False, "--port", str(phone.port))
    try:
        assert panel.select_device(phone.address)
        with qtbot.waitSignal(session.sig_info, timeout=TIMEOUT_MS):
            qtbot.mouseClick(panel.info_button, Qt.MouseButton.LeftButton)
        # No Refresh pressed: the call that worked is enough, and no pairing is asked for.
        qtbot.waitUntil(lambda: _row(panel, phone.address)["status"] == "online",
                        timeout=TIMEOUT_MS)
        assert not panel.banner.isVisible()
    finally:
        session.close_down()
        window.tasks.wait(TIMEOUT_MS)
        restarted.stop()


def test_refresh_clears_the_message_of_an_earlier_failure(paired_window,
                                                          digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.show_error(f"Bench Phone ({phone.address}) stopped answering (the connection closed); "
                     "is the agent still running?")
    assert panel.banner.isVisible()

    with qtbot.waitSignal(session.sig_devices_listed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.refresh_button, Qt.MouseButton.LeftButton)
    assert not panel.banner.isVisible()
    assert _row(panel, phone.address)["status"] == "online"


def test_pair_offers_the_address_of_the_selected_device_that_is_not_paired(device_window,
                                                                           digits_project):
    window = device_window(digits_project)
    panel = panel_of(window)
    seen = {"name": "Board B", "device_id": "b" * 32, "host": "127.0.0.1", "port": 7302,
            "address": "127.0.0.1:7302", "paired": False, "status": "online", "local": False,
            "note": "seen on the LAN; pair with the code it prints"}
    paired = dict(seen, name="Phone A", device_id="a" * 32, port=7301, address="127.0.0.1:7301",
                  paired=True, note="")
    panel.show_devices({"devices": [paired, seen], "usb": [], "notes": []})

    assert panel.select_device("127.0.0.1:7302")
    panel.pair_button.click()
    assert panel.pair_dialog.address.text() == "127.0.0.1:7302"
    assert panel.pair_dialog.code.text() == ""
    panel.pair_dialog.close()

    assert panel.select_device("127.0.0.1:7301")  # paired already: nothing to offer
    panel.pair_button.click()
    assert panel.pair_dialog.address.text() == ""
    panel.pair_dialog.close()


def test_push_of_a_file_that_is_no_model_says_so_and_sends_nothing(paired_window,
                                                                   digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    notes = digits_project / "notes.onnx"
    notes.write_text("not a model\n")
    panel.set_model(notes)
    assert panel.select_device(phone.address)

    with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.push_button, Qt.MouseButton.LeftButton)
    assert "is not a model file: it is a text file" in panel.banner.text()
    with DeviceLink.open(phone.address) as link:
        assert not link.has(notes)
    assert not any((phone.data_dir / "models").glob("*"))


def test_log_lines_and_history_show_local_times(device_window, digits_project):
    window = device_window(digits_project)
    panel = panel_of(window)
    moment = 1718000000.123
    panel._log_line({"time": moment, "level": "info", "message": "session opened"})
    [line] = panel.log_view.toPlainText().splitlines()
    assert line.startswith(datetime.fromtimestamp(moment).strftime("%H:%M:%S.123 INFO"))
    assert "1718000000" not in line

    def check(name: str, diff: float | None) -> OutputCheck:
        return OutputCheck(name, [8, 10], diff, diff, None, diff is not None)

    # Read back from the history file, an output missing on the device has no difference.
    entry = Verification(model="m.onnx", model_name="m.onnx", sha256="0" * 64, size=1,
                         device_name="Phone A", device_id="a" * 32, address="127.0.0.1:7301",
                         runtime="onnxruntime", data_source="random", samples=8, atol=1e-3,
                         min_agreement=99.0, outputs=[check("logits", 0.5), check("extra", None)],
                         time="2026-01-02T03:04:05+00:00")
    panel.show_history([entry])
    local = datetime.fromisoformat(entry.time).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert panel.history_table.item(0, 0).text() == local
    assert panel.history_table.item(0, 5).text() == "∞"
