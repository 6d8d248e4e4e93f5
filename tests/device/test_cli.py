"""``workbench device …`` as a user types it, each command in a new process: pairing that names
the certificate it pins, push, run, bench, list, a machine with no keyring, a device whose
certificate changed, and an agent killed in the middle of a run."""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from workbench_device.tls import fingerprint, make_identity, short_fingerprint

from .conftest import AgentProcess, cli_env, run_cli, run_cli_json

NO_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
FALLBACK_NOTICE = "No OS keyring is usable here"


def _agent_fingerprint(agent) -> str:
    pem = (agent.data_dir / "link-cert.pem").read_text()
    return fingerprint(ssl.PEM_cert_to_DER_cert(pem))


@pytest.fixture
def cli_paired_agent(start_agent):
    """An agent the CLI paired with (its pin in the keyring the child processes share)."""
    agent = start_agent(name="Shell Phone")
    done = run_cli("pair", agent.address, "--code", agent.code)
    assert done.returncode == 0, done.stderr
    return agent


def test_pushing_from_the_cli_twice_sends_nothing_the_second_time(cli_paired_agent, digits_onnx):
    first = run_cli_json("push", cli_paired_agent.address, str(digits_onnx))
    second = run_cli_json("push", "Shell Phone", str(digits_onnx))
    assert first["sent"] == first["size"] == digits_onnx.stat().st_size and not first["skipped"]
    assert second["sent"] == 0 and second["skipped"] and second["sha256"] == first["sha256"]
    again = run_cli("push", cli_paired_agent.address, str(digits_onnx))
    sha = first["sha256"][:12]
    assert f"Shell Phone already has digits.onnx (sha256 {sha}…): nothing sent" in again.stdout
    assert "Pushing" not in again.stderr  # no progress of bytes that are not sent


def test_a_first_push_shows_its_progress(cli_paired_agent, digits_onnx):
    done = run_cli("push", cli_paired_agent.address, str(digits_onnx))
    assert done.returncode == 0, done.stderr
    assert "Pushing digits.onnx to Shell Phone" in done.stderr and "Pushed digits.onnx" in done.stdout


def test_bench_gives_p50_p90_p99(cli_paired_agent, digits_onnx):
    figures = run_cli_json("bench", cli_paired_agent.address, str(digits_onnx), "--runs", "30",
                           "--warmup", "3")
    assert figures["runs"] == 30 and figures["runtime"] == "onnxruntime"
    assert 0 < figures["p50_ms"] <= figures["p90_ms"] <= figures["p99_ms"]
    assert figures["init_ms"] > 0 and figures["peak_rss_bytes"] > 0
    text = run_cli("bench", cli_paired_agent.address, str(digits_onnx), "--runs", "10")
    assert text.returncode == 0, text.stderr
    assert "p50 ms" in text.stdout and "p90 ms" in text.stdout and "p99 ms" in text.stdout


def test_run_shows_the_outputs_of_sample_inputs(cli_paired_agent, digits_onnx, digits_npz, tmp_path):
    saved = tmp_path / "outputs.npz"
    result = run_cli_json("run", cli_paired_agent.address, str(digits_onnx), "--npz",
                          str(digits_npz), "--samples", "6", "--save", str(saved))
    [logits] = result["outputs"]
    assert logits["name"] == "logits" and logits["shape"] == [6, 10]
    assert len(logits["top1"]) == 6 and len(result["labels"]) == 6
    import numpy as np

    assert np.load(saved)["logits"].shape == (6, 10)


def test_killing_the_agent_mid_run_gives_a_clear_error_and_no_traceback(cli_paired_agent,
                                                                        digits_onnx):
    bench = subprocess.Popen(
        [sys.executable, "-m", "workbench", "device", "bench", cli_paired_agent.address,
         str(digits_onnx), "--runs", "100000", "--batch", "2048", "--warmup", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        stdin=subprocess.DEVNULL)
    try:
        seen = []
        for line in bench.stderr:
            seen.append(line)
            if line.startswith("Benchmarking"):
                break
        cli_paired_agent.kill()
        stdout, rest = bench.communicate(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
    stderr = "".join(seen) + rest
    assert bench.returncode == 1
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"workbench: Shell Phone ({cli_paired_agent.address}) stopped answering (")
    assert last.endswith("); is the agent still running?")
    assert stdout == ""


def test_list_shows_paired_devices_online_and_offline(start_agent):
    online, offline = start_agent(name="Online Phone"), start_agent(name="Offline Phone")
    for agent in (online, offline):
        assert run_cli("pair", agent.address, "--code", agent.code).returncode == 0
    offline.stop()
    listed = run_cli_json("list", "--no-browse")
    rows = {d["name"]: d for d in listed["devices"]}
    assert rows["Online Phone"]["status"] == "online" and rows["Online Phone"]["paired"]
    assert rows["Offline Phone"]["status"] == "offline"
    assert rows["Online Phone"]["address"] == online.address
    text = run_cli("list", "--no-browse")
    assert "Online Phone" in text.stdout and "offline" in text.stdout


def test_list_shows_unpaired_devices_announced_on_the_lan(start_agent):
    agent = start_agent(name="Unpaired LAN Phone", mdns=True)
    for _ in range(5):  # the announcement needs a moment of probing after the agent starts
        listed = run_cli_json("list", "--seconds", "3")
        rows = {d["device_id"]: d for d in listed["devices"]}
        if agent.device_id in rows:
            break
    row = rows[agent.device_id]
    assert row["name"] == "Unpaired LAN Phone" and not row["paired"] and row["seen_on_lan"]
    assert row["port"] == agent.port


def test_usage_errors_and_device_errors_are_one_line(start_agent, tmp_path):
    agent = start_agent()
    missing = run_cli("push", agent.address, str(tmp_path / "nothing.onnx"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    no_code = run_cli("pair", agent.address)
    assert no_code.returncode == 1 and "--code" in no_code.stderr
    data = json.loads(run_cli("info", "127.0.0.1:1", "--json").stdout)
    assert "nothing answers at 127.0.0.1:1" in data["error"]


def test_logs_follows_the_device_log(cli_paired_agent):
    import keyring

    from tests.device.keyring_file import FileKeyring
    from workbench.device.link import DeviceLink

    keyring.set_keyring(FileKeyring())  # the CLI's pairing, for this process too (put back after)
    follower = subprocess.Popen(
        [sys.executable, "-m", "workbench", "device", "logs", cli_paired_agent.address, "--count",
         "2", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
        stdin=subprocess.DEVNULL)
    try:
        for _ in range(300):  # each authenticated connection writes a log line
            with DeviceLink.open(cli_paired_agent.address) as link:
                link.info()
            try:
                follower.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
        stdout, stderr = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert len(lines) == 2 and all({"time", "level", "message"} <= set(line) for line in lines)


def test_a_file_that_is_no_whole_model_is_refused_before_anything_is_sent(cli_paired_agent,
                                                                          digits_onnx, tmp_path):
    text = tmp_path / "notes.onnx"
    text.write_text("hello\n")
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(digits_onnx.read_bytes()[: digits_onnx.stat().st_size // 2])
    for command, path, said in (("push", text, "is not a model file: it is a text file"),
                                ("push", truncated, "is a truncated ONNX model"),
                                ("bench", truncated, "is a truncated ONNX model"),
                                ("run", text, "is not a model file")):
        refused = run_cli(command, cli_paired_agent.address, str(path))
        assert refused.returncode == 1, (command, refused.stdout)
        [line] = refused.stderr.strip().splitlines()[-1:]
        assert said in line and "Traceback" not in refused.stderr
        assert "PyTorch" not in line and "TorchScript" not in line, line
    # What a device takes, not every format the model tools read.
    assert ("give an ONNX (.onnx) or MNN (.mnn) model; convert others with "
            "`workbench model convert`") in run_cli("push", cli_paired_agent.address,
                                                    str(text)).stderr
    wrong_runtime = run_cli("bench", cli_paired_agent.address, str(digits_onnx), "--runtime", "mnn")
    assert wrong_runtime.returncode == 1
    assert "the mnn runtime takes MNN models" in wrong_runtime.stderr
    assert not any((cli_paired_agent.data_dir / "models").glob("*"))


def test_info_gives_the_memory_in_the_binary_units_the_devices_panel_shows(cli_paired_agent):
    from workbench.device.units import memory_text

    reported = run_cli_json("info", cli_paired_agent.address)["memory_bytes"]
    text = run_cli("info", cli_paired_agent.address).stdout
    [memory] = [line.split(None, 1)[1] for line in text.splitlines()
                if line.strip().startswith("memory ")]
    assert memory == f"{reported / 2**30:.1f} GiB" == memory_text(reported)


def test_pairing_names_the_certificate_it_pins_and_info_and_list_show_it(start_agent):
    agent = start_agent(name="Pinned Phone")
    expected = _agent_fingerprint(agent)

    paired = run_cli("pair", agent.address, "--code", agent.code)
    assert paired.returncode == 0, paired.stderr
    assert (f"Its certificate {short_fingerprint(expected)} is pinned, kept in the OS keyring"
            in paired.stdout)
    assert FALLBACK_NOTICE not in paired.stderr  # a keyring is usable here

    info = run_cli("info", "Pinned Phone")
    assert f"  certificate {short_fingerprint(expected)}" in info.stdout.splitlines()
    assert run_cli_json("info", agent.address)["cert_fingerprint"] == expected
    [row] = run_cli_json("list", "--no-browse")["devices"]
    assert row["pinned_fingerprint"] == expected

    forgot = run_cli("forget", "Pinned Phone")
    assert forgot.returncode == 0 and "and its pinned certificate" in forgot.stdout
    assert run_cli_json("list", "--no-browse")["devices"] == []
    again = run_cli("info", agent.address)
    assert again.returncode == 1 and "workbench device pair" in again.stderr


def test_without_a_keyring_pair_push_verify_and_bench_work_and_say_so_once(start_agent,
                                                                           digits_onnx,
                                                                           digits_npz):
    agent = start_agent(name="Keyless Phone")
    secrets_file = Path(os.environ["WORKBENCH_CONFIG_DIR"]) / "device-secrets.json"
    model = str(digits_onnx)
    done = [run_cli("pair", agent.address, "--code", agent.code, **NO_KEYRING),
            run_cli("push", "Keyless Phone", model, **NO_KEYRING),
            run_cli("verify", "Keyless Phone", model, "--npz", str(digits_npz), "--samples", "32",
                    "--runs", "5", "--no-record", **NO_KEYRING),
            run_cli("bench", agent.address, model, "--runs", "5", **NO_KEYRING)]

    for command in done:
        assert command.returncode == 0, command.stderr
        assert "Traceback" not in command.stderr
    assert f"kept in {secrets_file}." in done[0].stdout
    assert "PASS" in done[2].stdout
    notices = [line for command in done for line in command.stderr.splitlines()
               if FALLBACK_NOTICE in line]
    assert len(notices) == 1, notices
    [notice] = notices
    assert notice.startswith(FALLBACK_NOTICE) and str(secrets_file) in notice
    assert notice in done[0].stderr.splitlines()  # said when the file was made: at pairing
    assert stat.S_IMODE(secrets_file.stat().st_mode) == 0o600


def test_a_changed_certificate_is_one_line_naming_the_device_and_how_to_pair_again(start_agent):
    agent = start_agent(name="Swapped Phone")
    assert run_cli("pair", agent.address, "--code", agent.code).returncode == 0
    pinned = _agent_fingerprint(agent)
    agent.stop()
    make_identity(agent.data_dir / "link-cert.pem", agent.data_dir / "link-key.pem", "impostor")
    restarted = AgentProcess(agent.data_dir, "Swapped Phone", False, "--port", str(agent.port))
    try:
        refused = run_cli("info", "Swapped Phone")
        assert refused.returncode == 1 and refused.stdout == ""
        [line] = refused.stderr.strip().splitlines()
        assert line.startswith(f"workbench: The certificate of Swapped Phone ({agent.address}) "
                               "has changed")
        assert short_fingerprint(pinned) in line
        assert short_fingerprint(_agent_fingerprint(restarted)) in line
        assert 'workbench device forget "Swapped Phone"' in line
        as_json = json.loads(run_cli("info", agent.address, "--json").stdout)
        assert as_json["code"] == "certificate_changed" and "has changed" in as_json["error"]

        # What the message says to do, when the agent was reset on purpose.
        assert run_cli("forget", "Swapped Phone").returncode == 0
        again = run_cli("pair", agent.address, "--code", restarted.code)
        assert again.returncode == 0, again.stderr
        assert short_fingerprint(_agent_fingerprint(restarted)) in again.stdout
        assert run_cli("info", "Swapped Phone").returncode == 0
    finally:
        restarted.stop()
