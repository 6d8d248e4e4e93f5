"""Every window's device list follows the paired devices on disk: a pairing made in another
window, or by ``workbench device pair``, shows without Refresh, and a call that only notes when
a device was last seen does not list the devices again."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.device.link import pair_device
from workbench.device.paired import PairedDevices
from workbench.device.widgets import panel_of, session_of

from .conftest import TIMEOUT_MS


def _row(panel, address: str) -> dict | None:
    return next((r for r in panel.device_rows() if r["address"] == address), None)


def _status_text(panel, address: str) -> str:
    for i in range(panel.devices.topLevelItemCount()):
        item = panel.devices.topLevelItem(i)
        if item.data(0, Qt.ItemDataRole.UserRole)["address"] == address:
            return item.text(2)
    return ""


def test_a_device_paired_in_one_window_shows_paired_in_the_other_without_refresh(
        start_agent, device_window, digits_project, qtbot):
    phone = start_agent(name="Bench Phone")
    first, second = device_window(digits_project), device_window(digits_project)
    other = panel_of(second)
    assert _row(other, phone.address) is None

    with qtbot.waitSignal(session_of(first).sig_paired, timeout=TIMEOUT_MS):
        panel_of(first).pair(phone.address, phone.code)

    qtbot.waitUntil(lambda: (_row(other, phone.address) or {}).get("paired") is True,
                    timeout=TIMEOUT_MS)
    assert _row(other, phone.address)["status"] == "online"
    assert _status_text(other, phone.address) == "online"


def test_a_device_forgotten_by_the_cli_leaves_the_list_without_refresh(
        start_agent, device_window, digits_project, qtbot):
    phone = start_agent(name="Bench Phone")
    device = pair_device(phone.address, phone.code)
    window = device_window(digits_project)
    panel = panel_of(window)
    assert _row(panel, phone.address)["paired"]

    PairedDevices().forget(device.device_id)  # what `workbench device forget` does

    qtbot.waitUntil(lambda: _row(panel, phone.address) is None, timeout=TIMEOUT_MS)


def test_a_call_that_only_notes_when_a_device_was_seen_does_not_list_again(
        paired_window, digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    before = PairedDevices().list()[0].last_seen
    listings = []
    session.sig_devices_listed.connect(listings.append)

    qtbot.wait(1100)  # last_seen has a resolution of a second
    with qtbot.waitSignal(session.sig_info, timeout=TIMEOUT_MS):
        panel.show_info()
    assert PairedDevices().list()[0].last_seen != before  # the file was written
    qtbot.wait(1500)
    assert listings == [] and not session.is_busy()


def test_a_pairing_the_file_system_did_not_report_shows_at_the_next_liveness_round(
        start_agent, device_window, digits_project, qtbot):
    phone = start_agent(name="Bench Phone")
    window = device_window(digits_project)
    panel, session = panel_of(window), session_of(window)
    qtbot.waitUntil(lambda: session.listed, timeout=TIMEOUT_MS)
    session.paired_watch.stop()  # as on a file system that reports nothing (NFS)
    pair_device(phone.address, phone.code)
    qtbot.wait(600)
    assert _row(panel, phone.address) is None or not _row(panel, phone.address).get("paired")

    session.check_liveness()

    qtbot.waitUntil(lambda: (_row(panel, phone.address) or {}).get("paired") is True, timeout=TIMEOUT_MS)
