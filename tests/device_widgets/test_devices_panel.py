"""The Devices panel on real agents: the list shows a paired agent online, Verify of the digits
model fills the result table with a pass and the history, and an agent killed mid-verify shows
its one-line message in the banner."""

from __future__ import annotations


from workbench.device.link import pair_device
from workbench.device.widgets import panel_of, session_of

from .conftest import TIMEOUT_MS, screenshot


def _row(panel, address: str) -> dict | None:
    return next((r for r in panel.device_rows() if r["address"] == address), None)


def test_the_device_list_shows_a_paired_running_agent_as_online(start_agent, device_window,
                                                               digits_project):
    phone = start_agent(name="Bench Phone")
    pair_device(phone.address, phone.code)
    window = device_window(digits_project)
    panel = panel_of(window)

    row = _row(panel, phone.address)
    assert row is not None and row["name"] == "Bench Phone"
    assert row["paired"] and row["status"] == "online"
    assert panel.selected_address() == phone.address
    assert "device.pair" in window.commands and "device.verify" in window.commands
    assert window.commands.get("device.pair").label == "Devices: Pair Device…"


def test_verify_fills_the_result_table_with_a_pass_and_the_history(paired_window,
                                                                   digits_project, project_model,
                                                                   qtbot):
    phone, window, panel, session = paired_window(digits_project)
    explorer_entries = [c.id for c in window.commands.for_context("explorer", project_model)]
    assert "device.verifyFile" in explorer_entries
    assert "device.verifyFile" not in [c.id for c in window.commands.for_context(
        "explorer", digits_project / "workbench.toml")]

    with qtbot.waitSignal(session.sig_verified, timeout=TIMEOUT_MS) as verified, \
            qtbot.waitSignal(session.sig_history, timeout=TIMEOUT_MS):
        window.commands.execute("device.verifyFile", path=project_model, device=phone.address,
                                samples=64, bench_runs=20)
    qtbot.waitUntil(lambda: panel.history_table.rowCount() == 1, timeout=TIMEOUT_MS)

    assert verified.args[0].passed
    [[output, shape, max_diff, _mean, agreement, result]] = panel.result_rows()
    assert (output, shape, agreement, result) == ("logits", "64×10", "100.0 %", "pass")
    assert float(max_diff) <= 1e-5
    assert panel.verdict.text().count("PASS") == 1
    latency = panel.latency_table
    assert [latency.item(r, 0).text() for r in range(latency.rowCount())] == ["Bench Phone",
                                                                               "this computer"]
    assert all(latency.item(r, c).text() != "–" for r in range(2) for c in (1, 2, 3))
    assert panel.history_table.item(0, 1).text() == "Bench Phone"
    assert panel.history_table.item(0, 4).text() == "pass"
    assert not panel.banner.isVisible()

    panel.tabs.setCurrentIndex(0)
    from PySide6.QtWidgets import QDockWidget

    window.findChild(QDockWidget, "dock-devices").raise_()
    qtbot.wait(200)
    shot = screenshot(window, "devices-panel-verified")
    assert shot.stat().st_size > 0


def test_killing_the_agent_mid_verify_shows_its_message_in_the_banner(paired_window,
                                                                       digits_project,
                                                                       project_model, qtbot):
    phone, window, panel, session = paired_window(digits_project)
    panel.set_model(project_model)
    assert panel.select_device(phone.address)

    panel.verify(samples=64, bench_runs=100_000)
    qtbot.waitUntil(lambda: panel.status.full_text().startswith("Benchmarking on"), timeout=TIMEOUT_MS)
    assert not panel.verify_button.isEnabled() and panel.cancel_button.isEnabled()
    with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
        phone.kill()
    qtbot.waitUntil(panel.banner.isVisible, timeout=TIMEOUT_MS)

    message = panel.banner.text()
    assert message.startswith(f"Bench Phone ({phone.address}) stopped answering")
    assert "\n" not in message and "Traceback" not in message
    assert panel.result_table.rowCount() == 0
    assert panel.verify_button.isEnabled()
    qtbot.waitUntil(lambda: _row(panel, phone.address)["status"] == "offline", timeout=TIMEOUT_MS)
    assert panel.banner.text() == message
    screenshot(window, "devices-panel-agent-killed")


def test_pairing_a_not_running_address_says_so_in_the_banner(device_window, digits_project, qtbot):
    from tests.device.conftest import free_port

    window = device_window(digits_project)
    panel, session = panel_of(window), session_of(window)
    address = f"127.0.0.1:{free_port()}"
    with qtbot.waitSignal(session.sig_error, timeout=TIMEOUT_MS):
        window.commands.execute("device.pair", address=address, code="123456")
    assert address in panel.banner.text() and "\n" not in panel.banner.text()
