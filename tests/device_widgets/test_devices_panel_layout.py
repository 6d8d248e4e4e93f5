"""The device list in a narrow Devices dock: a long device name is elided in the middle, with
the whole name in its tooltip, so the Status column stays in view."""

from __future__ import annotations

from workbench.device.widgets import panel_of

LIST_WIDTH = 300


def test_a_long_device_name_is_elided_so_the_status_stays_in_view(device_window, digits_project,
                                                                  qtbot):
    window = device_window(digits_project)
    panel = panel_of(window)
    local = {"name": "build-server-07.lab.example.org (local)", "device_id": "c" * 32,
             "host": "127.0.0.1", "port": 7300, "address": "127.0.0.1:7300", "paired": True,
             "status": "online", "local": True, "seen_on_lan": False, "last_seen": "",
             "note": "this computer's agent, pid 123456"}
    seen = dict(local, name="Board B", device_id="b" * 32, port=7302, address="127.0.0.1:7302",
                paired=False, local=False, note="seen on the LAN; pair with the code it prints")
    panel.show_devices({"devices": [local, seen], "usb": [], "notes": []})
    panel.splitter.setSizes([LIST_WIDTH, panel.splitter.width() - LIST_WIDTH])
    qtbot.waitUntil(lambda: panel.devices.viewport().width() <= LIST_WIDTH)

    tree, header = panel.devices, panel.devices.header()
    viewport = tree.viewport().width()
    for column in (1, 2):  # Address and Status: whole, and in view without scrolling
        assert header.sectionViewportPosition(column) >= 0
        assert header.sectionViewportPosition(column) + header.sectionSize(column) <= viewport
        for row in range(tree.topLevelItemCount()):
            text = tree.topLevelItem(row).text(column)
            assert tree.fontMetrics().horizontalAdvance(text) <= header.sectionSize(column)
    item = tree.topLevelItem(0)
    assert item.text(0) == "build-server-07.lab.example.org (local) (this computer)"
    assert header.sectionSize(0) < tree.fontMetrics().horizontalAdvance(item.text(0))
    assert item.toolTip(0) == item.text(0)
