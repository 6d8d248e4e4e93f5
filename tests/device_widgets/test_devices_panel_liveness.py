"""The device list keeps up with devices that stop or start answering without a Refresh: a
killed agent shows offline in a window that made no call on it, and the same agent started
again shows online."""

from __future__ import annotations

import time

from tests.device.conftest import AgentProcess
from workbench.device.widgets.session import LIVENESS_INTERVAL_MS, LIVENESS_KEY

from .conftest import TIMEOUT_MS

# A round every LIVENESS_INTERVAL_MS, a connect timeout, and a listing for one that came back.
NOTICED_MS = 3 * LIVENESS_INTERVAL_MS + 5000


def _status(panel, address: str) -> str | None:
    row = next((r for r in panel.device_rows() if r["address"] == address), None)
    return row["status"] if row is not None else None


def test_a_killed_device_shows_offline_and_a_restarted_one_online_without_refresh(
        paired_window, digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    assert _status(panel, phone.address) == "online"
    # Selecting the device asked it for its runtimes: that call ends before the agent does.
    qtbot.waitUntil(lambda: phone.address in panel.runtimes_of, timeout=TIMEOUT_MS)
    listings = []
    session.sig_devices_listed.connect(listings.append)

    phone.kill()
    qtbot.waitUntil(lambda: _status(panel, phone.address) == "offline", timeout=NOTICED_MS)
    # The row changed in place: no full listing (mDNS browse, handshakes) was needed.
    assert listings == []
    assert panel.devices.currentItem() is not None
    assert panel.devices.currentItem().text(2) == "offline"

    restarted = AgentProcess(phone.data_dir, "Bench Phone", False, "--port", str(phone.port))
    try:
        qtbot.waitUntil(lambda: _status(panel, phone.address) == "online", timeout=NOTICED_MS)
        assert not panel.banner.isVisible()
    finally:
        session.close_down()
        window.tasks.wait(TIMEOUT_MS)
        restarted.stop()


def test_the_liveness_check_stops_with_the_window_and_never_blocks_it(paired_window,
                                                                      digits_project, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    assert session.liveness_timer.isActive()

    started = time.monotonic()
    session.check_liveness()
    session.check_liveness()  # the previous round still runs: this one is skipped
    assert time.monotonic() - started < 0.2
    assert window.tasks.is_running(LIVENESS_KEY)
    qtbot.waitUntil(lambda: not window.tasks.is_running(LIVENESS_KEY), timeout=TIMEOUT_MS)

    session.close_down()
    assert not session.liveness_timer.isActive()
    session.check_liveness()
    assert not window.tasks.is_running(LIVENESS_KEY)
