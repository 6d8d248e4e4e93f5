"""``workbench device …`` as a user types it, each command in a new process: push, run, bench,
list, and an agent killed in the middle of a run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import cli_env, run_cli, run_cli_json


@pytest.fixture
def cli_paired_agent(start_agent):
    """An agent the CLI paired with (its secret in the keyring the child processes share)."""
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
