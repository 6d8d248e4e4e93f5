"""What the cluster run tests share: a profile for the test sshd (plain SSH, or the test Slurm
behind it), projects in real git repositories, and ending the followers a test started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.git.conftest import git
from tests.training.conftest import make_project
from tests.waiting import wait_until  # noqa: F401  (the cluster tests import it from here)

VENV_BIN = str(Path(sys.executable).parent)


def save_test_profile(name: str, server, work_root: Path, scheduler: str = "ssh", env: dict | None = None,
                      partition: str = ""):
    """A profile for the sshd ``server`` (trusted host key), jobs running with this Python."""
    from workbench.cluster.host_keys import remember_host_key
    from workbench.cluster.profiles import ClusterProfile, save_profile

    host_key = " ".join((server.folder / "host_ed25519.pub").read_text().split()[:2])
    remember_host_key(f"[{server.host}]:{server.port} {host_key}")
    profile = ClusterProfile(name=name, host=server.host, port=server.port, user=server.user,
                             key_file=str(server.client_key), work_root=str(work_root),
                             data_root=str(work_root / "data"), scheduler=scheduler,
                             python_setup=f"export PATH={VENV_BIN}:$PATH", partition=partition, env=dict(env or {}))
    save_profile(profile)
    return profile


def committed(project: Path) -> Path:
    """``project`` as a git repository with everything committed (a project made from a template
    is one already, with nothing left to commit)."""
    if not (project / ".git").exists():
        git(project, "init", "-q", "--initial-branch=main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "--allow-empty", "-m", "project")
    return project


def fake_trainer_project(root: Path, hparams: str = "stop_at_step=20\n") -> Path:
    return committed(make_project(root, hparams))


def end_followers(project: Path) -> None:
    """Kill the followers still holding a lock in the project's runs (by the pid they wrote)."""
    from workbench.cluster.follower import LOCK_FILE, is_followed

    for lock in (project / "runs").glob(f"*/{LOCK_FILE}"):
        if not is_followed(lock.parent):
            continue
        try:
            pid = int(lock.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def follower_pid(run_dir: Path | str) -> int | None:
    from workbench.cluster.follower import LOCK_FILE, is_followed

    if not is_followed(run_dir):
        return None
    try:
        return int((Path(run_dir) / LOCK_FILE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def sshd_children(server) -> list[int]:
    """The sshd processes serving connections (children of the test sshd)."""
    result = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server.process.pid)], capture_output=True, text=True)
    return [int(pid) for pid in result.stdout.split()]


def connection_of(pid: int, server) -> list[int]:
    """The sshd children serving process ``pid``'s connections to ``server``, found from
    /proc: its TCP sockets' local ports are the remote ports of theirs."""
    table = _tcp_table()
    ports = {table[inode][0] for inode in _socket_inodes(pid)
             if inode in table and table[inode][1] == server.port}
    return sorted(child for child in sshd_children(server)
                  if any(table[inode][1] in ports for inode in _socket_inodes(child) if inode in table))


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _tcp_table() -> dict[int, tuple[int, int]]:
    """``{socket inode: (local port, remote port)}`` of the IPv4 TCP sockets."""
    table = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], int(fields[9])
        table[inode] = (int(local.split(":")[1], 16), int(remote.split(":")[1], 16))
    return table
