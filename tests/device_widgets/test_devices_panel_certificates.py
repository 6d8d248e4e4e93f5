"""The Devices dock over TLS with pinned certificates, on real agents: the Info tab shows the
device's certificate as its agent prints it; with no OS keyring, pairing in the Pair dialog,
Push and Verify work and the dock says once, in its notice banner, where the keys went; a device
whose certificate changed is listed so, selecting it or acting on it shows the refusal in the
error banner with how to pair again, and Forget Device then Pair… does that."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import keyring
from keyring.backends import fail
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from tests.device.conftest import AgentProcess
from workbench.device.host_keys import SECRETS_FILE
from workbench.device.link import pair_device
from workbench.device.paired import PairedDevices
from workbench.device.widgets import panel_of, session_of
from workbench.device.widgets.devices_panel import CHANGED_NOTE, FAIL_COLOR
from workbench.device.widgets.session import PANEL_REPAIR_HINT
from workbench_device.tls import fingerprint, make_identity, short_fingerprint

from .conftest import TIMEOUT_MS, screenshot

FALLBACK_NOTICE = "No OS keyring is usable here"


def _agent_fingerprint(agent) -> str:
    return fingerprint(ssl.PEM_cert_to_DER_cert((agent.data_dir / "link-cert.pem").read_text()))


def _row(panel, address: str) -> dict | None:
    return next((r for r in panel.device_rows() if r["address"] == address), None)


def _item(panel, address: str):
    tree = panel.devices
    return next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                if tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)["address"] == address)


def _show_the_dock(window, qtbot) -> None:
    from PySide6.QtWidgets import QDockWidget

    window.findChild(QDockWidget, "dock-devices").raise_()
    qtbot.wait(200)


def test_without_a_keyring_the_dock_pairs_pushes_verifies_and_says_so_once(
        start_agent, device_window, digits_project, project_model, qtbot):
    keyring.set_keyring(fail.Keyring())  # the autouse fixture puts its keyring back afterwards
    phone = start_agent(name="Keyless Phone")
    window = device_window(digits_project)
    panel, session = panel_of(window), session_of(window)
    notices: list[str] = []
    session.sig_notice.connect(notices.append)

    panel.pair()
    dialog = panel.pair_dialog
    dialog.address.setText(phone.address)
    qtbot.keyClicks(dialog.code, phone.code)
    with qtbot.waitSignal(session.sig_paired, timeout=TIMEOUT_MS):
        qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok),
                         Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: (_row(panel, phone.address) or {}).get("status") == "online",
                    timeout=TIMEOUT_MS)
    assert panel.select_device(phone.address)
    panel.set_model(project_model)
    with qtbot.waitSignal(session.sig_pushed, timeout=TIMEOUT_MS):
        panel.push()
    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS) as verified:
        panel.verify(samples=32, bench_runs=5)
    with qtbot.waitSignal(session.sig_info, timeout=TIMEOUT_MS):
        panel.show_info()

    assert verified.args[0].passed
    secrets_file = Path(os.environ["WORKBENCH_CONFIG_DIR"]) / SECRETS_FILE
    assert len(notices) == 1, notices
    assert notices[0].startswith(FALLBACK_NOTICE) and str(secrets_file) in notices[0]
    assert panel.notice.text() == notices[0]
    assert not panel.banner.isVisible()  # a notice is no error
    assert panel.info_text()["Certificate"] == short_fingerprint(_agent_fingerprint(phone))
    _show_the_dock(window, qtbot)
    screenshot(window, "devices-panel-no-keyring")


def test_a_changed_certificate_is_listed_refused_with_how_to_pair_again_and_pairing_again_works(
        start_agent, device_window, digits_project, project_model, qtbot):
    phone = start_agent(name="Swapped Phone")
    pair_device(phone.address, phone.code)
    pinned = _agent_fingerprint(phone)
    phone.stop()
    make_identity(phone.data_dir / "link-cert.pem", phone.data_dir / "link-key.pem", "impostor")
    restarted = AgentProcess(phone.data_dir, "Swapped Phone", False, "--port", str(phone.port))
    try:
        window = device_window(digits_project)
        panel, session = panel_of(window), session_of(window)
        assert _row(panel, phone.address)["status"] == "certificate changed"
        item = _item(panel, phone.address)
        assert item.text(2) == "certificate changed"
        assert item.foreground(2).color() == FAIL_COLOR
        assert item.text(3) == CHANGED_NOTE and item.toolTip(3) == CHANGED_NOTE
        assert panel.selected_address() == ""  # no call goes to it by itself
        _show_the_dock(window, qtbot)
        screenshot(window, "devices-panel-certificate-changed-listed")

        with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
            assert panel.select_device(phone.address)
        message = panel.banner.text()
        assert message.startswith(f"The certificate of Swapped Phone ({phone.address}) has changed")
        assert short_fingerprint(pinned) in message
        assert short_fingerprint(_agent_fingerprint(restarted)) in message
        assert 'workbench device forget "Swapped Phone"' in message
        assert message.endswith(PANEL_REPAIR_HINT) and "\n" not in message
        _show_the_dock(window, qtbot)
        screenshot(window, "devices-panel-certificate-changed")

        panel.set_model(project_model)
        panel.banner.hide()
        with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
            panel.push()
        assert panel.banner.text() == message
        assert PairedDevices().pin(phone.device_id) == pinned  # never a silent re-pair

        # What the banner says to do, when the agent was reset on purpose.
        menu = panel.device_menu(_item(panel, phone.address))
        [forget] = menu.actions()
        assert forget.text() == "Forget Device"
        with qtbot.waitSignal(session.sig_forgotten, timeout=TIMEOUT_MS):
            forget.trigger()
        assert panel.status.full_text() == ("Forgot Swapped Phone and its pinned certificate: "
                                            "Pair… to use it again")
        assert PairedDevices().list() == [] and PairedDevices().pin(phone.device_id) is None
        with qtbot.waitSignal(session.sig_paired, timeout=TIMEOUT_MS):
            panel.pair(phone.address, restarted.code)
        qtbot.waitUntil(lambda: (_row(panel, phone.address) or {}).get("status") == "online",
                        timeout=TIMEOUT_MS)
        assert PairedDevices().pin(phone.device_id) == _agent_fingerprint(restarted)
    finally:
        restarted.stop()
