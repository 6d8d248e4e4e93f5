"""What the Log tab and the status lines say about which device they are about: a followed log
ends visibly when another device is selected, a listing of the same devices keeps it going, and
devices are named by their names, their addresses alongside."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.device.widgets.session import LOGS_KEY

from .conftest import TIMEOUT_MS


def test_selecting_another_device_stops_following_and_says_so(paired_window, digits_project,
                                                              qtbot):
    phone, window, panel, session = paired_window(digits_project)
    qtbot.waitUntil(lambda: phone.address in panel.runtimes_of, timeout=TIMEOUT_MS)
    qtbot.mouseClick(panel.follow_button, Qt.MouseButton.LeftButton)
    assert panel.log_view.toPlainText().splitlines() == [
        f"— following Bench Phone ({phone.address}) —"]

    # The same devices listed again: the selection stays, and so does the log.
    with qtbot.waitSignal(session.sig_devices_listed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.refresh_button, Qt.MouseButton.LeftButton)
    assert panel.follow_button.isChecked() and session.is_busy(LOGS_KEY)

    board = dict(session.overview["devices"][0], name="Board B", device_id="b" * 32,
                 port=1, address="127.0.0.1:1", status="offline")
    panel.show_devices(dict(session.overview, devices=session.overview["devices"] + [board]))
    assert panel.follow_button.isChecked()

    assert panel.select_device(board["address"])
    assert not panel.follow_button.isChecked() and not session.is_busy(LOGS_KEY)
    assert panel.log_view.toPlainText().splitlines()[-1] == "— stopped following Bench Phone —"
    assert "Stopped following Bench Phone" in panel.status.full_text()


def test_verifying_names_the_device(paired_window, digits_project, project_model, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    qtbot.waitUntil(lambda: phone.address in panel.runtimes_of, timeout=TIMEOUT_MS)
    panel.set_model(project_model)
    said = []
    window.tasks.sig_progress.connect(said.append)

    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS):
        panel.verify(samples=8, bench_runs=5)
        assert panel.verdict.text() == "Verifying model.onnx on Bench Phone…"
    assert "Verifying model.onnx on Bench Phone (onnxruntime)" in said
