"""Pairing with a device as a user does: the code the agent prints, a wrong code refused with
the attempts left, this computer's key and the device's pin kept in the keyring (or, with no
keyring, in a file only the user reads, said once), a changed device certificate refused, and a
later process that needs no code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from workbench.device.errors import (
    CertificateChanged,
    DeviceError,
    DeviceUnreachable,
    NotPaired,
    PairingRefused,
)
from workbench.device.host_keys import PASSPHRASE_NAME, PIN_PREFIX, SECRETS_FILE, SERVICE
from workbench.device.link import DeviceLink, pair_device
from workbench.device.paired import PairedDevices
from workbench_device.tls import make_identity

from .conftest import AgentProcess, free_port, run_cli, run_cli_json


def _files_under(*folders: Path):
    for folder in folders:
        for root, _, names in os.walk(folder):
            for name in names:
                yield Path(root) / name


def _config_dir() -> Path:
    return Path(os.environ["WORKBENCH_CONFIG_DIR"])


def _agent_fingerprint(agent) -> str:
    import ssl

    from workbench_device.tls import fingerprint

    pem = (agent.data_dir / "link-cert.pem").read_text()
    return fingerprint(ssl.PEM_cert_to_DER_cert(pem))


def test_pairing_with_the_printed_code_keeps_the_key_and_the_pin_in_the_keyring(
        start_agent, private_keyring_and_agent, tmp_path):
    agent = start_agent(name="Bench Phone")
    device = pair_device(agent.address, agent.code)

    assert (device.name, device.device_id, device.port) == ("Bench Phone", agent.device_id, agent.port)
    kept = private_keyring_and_agent.passwords
    assert kept[(SERVICE, PIN_PREFIX + agent.device_id)] == _agent_fingerprint(agent)
    passphrase = kept[(SERVICE, PASSPHRASE_NAME)]
    assert len(passphrase) >= 32
    saved = json.loads((_config_dir() / "devices.json").read_text())
    assert [d["device_id"] for d in saved["devices"]] == [agent.device_id]
    assert saved["devices"][0]["host"] == "127.0.0.1" and saved["devices"][0]["last_seen"]
    assert not (_config_dir() / SECRETS_FILE).exists()  # a keyring works: no fallback file
    key_file = _config_dir() / "device-link" / "link-key.pem"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert b"ENCRYPTED PRIVATE KEY" in key_file.read_bytes()  # useless without the keyring
    workbench_files = list(_files_under(_config_dir(), Path(os.environ["WORKBENCH_DATA_DIR"])))
    assert not [f for f in workbench_files if passphrase.encode() in f.read_bytes()]

    with DeviceLink.open(agent.address) as link:
        assert link.info()["device_id"] == agent.device_id


def test_with_no_keyring_pairing_push_and_run_work_and_say_once_where_the_keys_went(
        start_agent, digits_onnx):
    keyring.set_keyring(fail.Keyring())  # the fixture puts its own keyring back afterwards
    agent = start_agent(name="Keyless Phone")
    notices: list[str] = []
    devices = PairedDevices(on_notice=notices.append)
    pair_device(agent.address, agent.code, devices)

    fallback = _config_dir() / SECRETS_FILE
    assert len(notices) == 1 and str(fallback) in notices[0]
    assert fallback.stat().st_mode & 0o777 == 0o600
    assert json.loads(fallback.read_text())[PIN_PREFIX + agent.device_id] == _agent_fingerprint(agent)

    again = PairedDevices(on_notice=notices.append)  # a later process: nothing more is said
    with DeviceLink.open(agent.address, again) as link:
        assert link.push(digits_onnx).size == digits_onnx.stat().st_size
    assert len(notices) == 1


def test_require_keyring_refuses_the_file_before_a_code_is_spent(start_agent):
    keyring.set_keyring(fail.Keyring())
    (_config_dir()).mkdir(parents=True, exist_ok=True)
    (_config_dir() / "settings.toml").write_text("[devices]\nrequire_keyring = true\n")
    agent = start_agent()
    with pytest.raises(DeviceError) as refused:
        pair_device(agent.address, agent.code)
    assert "require_keyring" in str(refused.value)
    assert not (_config_dir() / SECRETS_FILE).exists()
    (_config_dir() / "settings.toml").write_text("[devices]\nrequire_keyring = false\n")
    assert pair_device(agent.address, agent.code)  # the code was not spent


def test_a_host_key_file_others_can_read_is_refused_with_the_fix(start_agent):
    agent = start_agent()
    pair_device(agent.address, agent.code)
    key_file = _config_dir() / "device-link" / "link-key.pem"
    key_file.chmod(0o644)
    with pytest.raises(DeviceError) as refused:
        DeviceLink.open(agent.address)
    assert f"chmod 600 {key_file}" in str(refused.value)
    key_file.chmod(0o600)
    with DeviceLink.open(agent.address) as link:
        assert link.info()["device_id"] == agent.device_id


def test_a_device_whose_certificate_changed_is_refused_with_how_to_pair_again(start_agent):
    agent = start_agent(name="Swapped Phone")
    pair_device(agent.address, agent.code)
    pinned = _agent_fingerprint(agent)
    agent.stop()
    make_identity(agent.data_dir / "link-cert.pem", agent.data_dir / "link-key.pem", "impostor")
    restarted = AgentProcess(agent.data_dir, "Swapped Phone", False, "--port", str(agent.port))
    try:
        with pytest.raises(CertificateChanged) as refused:
            DeviceLink.open("Swapped Phone")
        message = str(refused.value)
        assert "The certificate of Swapped Phone" in message and "has changed" in message
        assert pinned[:4] in message.replace(":", "")[:400]
        assert 'workbench device forget "Swapped Phone"' in message
        assert "workbench device pair" in message
        assert PairedDevices().pin(agent.device_id) == pinned  # never a silent re-pair
    finally:
        restarted.stop()


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
        assert "does not know this computer" in str(error.value)
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
    assert devices.list() == [] and devices.pin(agent.device_id) is None
    assert list(private_keyring_and_agent.passwords) == [(SERVICE, PASSPHRASE_NAME)]


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
