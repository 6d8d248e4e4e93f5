"""Pairing with a device as a user does: the code the agent prints, a wrong code refused with
the attempts left, the secret kept in the keyring and nowhere else, and a later process that
needs no code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workbench.device.errors import DeviceUnreachable, NotPaired, PairingRefused
from workbench.device.link import DeviceLink, pair_device
from workbench.device.paired import KEYRING_SERVICE, PairedDevices

from .conftest import AgentProcess, free_port, run_cli, run_cli_json


def _files_under(*folders: Path):
    for folder in folders:
        for root, _, names in os.walk(folder):
            for name in names:
                yield Path(root) / name


def test_pairing_with_the_printed_code_keeps_the_secret_in_the_keyring_only(
        start_agent, private_keyring_and_agent, tmp_path):
    agent = start_agent(name="Bench Phone")
    device = pair_device(agent.address, agent.code)

    assert (device.name, device.device_id, device.port) == ("Bench Phone", agent.device_id, agent.port)
    secret = private_keyring_and_agent.passwords[(KEYRING_SERVICE, agent.device_id)]
    assert len(secret) == 64
    saved = json.loads((Path(os.environ["WORKBENCH_CONFIG_DIR"]) / "devices.json").read_text())
    assert [d["device_id"] for d in saved["devices"]] == [agent.device_id]
    assert saved["devices"][0]["host"] == "127.0.0.1" and saved["devices"][0]["last_seen"]
    workbench_files = list(_files_under(Path(os.environ["WORKBENCH_CONFIG_DIR"]),
                                        Path(os.environ["WORKBENCH_DATA_DIR"])))
    assert workbench_files
    assert not [f for f in workbench_files if secret.encode() in f.read_bytes()]

    with DeviceLink.open(agent.address) as link:
        assert link.info()["device_id"] == agent.device_id


def test_a_wrong_code_is_refused_with_the_attempts_left_and_the_right_one_still_pairs(start_agent):
    agent = start_agent()
    with pytest.raises(PairingRefused) as refused:
        pair_device(agent.address, agent.wrong_code())
    assert refused.value.attempts_left == 4
    assert "4 attempts left" in str(refused.value) and agent.address in str(refused.value)
    assert PairedDevices().list() == []

    assert pair_device(agent.address, agent.code).device_id == agent.device_id


def test_what_is_no_pairing_code_is_refused_before_anything_is_sent(start_agent):
    agent = start_agent()
    with pytest.raises(PairingRefused) as refused:
        pair_device(agent.address, "12ab")
    assert "6 digits" in str(refused.value)
    assert pair_device(agent.address, agent.code)  # no attempt was spent


def test_an_unpaired_device_says_how_to_pair_with_it(start_agent):
    agent = start_agent()
    with pytest.raises(NotPaired) as error:
        DeviceLink.open(agent.address)
    assert f"workbench device pair {agent.address} --code NNNNNN" in str(error.value)


def test_a_device_that_forgot_this_computer_asks_for_pairing_again(start_agent):
    agent = start_agent()
    pair_device(agent.address, agent.code)
    agent.stop()
    (agent.data_dir / "paired_hosts.json").unlink()
    restarted = AgentProcess(agent.data_dir, "Test Phone 1")  # its pairings reset
    try:
        with pytest.raises(NotPaired) as error:
            DeviceLink.open(restarted.address)
        assert "forgotten this computer" in str(error.value)
        assert "workbench device pair" in str(error.value)
    finally:
        restarted.stop()


def test_nothing_answering_is_a_clear_error():
    port = free_port()
    with pytest.raises(DeviceUnreachable) as error:
        DeviceLink.open(f"127.0.0.1:{port}")
    assert f"nothing answers at 127.0.0.1:{port}" in str(error.value)
    assert "workbench-device-agent" in str(error.value)


def test_an_unknown_name_says_how_to_name_a_device():
    with pytest.raises(DeviceUnreachable) as error:
        DeviceLink.open("Nobody's Phone")
    assert "HOST:PORT" in str(error.value)


def test_a_paired_device_is_found_by_its_name_and_can_be_forgotten(start_agent,
                                                                   private_keyring_and_agent):
    agent = start_agent(name="Named Phone")
    pair_device(agent.address, agent.code)
    with DeviceLink.open("named phone") as link:
        assert link.address == agent.address
    devices = PairedDevices()
    assert devices.forget(agent.device_id)
    assert devices.list() == [] and private_keyring_and_agent.passwords == {}


def test_after_pairing_from_the_cli_a_new_process_needs_no_code(start_agent):
    agent = start_agent(name="CLI Phone")
    wrong = run_cli("pair", agent.address, "--code", agent.wrong_code())
    assert wrong.returncode == 1
    assert "refused the pairing code (4 attempts left" in wrong.stderr
    assert "Traceback" not in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1

    paired = run_cli("pair", agent.address, "--code", agent.code)
    assert paired.returncode == 0, paired.stderr
    assert f"Paired with CLI Phone at {agent.address}" in paired.stdout

    info = run_cli_json("info", agent.address)
    assert info["device_id"] == agent.device_id and info["name"] == "CLI Phone"
    assert info["cpu"]["cores"] >= 1 and any(r["name"] == "onnxruntime" for r in info["runtimes"])
    by_name = run_cli("info", "CLI Phone")
    assert by_name.returncode == 0 and "device id" in by_name.stdout


def test_the_cli_without_a_pairing_says_how_to_pair(start_agent):
    agent = start_agent()
    done = run_cli("info", agent.address, "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"].startswith("the device")
    assert f"workbench device pair {agent.address} --code NNNNNN" in done.stderr
    assert "Traceback" not in done.stderr
