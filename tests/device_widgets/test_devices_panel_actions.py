"""The Devices panel's own controls on real agents: the Pair dialog (the right code pairs, a
wrong one is refused and leaves nothing behind), Info, Push of the model selected in the Models
panel, the device's log as it streams, the number of samples and the runtime Verify uses, and a
window closed while the log streams."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from workbench.device.link import DeviceLink
from workbench.device.paired import PairedDevices
from workbench.device.widgets import panel_of, session_of
from workbench.device.widgets.session import LOGS_KEY
from workbench_device.runtimes import available_runtimes

from .conftest import TIMEOUT_MS


def _ok(dialog):
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)


def _row(panel, address: str) -> dict | None:
    return next((r for r in panel.device_rows() if r["address"] == address), None)


def _a_connection_shows_in_the_log(panel, address: str) -> bool:
    with DeviceLink.open(address) as other:  # the agent logs each authenticated connection
        other.info()
    return "authenticated from" in panel.log_view.toPlainText()


def test_the_pair_dialog_with_the_right_code_pairs_and_lists_the_device(start_agent, device_window,
                                                                        digits_project, qtbot):
    phone = start_agent(name="Desk Phone")
    window = device_window(digits_project)
    panel, session = panel_of(window), session_of(window)

    qtbot.mouseClick(panel.pair_button, Qt.MouseButton.LeftButton)
    dialog = panel.pair_dialog
    assert dialog is not None and dialog.isVisible()
    assert not _ok(dialog).isEnabled()
    dialog.address.setText(phone.address)
    qtbot.keyClicks(dialog.code, phone.code)
    assert _ok(dialog).isEnabled()
    with qtbot.waitSignal(session.sig_paired, timeout=TIMEOUT_MS) as paired:
        qtbot.mouseClick(_ok(dialog), Qt.MouseButton.LeftButton)

    assert paired.args == ["Desk Phone"]
    assert not dialog.isVisible()
    [device] = PairedDevices().list()
    assert device.device_id == phone.device_id and PairedDevices().pin(phone.device_id)
    qtbot.waitUntil(lambda: (_row(panel, phone.address) or {}).get("paired") is True, timeout=TIMEOUT_MS)
    assert _row(panel, phone.address)["status"] == "online"
    assert not panel.banner.isVisible()


def test_a_wrong_code_in_the_pair_dialog_is_refused_and_nothing_is_stored(start_agent, device_window,
                                                                          digits_project, qtbot):
    phone = start_agent(name="Desk Phone")
    window = device_window(digits_project)
    panel, session = panel_of(window), session_of(window)

    panel.pair()
    dialog = panel.pair_dialog
    dialog.address.setText(phone.address)
    qtbot.keyClicks(dialog.code, "12ab")
    assert dialog.code.text() == "12" and not _ok(dialog).isEnabled()  # only digits go in
    dialog.code.clear()
    qtbot.keyClicks(dialog.code, phone.wrong_code())
    with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
        qtbot.mouseClick(_ok(dialog), Qt.MouseButton.LeftButton)

    message = panel.banner.text()
    assert "refused the pairing code" in message and "4 attempts left" in message
    assert phone.address in message and "\n" not in message
    assert PairedDevices().list() == []
    assert PairedDevices().pin(phone.device_id) is None
    assert not (_row(panel, phone.address) or {}).get("paired")


def test_info_shows_what_the_device_says_and_its_runtimes_become_the_choice(paired_window,
                                                                            digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    assert panel.selected_address() == phone.address

    with qtbot.waitSignal(session.sig_info, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.info_button, Qt.MouseButton.LeftButton)

    assert panel.tabs.currentWidget() is panel.info_view
    info = panel.info_text()
    assert info["Name"] == "Bench Phone" and info["Address"] == phone.address
    assert info["Device id"] == phone.device_id
    assert "cores" in info["CPU"] and info["Memory"].endswith("GiB")
    reported = [runtime["name"] for runtime in available_runtimes()]  # the agent runs here
    assert "onnxruntime" in reported
    for name in reported:
        assert name in info["Runtimes"]
    assert panel.runtimes() == reported
    assert "{" not in "".join(info.values())  # no Python reprs


def test_push_sends_the_model_selected_in_the_models_panel_once(paired_window,
                                                                 digits_project, project_model, qtbot):
    from workbench.modeltools.widgets import panel_of as models_panel_of

    phone, window, panel, session = paired_window(digits_project)
    models = models_panel_of(window)
    qtbot.waitUntil(lambda: models.select_path(project_model), timeout=TIMEOUT_MS)
    with DeviceLink.open(phone.address) as link:
        assert not link.has(project_model)

    with qtbot.waitSignal(session.sig_pushed, timeout=TIMEOUT_MS) as pushed:
        qtbot.mouseClick(panel.push_button, Qt.MouseButton.LeftButton)

    size = project_model.stat().st_size
    assert panel.model_path == project_model
    assert pushed.args[0].sent == size and not pushed.args[0].skipped
    assert panel.status.full_text().startswith("Pushed model.onnx (")
    with DeviceLink.open(phone.address) as link:
        assert link.has(project_model)

    with qtbot.waitSignal(session.sig_pushed, timeout=TIMEOUT_MS) as again:
        qtbot.mouseClick(panel.push_button, Qt.MouseButton.LeftButton)
    assert again.args[0].sent == 0 and again.args[0].skipped
    assert panel.status.full_text() == "The device has model.onnx already: nothing sent"
    assert not panel.banner.isVisible()


def test_follow_log_streams_the_device_log_until_it_is_turned_off(paired_window,
                                                                  digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.tabs.setCurrentIndex(panel.tabs.indexOf(panel.follow_button.parentWidget()))

    qtbot.mouseClick(panel.follow_button, Qt.MouseButton.LeftButton)
    assert panel.follow_button.isChecked() and session.is_busy(LOGS_KEY)

    qtbot.waitUntil(lambda: _a_connection_shows_in_the_log(panel, phone.address), timeout=TIMEOUT_MS)
    text = panel.log_view.toPlainText()
    assert text.startswith(f"— following Bench Phone ({phone.address}) —")
    assert any(" INFO " in line and "authenticated from" in line for line in text.splitlines())

    qtbot.mouseClick(panel.follow_button, Qt.MouseButton.LeftButton)
    assert not panel.follow_button.isChecked() and not session.is_busy(LOGS_KEY)
    assert window.tasks.wait(10_000)
    lines = panel.log_view.blockCount()
    with DeviceLink.open(phone.address) as other:
        other.info()
    qtbot.wait(1500)
    assert panel.log_view.blockCount() == lines


def test_verify_runs_the_samples_and_runtime_chosen_in_the_panel(paired_window,
                                                                 digits_project, project_model, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.set_model(project_model)
    # Selecting the device asks it for its runtimes.
    reported = [runtime["name"] for runtime in available_runtimes()]
    qtbot.waitUntil(lambda: panel.runtimes() == reported, timeout=TIMEOUT_MS)

    panel.samples.setValue(32)
    assert panel.set_runtime("onnxruntime")
    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS) as verified:
        qtbot.mouseClick(panel.verify_button, Qt.MouseButton.LeftButton)
    result = verified.args[0]
    assert result.passed and result.samples == 32 and result.runtime == "onnxruntime"
    [[_output, shape, *_rest]] = panel.result_rows()
    assert shape == "32×10"
    qtbot.waitUntil(lambda: panel.history_table.rowCount() == 1, timeout=TIMEOUT_MS)
    assert panel.history_table.item(0, 2).text() == "onnxruntime"
    assert panel.history_table.item(0, 3).text() == "32"

    if panel.set_runtime("mnn"):  # the device has MNN: the .onnx file is not for it
        with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
            qtbot.mouseClick(panel.verify_button, Qt.MouseButton.LeftButton)
        assert "MNN cannot load model.onnx" in panel.banner.text()
        assert panel.result_table.rowCount() == 0


def test_closing_the_window_while_the_log_streams_ends_the_stream(paired_window,
                                                                  digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.follow_button.setChecked(True)
    qtbot.waitUntil(lambda: _a_connection_shows_in_the_log(panel, phone.address), timeout=TIMEOUT_MS)

    window.close()

    assert session.closed and not session.is_busy()
    assert window.tasks.wait(5_000)  # the stream's worker ended, it did not wait for a line
    lines = panel.log_view.blockCount()
    with DeviceLink.open(phone.address) as other:
        other.info()
    qtbot.wait(500)
    assert panel.log_view.blockCount() == lines
    session.refresh()  # a closed window's session starts nothing
    assert not session.is_busy() and not window.tasks.is_running("device.list")
