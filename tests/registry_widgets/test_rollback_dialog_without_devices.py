"""In a window without the device capability, Roll Back… offers no push to the devices (nothing
could push), and a rollback names the devices that still serve the version left, as before."""

from __future__ import annotations

from tests.registry_widgets.conftest import finish, open_models
from tests.registry_widgets.test_rollback_devices_hint import deploy_log_line


def test_without_the_device_command_the_dialog_offers_no_push_and_the_hint_stays(registry_project, make_panel,
                                                                                 qtbot):
    models = open_models(registry_project)
    models.set_alias("production", 3, "faster")
    log = models.store.folder / "deployments" / "deployments.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(deploy_log_line("0003", [("Phone A", "switched")]) + "\n", encoding="utf-8")
    panel, _errors = make_panel(registry_project)
    assert not panel.can_push_to_devices()

    dialog = panel.rollback()
    qtbot.waitExposed(dialog)
    dialog.alias_box.setCurrentIndex(dialog.alias_box.findData("production"))
    assert not dialog.push_box.isVisible() and not dialog.serving_label.isVisible()
    finish(qtbot, panel, dialog.accept)
    assert panel.device_push is None
    assert panel.status_line.text() == (
        "production is back on version 0002 (from 0003). devices still serve 0003: Phone A (classifier); "
        "run `workbench device redeploy production` to push 0002 to them.")
