"""ClusterConnection against a real sshd: keys, passphrases, host keys, jump hosts, commands,
SFTP, cut connections, the profile checks and `workbench cluster test`."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.cluster.conftest import trust_host_of
from tests.services.sshd import make_key, start_sshd, stop_sshd_process
from workbench.cli import cli
from workbench.cluster import checks
from workbench.cluster.connection import ClusterConnection, CommandResult
from workbench.cluster.errors import (AuthenticationFailed, ClusterError, CommandFailed, CommandTimedOut,
                                      ConnectionLost, HostKeyChanged, UnknownHostKey)
from workbench.cluster.host_keys import workbench_known_hosts
from workbench.cluster.profiles import save_profile

pytestmark = pytest.mark.slow

PASSPHRASE = "correct horse battery"
VENV_ACTIVATE = Path(sys.executable).parent / "activate"


@pytest.fixture
def own_sshd():
    """An sshd of this test alone: its only child processes serve this test's connections."""
    folder = Path(tempfile.mkdtemp(prefix="wb-sshd-", dir="/tmp"))
    server = start_sshd(folder / "sshd")
    yield server
    stop_sshd_process(server.process)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def locked_key(tmp_path, sshd_server) -> Path:
    """A passphrase-protected key the session's sshd accepts."""
    key = tmp_path / "locked_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-C", "locked", "-f", str(key)],
                   check=True)
    sshd_server.authorize(key.with_suffix(".pub").read_text())
    return key


@pytest.fixture
def ssh_agent(monkeypatch):
    """A real ssh-agent for this test (SSH_AUTH_SOCK points at it); yields ``add(key)``."""
    folder = Path(tempfile.mkdtemp(prefix="wb-agent-", dir="/tmp"))  # a socket path must stay short
    socket_path = folder / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not socket_path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
    askpass = folder / "askpass"
    askpass.write_text(f"#!/bin/sh\necho '{PASSPHRASE}'\n")
    askpass.chmod(0o700)

    def add(key: Path) -> None:
        env = {**os.environ, "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"}
        subprocess.run(["ssh-add", str(key)], env=env, stdin=subprocess.DEVNULL, check=True, capture_output=True,
                       timeout=30)

    yield add
    agent.terminate()
    agent.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def host_fingerprint(server) -> str:
    listed = subprocess.run(["ssh-keygen", "-lf", str(server.folder / "host_ed25519.pub")], capture_output=True,
                            text=True, check=True)
    return listed.stdout.split()[1]


def wait_for_file(path: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def cut_connections(server) -> None:
    """End the sshd processes serving connections, as a network failure would."""
    children = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True).stdout.split()
    assert children, "no sshd child serves a connection"
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)


def end_process(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------------------------------------
# Logging in


def test_connects_with_a_key_file_and_runs_commands_under_a_login_shell_with_the_profile_env(cluster_profile_for,
                                                                                             sshd_server):
    profile = cluster_profile_for(sshd_server, env={"WB_SPACES": "a b  'c' $HOME \"d\"", "WB_EMPTY": ""})
    with ClusterConnection(profile) as conn:
        assert conn.is_alive
        assert conn.host_key.fingerprint == host_fingerprint(sshd_server)
        assert conn.run("echo out; echo err >&2; exit 3", check=False) == CommandResult(3, "out\n", "err\n")
        assert conn.run('printf "%s|%s" "$WB_SPACES" "${WB_EMPTY-unset}"').stdout == "a b  'c' $HOME \"d\"|"
        assert conn.run("shopt -q login_shell && echo login").stdout == "login\n"
        assert conn.run("cat; echo stdin was empty", timeout=60).stdout == "stdin was empty\n"
        assert conn.run("x=1\nif [ $x = 1 ]; then\n  echo 'multi line'\nfi").stdout == "multi line\n"
        big = conn.run("head -c 3000000 /dev/zero | tr '\\0' x; head -c 1000000 /dev/zero | tr '\\0' y >&2")
        assert (len(big.stdout), len(big.stderr)) == (3_000_000, 1_000_000)  # both streams drained as they come
        with pytest.raises(CommandFailed, match=r"`ls /nonexistent` exited with status 2 on test: .*No such file") as failed:
            conn.run("ls /nonexistent")
        assert failed.value.result.code == 2
    assert not conn.is_alive


def test_a_command_past_its_timeout_is_stopped_on_the_cluster(cluster_profile, tmp_path):
    pid_file = tmp_path / "pid"
    with ClusterConnection(cluster_profile) as conn:
        started = time.monotonic()
        # 8 s: time enough for the shell to start and say so on a loaded machine (its first line
        # is asserted), well short of the command's 60.
        with pytest.raises(CommandTimedOut, match="did not finish within 8 s") as timed_out:
            conn.run(f"echo started; echo $$ > {pid_file}; sleep 60", timeout=8)
        assert time.monotonic() - started < 45
        assert timed_out.value.stdout == "started\n"
        pid = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists(), "the timed-out command still runs"
        assert conn.run("echo still usable", timeout=60).stdout == "still usable\n"


def test_a_key_the_server_refuses_says_where_the_public_key_must_go(cluster_profile_for, sshd_server, tmp_path):
    stranger = make_key(tmp_path / "stranger")
    profile = cluster_profile_for(sshd_server, key_file=str(stranger))
    with pytest.raises(AuthenticationFailed, match=f"refused the key {stranger}.*authorized_keys"):
        ClusterConnection(profile).connect()


def test_nothing_listening_is_reported_with_what_to_check(cluster_profile_for, sshd_server):
    profile = cluster_profile_for(sshd_server, port=1)
    with pytest.raises(ClusterError, match="127.0.0.1:1 refused the connection.*host and port"):
        ClusterConnection(profile).connect()


def test_a_passphrase_from_the_keyring_unlocks_the_key(cluster_profile_for, sshd_server, locked_key,
                                                      private_keyring_and_agent):
    profile = cluster_profile_for(sshd_server, key_file=str(locked_key))
    with pytest.raises(AuthenticationFailed, match=f"needs its passphrase.*ssh-add {locked_key}"
                                                   f".*workbench cluster passphrase test"):
        ClusterConnection(profile).connect()

    private_keyring_and_agent.set_password("workbench-ssh", str(locked_key), "wrong one")
    with pytest.raises(AuthenticationFailed, match="passphrase from the OS keyring does not unlock"):
        ClusterConnection(profile).connect()

    private_keyring_and_agent.set_password("workbench-ssh", str(locked_key), PASSPHRASE)
    with ClusterConnection(profile) as conn:
        assert conn.run("echo in").stdout == "in\n"
    with ClusterConnection(profile, passphrase=PASSPHRASE) as conn:  # given directly, as a dialog would
        assert conn.is_alive


def test_the_ssh_agent_logs_in_with_a_locked_key_or_without_a_key_file(cluster_profile_for, sshd_server,
                                                                        locked_key, ssh_agent):
    ssh_agent(locked_key)
    with ClusterConnection(cluster_profile_for(sshd_server, key_file=str(locked_key))) as conn:
        assert conn.run("echo via agent").stdout == "via agent\n"
    with ClusterConnection(cluster_profile_for(sshd_server, key_file="")) as conn:
        assert conn.run("echo agent only").stdout == "agent only\n"


def test_without_key_file_or_agent_the_message_says_how_to_log_in(cluster_profile_for, sshd_server):
    with pytest.raises(AuthenticationFailed, match="no key file in the profile and no ssh-agent key"):
        ClusterConnection(cluster_profile_for(sshd_server, key_file="")).connect()


# ---------------------------------------------------------------------------------------------
# Host keys


def test_an_unknown_host_is_refused_then_trusted_with_accept_new_host_and_remembered(cluster_profile_for,
                                                                                     sshd_server):
    profile = cluster_profile_for(sshd_server, name="fresh", trust=False)
    fingerprint = host_fingerprint(sshd_server)
    with pytest.raises(UnknownHostKey) as unknown:
        ClusterConnection(profile).connect()
    assert unknown.value.fingerprint == fingerprint
    assert fingerprint in str(unknown.value) and "`workbench cluster test fresh --trust`" in str(unknown.value)
    assert not workbench_known_hosts().exists()

    with ClusterConnection(profile, accept_new_host=True) as conn:
        assert conn.run("echo trusted").stdout == "trusted\n"
    assert f"[127.0.0.1]:{sshd_server.port} ssh-ed25519 " in workbench_known_hosts().read_text()
    with ClusterConnection(profile) as conn:  # remembered: no flag needed any more
        assert conn.is_alive


def test_trusting_the_key_an_unknown_host_error_showed(cluster_profile_for, sshd_server):
    from workbench.cluster.host_keys import remember_host_key

    profile = cluster_profile_for(sshd_server, trust=False)
    try:
        ClusterConnection(profile).connect()
    except UnknownHostKey as unknown:
        remember_host_key(unknown)
    with ClusterConnection(profile) as conn:
        assert conn.is_alive


def test_a_changed_host_key_is_refused_naming_the_file_and_line(cluster_profile_for, sshd_server, own_sshd):
    # own_sshd has another host key: record it for the session sshd's address, as if the key changed.
    known = workbench_known_hosts()
    known.parent.mkdir(parents=True, exist_ok=True)
    other_key = " ".join((own_sshd.folder / "host_ed25519.pub").read_text().split()[:2])
    known.write_text(f"unrelated.example.org {other_key}\n[127.0.0.1]:{sshd_server.port} {other_key}\n")
    before = known.read_text()
    profile = cluster_profile_for(sshd_server, trust=False)
    for accept in (False, True):
        with pytest.raises(HostKeyChanged) as changed:
            ClusterConnection(profile, accept_new_host=accept).connect()
        message = str(changed.value)
        assert f"line 2 of {known}" in message and host_fingerprint(sshd_server) in message
        assert (changed.value.known_hosts, changed.value.line) == (str(known), 2)
        assert "`workbench cluster test test --trust`" in message
    assert known.read_text() == before


def test_a_key_in_the_users_own_hashed_known_hosts_is_trusted_without_writing_workbenchs(cluster_profile_for,
                                                                                         sshd_server, tmp_path):
    users = tmp_path / "ssh_known_hosts"
    trust_host_of(sshd_server, users)
    subprocess.run(["ssh-keygen", "-H", "-f", str(users)], check=True, capture_output=True)
    profile = cluster_profile_for(sshd_server, trust=False)
    with ClusterConnection(profile, user_known_hosts_file=users) as conn:
        assert conn.is_alive
    assert not workbench_known_hosts().exists()


def test_a_jump_host_carries_the_connection(cluster_profile_for, sshd_server):
    # The same sshd serves as its own bastion: the login goes through a direct-tcpip channel.
    jump = f"{sshd_server.user}@{sshd_server.host}:{sshd_server.port}"
    with ClusterConnection(cluster_profile_for(sshd_server, jump_host=jump)) as conn:
        assert conn._jump is not None and conn._jump.is_active()
        assert conn.run("echo $SSH_CONNECTION").stdout.split()[0] == "127.0.0.1"
        assert conn.sftp().normalize(".")
    with pytest.raises(ClusterError, match="jump host .* could not connect to 127.0.0.1:1"):
        ClusterConnection(cluster_profile_for(sshd_server, port=1, jump_host=jump)).connect()


# ---------------------------------------------------------------------------------------------
# Files and dropped connections


def test_sftp_moves_files_intact_with_large_requests(cluster_profile, tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 12345)
    local, back = tmp_path / "local.bin", tmp_path / "back.bin"
    local.write_bytes(data)
    with ClusterConnection(cluster_profile) as conn:
        sftp = conn.sftp()
        assert sftp is conn.sftp()  # one client per connection
        assert sftp.request_size > 32 * 1024  # OpenSSH said how much it serves per request
        remote = str(tmp_path / "remote.bin")
        seen = []
        sftp.put(str(local), remote, callback=lambda done, total: seen.append(done))
        sftp.get(remote, str(back))
        assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(data).digest()
        assert seen[-1] == len(data)
        with sftp.open(remote, "rb") as handle:
            handle.seek(len(data) - 5)
            assert handle.read() == data[-5:]
        with pytest.raises(FileNotFoundError):  # a missing file is not a lost connection
            sftp.stat(str(tmp_path / "missing"))
        assert conn.remote_path("~/x") == conn.home.rstrip("/") + "/x"


def test_a_connection_cut_mid_command_raises_connection_lost_and_reconnect_works(cluster_profile_for, own_sshd,
                                                                                 tmp_path):
    pid_file = tmp_path / "pid"
    conn = ClusterConnection(cluster_profile_for(own_sshd)).connect()
    cutter = threading.Thread(target=lambda: (wait_for_file(pid_file), cut_connections(own_sshd)))
    cutter.start()
    try:
        started = time.monotonic()
        with pytest.raises(ConnectionLost, match="was lost while running `echo.*try again"):
            conn.run(f"echo $$ > {pid_file}; sleep 60")
        assert time.monotonic() - started < 30
    finally:
        cutter.join()
        end_process(int(pid_file.read_text()))
    assert not conn.is_alive
    with pytest.raises(ConnectionLost):
        conn.run("true")
    conn.reconnect()
    assert conn.run("echo back").stdout == "back\n"
    conn.close()


def test_a_command_safe_to_repeat_runs_again_on_a_new_connection_after_one_cut(cluster_profile_for, own_sshd,
                                                                              tmp_path):
    runs = tmp_path / "runs"
    conn = ClusterConnection(cluster_profile_for(own_sshd)).connect()
    first_transport = conn._transport
    cutter = threading.Thread(target=lambda: (wait_for_file(runs), cut_connections(own_sshd)))
    cutter.start()
    # The first run is cut while it sleeps; the second, on a new connection, finds the file.
    command = f"if [ -e {runs} ]; then echo again; else echo $$ > {runs}; sleep 60; fi"
    try:
        result = conn.run(command, retry_if_dropped=True)
    finally:
        cutter.join()
        end_process(int(runs.read_text()))
    assert result.stdout == "again\n" and conn.is_alive and conn._transport is not first_transport

    twice = tmp_path / "twice"
    cutter = threading.Thread(target=lambda: [(wait_for_file(twice / str(n)), cut_connections(own_sshd))
                                              for n in (1, 2)])
    cutter.start()
    try:
        with pytest.raises(ConnectionLost, match="was lost while running"):
            conn.run(f"mkdir -p {twice}; n=$(ls {twice} | wc -l); echo $$ > {twice}/$((n + 1)); sleep 60",
                     retry_if_dropped=True)
    finally:
        cutter.join()
        for pid_file in twice.iterdir():
            end_process(int(pid_file.read_text()))
    assert sorted(path.name for path in twice.iterdir()) == ["1", "2"]
    conn.close()


@pytest.mark.parametrize("direction", ["put", "get"])
def test_a_connection_cut_mid_transfer_raises_connection_lost(cluster_profile_for, own_sshd, tmp_path, direction):
    big = tmp_path / "big.bin"  # the "cluster" is this machine: the same file serves both directions
    big.write_bytes(os.urandom(40 * 1024 * 1024))
    conn = ClusterConnection(cluster_profile_for(own_sshd)).connect()
    cut = []

    def cut_after_some(done: int, _total: int) -> None:
        if done >= 4 * 1024 * 1024 and not cut:
            cut.append(done)
            cut_connections(own_sshd)

    transfer = getattr(conn.sftp(), direction)
    started = time.monotonic()
    with pytest.raises(ConnectionLost, match="moving files.*try again"):
        transfer(str(big), str(tmp_path / "copy.bin"), callback=cut_after_some)
    assert cut and not conn.is_alive and time.monotonic() - started < 30
    conn.reconnect()
    assert conn.sftp().stat(str(big)).st_size == big.stat().st_size
    conn.close()


# ---------------------------------------------------------------------------------------------
# Checking a profile


def test_a_ready_cluster_passes_every_check(cluster_profile_for, sshd_server):
    profile = cluster_profile_for(sshd_server, python_setup=f"source {VENV_ACTIVATE}")
    seen = []
    results = checks.check_profile(profile, on_check=seen.append)
    assert [c.name for c in results] == list(checks.CHECK_NAMES) and seen == results
    assert [c for c in results if not c.ok] == []
    by_name = {c.name: c for c in results}
    assert Path(profile.work_root).is_dir() and str(Path(profile.work_root).resolve()) in by_name["work root"].detail
    assert by_name["torch"].detail.startswith("torch ")
    assert checks.test_profile(profile) == []


def test_cluster_test_prints_each_check_and_trusts_on_request(cluster_profile_for, sshd_server, tmp_path):
    profile = cluster_profile_for(sshd_server, name="lab", trust=False, work_root="/proc/no-such-place",
                                  data_root=str(tmp_path / "data"))
    save_profile(profile)
    runner = CliRunner()

    first = runner.invoke(cli, ["cluster", "test", "lab"])
    assert first.exit_code == 1
    lines = first.output.splitlines()
    assert lines[0] == f"Testing lab ({profile.destination})"
    assert lines[1].split()[:2] == ["failed", "connect"] and host_fingerprint(sshd_server) in lines[1]
    assert "`workbench cluster test lab --trust`" in lines[2]
    assert sum(line.split()[0] == "skipped" for line in lines[3:9]) == 6
    assert lines[-1] == "workbench: 1 of 7 checks failed for lab (see above)."

    second = runner.invoke(cli, ["cluster", "test", "lab", "--trust"])
    assert second.exit_code == 1
    status = {line.split()[1]: line.split()[0] for line in second.output.splitlines()[1:]
              if line.split() and line.split()[0] in ("ok", "failed")}
    assert status["connect"] == "ok" and status["data"] == "ok" and status["git"] == "ok"
    assert status["work"] == "failed"
    assert "workbench cluster edit lab --work-root FOLDER" in second.output
    assert workbench_known_hosts().exists()

    as_json = runner.invoke(cli, ["cluster", "test", "lab", "--json"])
    assert as_json.exit_code == 1 and '"name": "work root"' in as_json.output


def _terminal_session(args: list[str]):
    """``workbench ARGS`` on a pseudo-terminal: ``(read_until(text) -> output so far, answer(line),
    finish() -> (all output, exit status))``."""
    import pty
    import select

    master, child_side = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "workbench", *args], stdin=child_side, stdout=child_side,
                               stderr=child_side, close_fds=True)
    os.close(child_side)
    output = bytearray()

    def read(until: str | None, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if until is not None and until in output.decode(errors="replace"):
                break
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the command ended and closed the terminal
                    chunk = b""
                if not chunk:
                    break
                output.extend(chunk)
        else:
            raise AssertionError(f"no {until!r} within {timeout} s; the terminal shows:\n{output.decode()}")
        return output.decode(errors="replace").replace("\r\n", "\n")

    def finish() -> tuple[str, int]:
        text = read(None)
        os.close(master)
        return text, process.wait(timeout=60)

    return read, lambda line: os.write(master, line.encode() + b"\n"), finish


def test_cluster_test_at_a_terminal_asks_about_a_new_host_key_first_then_reports_once(cluster_profile_for,
                                                                                       sshd_server):
    profile = cluster_profile_for(sshd_server, name="lab", trust=False, python_setup=f"source {VENV_ACTIVATE}")
    save_profile(profile)
    read, answer, finish = _terminal_session(["cluster", "test", "lab"])

    asked = read("Trust this key and remember it?")
    assert asked.splitlines()[:3] == [
        f"Testing lab ({profile.destination})",
        f"The authenticity of host {sshd_server.host}:{sshd_server.port} can't be established.",
        f"Its ssh-ed25519 key fingerprint is {host_fingerprint(sshd_server)}."]
    answer("y")
    output, status = finish()

    assert status == 0, output
    report = output.split("remember it?", 1)[1].splitlines()[1:]
    assert [line.split()[:2] for line in report[:2]] == [["ok", "connect"], ["ok", "work"]]
    assert sum(line.split()[1:2] == ["connect"] for line in output.splitlines() if line.split()) == 1
    assert "failed" not in output and report[-1] == "lab is ready for runs."
    assert workbench_known_hosts().exists()


def test_cluster_test_at_a_terminal_reports_the_untrusted_key_once_when_it_is_refused(cluster_profile_for,
                                                                                       sshd_server):
    save_profile(cluster_profile_for(sshd_server, name="lab", trust=False))
    read, answer, finish = _terminal_session(["cluster", "test", "lab"])
    assert "failed" not in read("Trust this key and remember it?")
    answer("n")
    output, status = finish()
    assert status == 1
    after = output.split("remember it?", 1)[1]
    assert after.count("failed  connect") == 1 and "skipped" in after
    assert "workbench: 1 of 7 checks failed for lab (see above)." in after
    assert not workbench_known_hosts().exists()
