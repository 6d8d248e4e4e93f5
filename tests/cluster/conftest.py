"""What every cluster test shares: a keyring and an ssh-agent of its own (never the tester's),
and cluster profiles for a real sshd (``sshd_server`` comes from tests/services/sshd.py through
the root conftest)."""

from __future__ import annotations

from pathlib import Path

import keyring
import keyring.backend
import pytest
from keyring.errors import PasswordDeleteError

from workbench.cluster.host_keys import remember_host_key
from workbench.cluster.profiles import ClusterProfile


class MemoryKeyring(keyring.backend.KeyringBackend):
    """An OS keyring stand-in that lives in this process only (this machine has no Secret Service)."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError(f"no password for {username}")


@pytest.fixture(autouse=True)
def private_keyring_and_agent(monkeypatch):
    """Every cluster test gets an empty in-memory keyring (yielded) and no ssh-agent unless it starts one."""
    previous = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    yield memory
    keyring.set_keyring(previous)


def trust_host_of(server, known_hosts: Path | None = None) -> Path:
    """Record the sshd ``server``'s host key in Workbench's known_hosts (the test's config folder)."""
    host_key = " ".join((server.folder / "host_ed25519.pub").read_text().split()[:2])
    return remember_host_key(f"[{server.host}]:{server.port} {host_key}", known_hosts)


@pytest.fixture
def cluster_profile_for(tmp_path):
    """``build(server, name="test", trust=True, **fields) -> ClusterProfile`` for an sshd
    (``sshd_server`` or one from ``start_sshd``): its host, port, user and client key, work and
    data roots in a fresh temporary folder, scheduler "ssh" (override any field). ``trust``
    records the server's host key first, as a user who accepted it once would have. The profile
    is not saved: ``save_profile`` it for code that looks profiles up by name."""

    def build(server, name: str = "test", trust: bool = True, **fields) -> ClusterProfile:
        remote = tmp_path / f"remote-{name}"
        values = dict(name=name, host=server.host, port=server.port, user=server.user,
                      key_file=str(server.client_key), work_root=str(remote / "work"),
                      data_root=str(remote / "data"), scheduler="ssh")
        values.update(fields)
        if trust:
            trust_host_of(server)
        return ClusterProfile(**values)

    return build


@pytest.fixture
def cluster_profile(cluster_profile_for, sshd_server) -> ClusterProfile:
    """A trusted profile for the session's sshd (see ``cluster_profile_for``)."""
    return cluster_profile_for(sshd_server)
