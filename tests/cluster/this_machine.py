"""This machine as the cluster, for tests without a network: commands run by bash, files read
and written directly through an SFTP stand-in."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

from workbench.cluster.errors import ClusterError


def program_of(command: str) -> str:
    """The command without the variables exported before it: "squeue -h …" for
    "export SLURM_TIME_FORMAT=%s; squeue -h …"."""
    while command.startswith("export "):
        command = command.partition("; ")[2]
    return command


class ThisMachine:
    """The connection interface, on this machine: bash for commands, the file system for SFTP."""

    def run(self, command, timeout=None, check=True, retry_if_dropped=False):
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout or 60)
        if check and done.returncode:
            raise ClusterError(done.stderr)
        return SimpleNamespace(code=done.returncode, stdout=done.stdout, stderr=done.stderr)

    def sftp(self):
        return LocalSftp()

    def close(self):
        pass


class LocalSftp:
    def stat(self, path):
        return os.stat(path)

    def open(self, path, mode="rb"):
        handle = open(path, mode)
        handle.stat = lambda: os.fstat(handle.fileno())
        handle.prefetch = lambda size: None
        return handle

    def putfo(self, source, path):
        Path(path).write_bytes(source.read())

    def chmod(self, path, mode):
        os.chmod(path, mode)

    def get_channel(self):
        raise AttributeError
