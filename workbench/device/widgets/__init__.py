"""The device capability's widgets: the Devices dock of a project window (paired, local and
discovered devices; pairing; this computer's agent; Push and Verify of a model with its result
table, latency and history; the device's log; the output of a script run there), its commands
in the palette, "Verify on Device…" in the right-click menus of .onnx and .mnn files in the
Explorer and the Models panel, "Run on Device" for Python scripts (the editor's current
one, or one in the Explorer's menu), and "Push Alias to Devices…", which the Registry panel runs
after rolling an alias back so that the devices follow.

``install(window)`` joins them to a project window after its first paint. The device services
(zeroconf, keyring, NumPy, onnxruntime) are imported only inside the calls that need them, on
a worker thread, never at module top.
"""

from __future__ import annotations

from pathlib import Path

DEVICES_DOCK_ID = "devices"
CATEGORY = "Devices"
MODEL_SUFFIXES = (".onnx", ".mnn")


def install(window, browse_lan: bool = True) -> None:
    """Add the Devices dock (tabbed with the Runs dock when there is one) and its commands to
    ``window``, and list the devices."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget, QWidget

    from workbench.device.widgets.devices_panel import DevicesPanel
    from workbench.device.widgets.session import DeviceSession

    session = DeviceSession(window, browse_lan=browse_lan)
    session.setObjectName("device-session")

    def models_selection() -> list[Path]:
        # The Models panel is another capability's widget: it is found by name, not imported.
        models = window.findChild(QWidget, "modeltools-models-panel")
        selected = getattr(models, "selected_paths", None)
        return list(selected()) if selected is not None else []

    panel = DevicesPanel(session, models_selection)
    panel.setObjectName("device-devices-panel")
    dock = window.add_dock(DEVICES_DOCK_ID, "Devices", panel, Qt.DockWidgetArea.BottomDockWidgetArea)
    runs = window.findChild(QDockWidget, "dock-runs")
    if runs is not None:
        # Its place on a first open; a saved layout, restored once every dock is in, has the
        # last word (and keeps this tab group when it predates the Devices dock).
        window.tabifyDockWidget(runs, dock)
        if runs.isVisible():
            runs.raise_()
    _register_commands(window, panel, dock)
    from workbench.device.widgets.script_run import install_run_on_device

    install_run_on_device(window, panel, dock)
    from workbench.qt.icons import ThemedIcons, decorate_button

    icons = ThemedIcons(panel)
    for button, name in ((panel.refresh_button, "refresh"), (panel.pair_button, "link"),
                         (panel.local_button, "chip"), (panel.push_button, "upload"),
                         (panel.verify_button, "run"), (panel.cancel_button, "stop")):
        decorate_button(icons, button, name)
    closed = getattr(window, "sig_closed", None)
    if closed is not None:
        closed.connect(panel.close_down)
    session.refresh()


def _register_commands(window, panel, dock) -> None:
    add = window.commands.add

    def shown() -> None:
        dock.show()
        dock.raise_()

    def pair(address: str | None = None, code: str | None = None) -> None:
        shown()
        panel.pair(address, code)

    def verify(path=None, paths=None, device: str | None = None, **options) -> None:
        shown()
        chosen = path or (paths[0] if paths else None)
        if chosen is not None:
            panel.set_model(chosen)
        if device is not None and not panel.select_device(device):
            panel.show_error(f"{device} is not in the device list: pair it first (Pair…).")
            return
        panel.verify(**options)

    add("device.pair", "Pair Device…", pair, category=CATEGORY)
    add("device.verify", "Verify Model on Device…", verify, category=CATEGORY)
    # "models": the Models panel's right-click menu, which finds this command in the registry.
    add("device.verifyFile", "Verify on Device…", verify, category=CATEGORY,
        context=("explorer", "models"),
        in_palette=False,
        applies_to=lambda path: Path(path).suffix.lower() in MODEL_SUFFIXES and Path(path).is_file())

    def push_alias(alias: str | None = None, left: str | int | None = None, on_finished=None):
        from workbench.device.widgets.alias_push import DEFAULT_ALIAS

        if on_finished is None:  # run by another panel, that panel stays in front and says the outcome
            shown()
        return panel.push_alias(alias or DEFAULT_ALIAS, left, on_finished)

    # The Registry panel runs it after a rollback (the registry knows no devices); a script
    # or the palette too, to push again to devices that missed a push.
    from workbench.device.widgets.alias_push import REDEPLOY_COMMAND

    add(REDEPLOY_COMMAND, "Push Alias to Devices…", push_alias, category=CATEGORY)
    add("device.startLocal", "Start Local Device", lambda: (shown(), panel.session.start_local()),
        category=CATEGORY)
    add("device.refresh", "Refresh Devices", panel.session.refresh, category=CATEGORY)


def panel_of(window):
    """The window's Devices panel (None before the device capability was installed)."""
    from workbench.device.widgets.devices_panel import DevicesPanel

    return window.findChild(DevicesPanel, "device-devices-panel")


def session_of(window):
    """The window's ``DeviceSession`` (None before the device capability was installed)."""
    from workbench.device.widgets.session import DeviceSession

    return window.findChild(DeviceSession, "device-session")
