"""This computer as the embedded default device: `workbench device serve-local` starts an agent
in the background, pairs with it from the code it prints, and `list` shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from workbench.device.link import DeviceLink
from workbench.device.paired import PairedDevices
from workbench.device.serve_local import running_local_agent, serve_local, stop_local

from .conftest import free_port, run_cli, run_cli_json


def test_serve_local_starts_a_paired_agent_that_list_and_info_show(tmp_path):
    port = free_port()
    started = run_cli_json("serve-local", "--port", str(port))
    assert started["started"] and started["paired"] and started["paired_now"]
    assert started["port"] == port
    data_dir = Path(os.environ["WORKBENCH_DATA_DIR"]) / "local-device"
    assert started["data_dir"] == str(data_dir) and (data_dir / "device.json").is_file()

    listed = run_cli_json("list", "--no-browse")
    [local] = [d for d in listed["devices"] if d["local"]]
    assert local["paired"] and local["status"] == "online" and local["port"] == port
    assert f"pid {started['pid']}" in local["note"]

    info = run_cli_json("info", "local")
    assert info["device_id"] == started["device_id"]

    again = run_cli_json("serve-local", "--port", str(port))
    # Running already and paired: the report says so, as `list` does.
    assert not again["started"] and again["paired"] and not again["paired_now"]
    assert again["pid"] == started["pid"]

    stopped = run_cli("serve-local", "--stop")
    assert stopped.returncode == 0 and f"pid {started['pid']}" in stopped.stdout
    assert json.loads(run_cli("serve-local", "--stop", "--json").stdout) == {"stopped": None}
    after = run_cli_json("list", "--no-browse")
    [local] = [d for d in after["devices"] if d["local"]]
    assert local["status"] == "offline"


def test_a_restarted_local_agent_keeps_its_identity_and_pairing(private_keyring_and_agent):
    first = serve_local(port=0)
    assert first.started and first.paired and first.paired_now
    assert stop_local().pid == first.pid
    assert running_local_agent() is None

    second = serve_local(port=0)
    assert second.started and second.paired and not second.paired_now  # it knows this computer
    assert second.device_id == first.device_id
    assert [d.device_id for d in PairedDevices().list()] == [first.device_id]
    with DeviceLink.open("local") as link:
        assert link.target.via == "local" and link.info()["device_id"] == first.device_id


def test_a_taken_port_gives_the_local_agent_a_free_one(private_keyring_and_agent):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        agent = serve_local(port=taken.getsockname()[1])
        assert agent.port != taken.getsockname()[1]
        with DeviceLink.open("local") as link:
            assert link.address == agent.address
    finally:
        taken.close()
