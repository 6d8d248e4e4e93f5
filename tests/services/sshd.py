"""A real OpenSSH server on 127.0.0.1 for tests: Git over ssh://, and later the cluster backends.

The fixture is registered for every test by ``tests/conftest.py`` (``pytest_plugins``): ask for
``sshd_server`` by name. Importing it into a test module still works, but then that module gets a
server of its own instead of the session's one. The server runs ``/usr/sbin/sshd -D`` with
its own host key, config, log and authorised-keys file in a temporary folder, on a free port,
and lets the current user in with a fresh ed25519 key. A missing sshd fails the test with what to
install: CI installs openssh-server, so a silent skip would hide a broken set-up.
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
_START_TIMEOUT = 15.0


@dataclass
class SshServer:
    """A running sshd: where it listens, who may log in, and with which key."""

    host: str
    port: int
    user: str
    client_key: Path
    """Private key (no passphrase) that the server accepts for ``user``."""
    folder: Path
    """Holds the config, host key, log and authorised keys."""
    authorized_keys: Path
    log: Path
    process: subprocess.Popen

    @property
    def client_public_key(self) -> str:
        return self.client_key.with_suffix(".pub").read_text().strip()

    @property
    def ssh_command(self) -> str:
        """An ``ssh`` command line (for GIT_SSH_COMMAND) that logs in with ``client_key``."""
        return self.ssh_command_for(self.client_key)

    def ssh_command_for(self, key: Path | str, port: int | None = -1) -> str:
        """The same command with another private key (for example one the server does not accept).

        ``port=None`` leaves ``-p`` out, so the port in a ``ssh://host:port/`` URL counts: ssh takes
        the first ``-p`` it is given, and git puts the URL's after the command's own.
        ``-F /dev/null`` and ``IdentitiesOnly`` keep the tester's own ssh config and agent out."""
        port_option = "" if port is None else f"-p {self.port if port == -1 else port} "
        return (f"ssh -F /dev/null -i {shlex.quote(str(key))} {port_option}-o IdentitiesOnly=yes "
                f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes "
                f"-o LogLevel=ERROR")

    def url(self, path: Path | str) -> str:
        """An ``ssh://user@host:port/path`` URL for a path on this machine."""
        return f"ssh://{self.user}@{self.host}:{self.port}{Path(path).resolve()}"

    def authorize(self, public_key: str) -> None:
        """Let another key in as ``user``."""
        with self.authorized_keys.open("a") as keys:
            keys.write(public_key.strip() + "\n")

    def run(self, command: str, key: Path | str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run ``command`` on the server over ssh, as a client would."""
        argv = shlex.split(self.ssh_command_for(key or self.client_key)) + [f"{self.user}@{self.host}", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def make_key(path: Path, comment: str = "workbench-test") -> Path:
    """A new ed25519 key pair without a passphrase at ``path`` (and ``path.pub``)."""
    _require("ssh-keygen", "openssh-client")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True)
    return path


def start_sshd(folder: Path) -> SshServer:
    """Start sshd with everything under ``folder``; wait until it answers with its banner."""
    if not os.path.exists(SSHD):
        pytest.fail(f"{SSHD} is missing: install the OpenSSH server (apt-get install openssh-server) "
                    f"to run the tests that need a real SSH server.", pytrace=False)
    _require("ssh", "openssh-client")
    folder.mkdir(parents=True, exist_ok=True)
    # sshd refuses to start without its privilege-separation folder (only root can make it).
    try:
        os.makedirs("/run/sshd", exist_ok=True)
    except PermissionError:
        pass
    host_key = make_key(folder / "host_ed25519", comment="workbench-test-host")
    client_key = make_key(folder / "client_ed25519")
    authorized_keys = folder / "authorized_keys"
    authorized_keys.write_text(client_key.with_suffix(".pub").read_text())
    authorized_keys.chmod(0o600)
    log = folder / "sshd.log"
    user = getpass.getuser()
    # Sessions get a home of their own: the machine's login scripts (a pyenv init in root's
    # .bashrc, for one) would otherwise run in every `bash -lc` of the tests, slowly, and a
    # session cut mid-start can leave their lock files behind for the next ones.
    home = folder / "home"
    home.mkdir(exist_ok=True)

    last_log = ""
    for _ in range(3):  # another process may take the free port between our check and sshd's bind
        port = _free_port()
        config = folder / "sshd_config"
        config.write_text("\n".join([
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {folder / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized_keys}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "Subsystem sftp internal-sftp",
            f"SetEnv HOME={home}",
            "",
        ]))
        log.write_text("")
        # -E sends the log to a file; early start-up errors still go to stderr, so that goes there too.
        with (folder / "sshd.stderr").open("wb") as stderr:
            process = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)],
                                       stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        if _wait_for_banner(process, port):
            return SshServer(host="127.0.0.1", port=port, user=user, client_key=client_key, folder=folder,
                             authorized_keys=authorized_keys, log=log, process=process)
        stop_sshd_process(process)
        last_log = log.read_text(errors="replace") + (folder / "sshd.stderr").read_text(errors="replace")
        if "Address already in use" not in last_log:
            break
    pytest.fail(f"sshd did not start on 127.0.0.1. Its log:\n{last_log}", pytrace=False)


def stop_sshd_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory):
    """A real sshd on 127.0.0.1 for the whole session (see ``SshServer``); stopped at the end."""
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        stop_sshd_process(server.process)


def _require(program: str, package: str) -> None:
    if shutil.which(program) is None:
        pytest.fail(f"{program} is missing: install {package} (apt-get install {package}).", pytrace=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_banner(process: subprocess.Popen, port: int) -> bool:
    """True once the port accepts and sends the SSH banner; False if sshd exits first."""
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as connection:
                if connection.recv(64).startswith(b"SSH-"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
