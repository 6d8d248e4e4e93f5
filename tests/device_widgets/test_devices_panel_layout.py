"""The device list in a narrow Devices dock: a long device name is elided in the middle, with
the whole name in its tooltip, so the Status column stays in view; the list has its share of the
dock from the start. The Pair dialog and the samples box ask for what works."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

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


def test_the_device_list_gets_about_two_fifths_of_a_1200_pixel_window(device_window,
                                                                       digits_project, qtbot):
    window = device_window(digits_project)
    window.resize(1200, 800)
    panel = panel_of(window)
    dock = panel.parentWidget()
    while dock is not None and not dock.inherits("QDockWidget"):
        dock = dock.parentWidget()
    dock.show()
    dock.raise_()
    qtbot.waitUntil(lambda: panel.splitter.width() > 0 and panel.isVisible())
    qtbot.waitUntil(lambda: window.width() == 1200)
    list_width, controls_width = panel.splitter.sizes()
    assert list_width >= 0.35 * (list_width + controls_width)


def test_the_pair_dialog_names_the_agent_command_and_samples_have_a_sane_maximum(
        device_window, digits_project):
    panel = panel_of(device_window(digits_project))
    panel.pair()
    labels = [label.text() for label in panel.pair_dialog.findChildren(QLabel)]
    assert any("workbench-device-agent" in text for text in labels)
    assert not any("python -m" in text for text in labels)
    panel.pair_dialog.close()
    assert panel.samples.maximum() <= 10_000
