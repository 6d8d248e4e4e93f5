"""Rolling an alias back in the Registry panel names the device slots that still serve the
version it left (the deploy log says which), and the command that pushes to them."""

from __future__ import annotations

import json

from tests.registry_widgets.conftest import finish, open_models


def deploy_log_line(version: str, devices: list[tuple[str, str]], slot: str = "classifier",
                    alias: str = "production") -> str:
    """A line as ``workbench device deploy`` writes it."""
    return json.dumps({"time": "2026-05-03T10:00:00+00:00", "version": version, "alias": alias, "slot": slot,
                       "model": f"bestmodel_{version}.onnx", "sha256": "ab" * 32, "seconds": 0.4,
                       "devices": [{"device": name, "address": f"10.0.0.{n}:7420", "state": state,
                                    "reason": "", "load_ms": 3.0, "warm_ms": 1.0}
                                   for n, (name, state) in enumerate(devices, 1)]})


def test_rollback_names_the_devices_that_still_serve_the_version_left(registry_project, make_panel,
                                                                       qtbot):
    models = open_models(registry_project)
    models.set_alias("production", 3, "faster")
    log = models.store.folder / "deployments" / "deployments.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(deploy_log_line("0002", [("Phone A", "switched"), ("Phone B", "switched")]) + "\n"
                   + deploy_log_line("0003", [("Phone A", "switched"), ("Phone B", "unreachable")]) + "\n"
                   + "not json\n", encoding="utf-8")
    panel, _errors = make_panel(registry_project)
    finish(qtbot, panel, lambda: panel.rollback("production"))
    text = panel.status_line.text()
    assert "production is back on version 0002 (from 0003)." in text
    assert "devices still serve 0003: Phone A (classifier); run `workbench device redeploy production`" in text
    assert "Phone B" not in text  # it never switched to 0003

    # staging was on 0003 too, but what the devices serve was deployed as production.
    finish(qtbot, panel, lambda: panel.rollback("staging"))
    assert "staging is back" in panel.status_line.text()
    assert "devices still serve" not in panel.status_line.text()
