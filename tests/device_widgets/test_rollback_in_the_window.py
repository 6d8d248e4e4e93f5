"""Rolling production back in a project window moves the devices too, as `workbench registry
rollback` does: after deploys of 0000 then 0001 to two real agents, Roll Back… in the Registry
panel (its dialog's "Push it to the devices serving 0001" checked) leaves both slots serving
0000's model; unchecked, nothing is pushed and the status line names the devices and the command
that pushes; a device that is down is named in both panels, and Push Alias to Devices… reaches
it once it is back."""

from __future__ import annotations

from tests.device.conftest import AgentProcess
from tests.device.test_deploy import project, served, slot_agents  # noqa: F401 (fixtures)
from tests.device.test_device_rollback import deploy_production, production_of
from tests.device_widgets.conftest import TIMEOUT_MS, screenshot

REGISTRY = ("workbench.registry.widgets:install",)


def open_window(device_window, root):
    from workbench.device.widgets import panel_of as devices_panel_of
    from workbench.registry.widgets import panel_of as registry_panel_of

    window = device_window(root, REGISTRY)
    return window, registry_panel_of(window), devices_panel_of(window)


def laid_out(qtbot, label) -> None:
    """Wait until ``label`` (word-wrapped) has the height its text needs: a longer text is laid
    out on a later turn of the event loop, and a picture taken before shows it cut."""
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()), timeout=TIMEOUT_MS)


def roll_back_in_dialog(window, panel, push: bool, reason: str = ""):
    """Open Roll Back… from the palette, choose production and accept; the dialog, and the
    status line as it was when the alias had moved."""
    dialog = window.commands.execute("registry.rollbackAlias")
    dialog.alias_box.setCurrentIndex(dialog.alias_box.findData("production"))
    dialog.push_box.setChecked(push)
    dialog.reason_edit.setText(reason)
    return dialog


def test_roll_back_in_the_window_pushes_the_older_model_to_both_devices(
        project, slot_agents, device_window, qtbot):  # noqa: F811
    addresses = [agent.address for agent in slot_agents]
    older = deploy_production(project, 0, addresses)
    newer = deploy_production(project, 1, addresses)
    window, panel, devices = open_window(device_window, project)
    assert panel.can_push_to_devices()

    dialog = roll_back_in_dialog(window, panel, push=True, reason="the new model misreads 7s")
    assert dialog.push_box.isVisible() and dialog.push_box.isChecked()
    assert dialog.push_box.text() == "Push it to the devices serving 0001"
    assert dialog.serving_label.text() == \
        "0001 is served by Deploy Phone 1 (classifier), Deploy Phone 2 (classifier)."
    shot = screenshot(dialog, "registry-rollback-dialog-push")
    assert shot.stat().st_size > 0

    moved: list[str] = []
    panel.sig_operation_finished.connect(lambda _operation: moved.append(panel.status_line.text()))
    with qtbot.waitSignal(panel.sig_devices_followed, timeout=TIMEOUT_MS) as followed:
        dialog.accept()
    assert moved == ["production is back on version 0000 (from 0001). "
                     "Pushing 0000 to the devices that serve 0001…"]
    operation = followed.args[0]
    assert operation is panel.device_push and operation.finished and operation.ok, operation.summary
    assert production_of(project) == 0
    for agent in slot_agents:
        assert served(agent)[0] == older != newer
    text = panel.status_line.text()
    assert text == ("production is back on version 0000 (from 0001). production 0000 pushed to the devices "
                    "that served 0001: Deploy Phone 1, Deploy Phone 2 switched.")
    assert devices.status.full_text() == operation.summary and not devices.banner.isVisible()
    assert "Deploy Phone 1 switched to 0000 (classifier)" in devices.status.toolTip()
    assert "devices still serve" not in text
    laid_out(qtbot, panel.status_line)
    shot = screenshot(panel, "registry-rollback-pushed")
    assert shot.stat().st_size > 0


def test_unchecked_nothing_is_pushed_and_push_alias_to_devices_pushes_later(
        project, slot_agents, device_window, qtbot):  # noqa: F811
    addresses = [agent.address for agent in slot_agents]
    older = deploy_production(project, 0, addresses)
    newer = deploy_production(project, 1, addresses)
    window, panel, _devices = open_window(device_window, project)

    dialog = roll_back_in_dialog(window, panel, push=False)
    with qtbot.waitSignal(panel.sig_operation_finished, timeout=TIMEOUT_MS):
        dialog.accept()
    assert production_of(project) == 0 and panel.device_push is None
    assert panel.status_line.text() == (
        "production is back on version 0000 (from 0001). devices still serve 0001: Deploy Phone 1 (classifier), "
        "Deploy Phone 2 (classifier); run `workbench device redeploy production` to push 0000 to them.")
    for agent in slot_agents:
        assert served(agent)[0] == newer
    laid_out(qtbot, panel.status_line)
    shot = screenshot(panel, "registry-rollback-not-pushed")
    assert shot.stat().st_size > 0

    # What the hint says to run is in the palette too: the push the rollback left out.
    operation = window.commands.execute("device.redeployAlias", alias="production")
    qtbot.waitUntil(lambda: operation.finished, timeout=TIMEOUT_MS)
    assert operation.ok, operation.summary
    for agent in slot_agents:
        assert served(agent)[0] == older


def test_a_device_that_is_down_is_named_and_a_second_push_reaches_it_once_it_is_back(
        project, slot_agents, device_window, qtbot, request):  # noqa: F811
    up, down = slot_agents
    older = deploy_production(project, 0, [up.address, down.address])
    deploy_production(project, 1, [up.address, down.address])
    window, panel, devices = open_window(device_window, project)
    down.stop()

    with qtbot.waitSignal(panel.sig_devices_followed, timeout=TIMEOUT_MS) as followed:
        window.commands.execute("registry.rollbackAlias", alias="production", reason="misreads 7s")
    operation = followed.args[0]
    assert operation.finished and not operation.ok
    assert production_of(project) == 0 and served(up)[0] == older
    text = panel.status_line.text()
    assert "production 0000 pushed to the devices that served 0001: Deploy Phone 1 switched; " \
           "Deploy Phone 2 unreachable" in text, text
    assert text.endswith(". Push Alias to Devices… again once they are back.")
    assert "Deploy Phone 2 unreachable" in devices.banner.text()
    assert "Deploy Phone 1" not in devices.banner.text()
    # The device that did not answer is listed offline now.
    qtbot.waitUntil(lambda: {row["address"]: row.get("status") for row in devices.device_rows()}.get(down.address)
                    == "offline", timeout=TIMEOUT_MS)
    laid_out(qtbot, panel.status_line)
    shot = screenshot(window, "rollback-device-down")
    assert shot.stat().st_size > 0

    back = AgentProcess(down.data_dir, down.name, False, "--port", str(down.port),
                        "--inference-port", str(down.inference_port))
    back.inference_port = down.inference_port
    request.addfinalizer(back.stop)
    again = window.commands.execute("device.redeployAlias", alias="production")
    qtbot.waitUntil(lambda: again.finished, timeout=TIMEOUT_MS)
    assert again.ok, again.summary
    assert [o.address for r in again.result.reports for o in r.outcomes] == [down.address]
    assert served(back)[0] == older


def test_cancel_in_the_devices_panel_stops_an_alias_push_before_the_devices_switch(
        project, slot_agents, device_window, qtbot):  # noqa: F811
    addresses = [agent.address for agent in slot_agents]
    deploy_production(project, 0, addresses)
    newer = deploy_production(project, 1, addresses)
    window, panel, devices = open_window(device_window, project)
    dialog = roll_back_in_dialog(window, panel, push=False)
    with qtbot.waitSignal(panel.sig_operation_finished, timeout=TIMEOUT_MS):
        dialog.accept()

    operation = window.commands.execute("device.redeployAlias", alias="production")
    assert devices.cancel_button.isEnabled()
    devices.cancel_button.click()  # before the worker reaches the devices: none of them switches
    assert devices.status.full_text() == "Cancelling the push: devices not switched yet keep the model they serve…"
    qtbot.waitUntil(lambda: operation.finished, timeout=TIMEOUT_MS)
    outcomes = [outcome for report in operation.result.reports for outcome in report.outcomes]
    assert not operation.ok and sorted(outcome.address for outcome in outcomes) == sorted(addresses)
    assert {(outcome.state, outcome.reason) for outcome in outcomes} == {("failed", "cancelled before it switched")}
    for agent in slot_agents:
        assert served(agent)[0] == newer
    assert devices.status.full_text() == operation.summary
    assert operation.summary.endswith(" Push Alias to Devices… to push it to them after all.")
    assert "Deploy Phone 1 failed: cancelled before it switched" in devices.banner.text()
    assert not devices.cancel_button.isEnabled()
