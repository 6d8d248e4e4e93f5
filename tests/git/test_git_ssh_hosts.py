"""Trusting an SSH remote's host key, against the real sshd the tests start."""

from __future__ import annotations

import subprocess

import pytest

from tests.services.sshd import sshd_server  # noqa: F401
from workbench.git import GitError
from workbench.git.ssh_hosts import scan_host_key, ssh_host_of, trust_host_key


def test_ssh_remote_urls_give_their_host_and_port():
    assert ssh_host_of("ssh://git@127.0.0.1:2222/srv/repo.git") == ("127.0.0.1", 2222)
    assert ssh_host_of("git@example.org:team/repo.git") == ("example.org", 22)
    assert ssh_host_of("file:///srv/repo.git") is None
    assert ssh_host_of("/srv/repo.git") is None


def test_a_scanned_key_once_trusted_lets_strict_ssh_connect(sshd_server, tmp_path):  # noqa: F811
    key = scan_host_key(sshd_server.host, sshd_server.port)
    assert key.fingerprint.startswith("SHA256:")
    known_hosts = tmp_path / "ssh" / "known_hosts"
    strict = ["ssh", "-F", "/dev/null", "-i", str(sshd_server.client_key), "-p", str(sshd_server.port),
              "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
              "-o", f"UserKnownHostsFile={known_hosts}", f"{sshd_server.user}@{sshd_server.host}", "true"]
    assert subprocess.run(strict, capture_output=True).returncode != 0  # not trusted yet
    trust_host_key(key, known_hosts)
    trust_host_key(key, known_hosts)  # twice adds it once
    assert len(known_hosts.read_text().splitlines()) == 1
    assert subprocess.run(strict, capture_output=True, timeout=30).returncode == 0


def test_a_port_with_no_ssh_server_is_a_clear_error(sshd_server):  # noqa: F811
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    free_port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(GitError, match="did not"):
        scan_host_key("127.0.0.1", free_port)
