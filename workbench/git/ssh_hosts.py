"""Trusting an SSH remote's host key from the app, as `ssh` asks at a terminal the first time.

The key is fetched with `ssh-keyscan`, shown as its SHA256 fingerprint for the user to compare
with what the server's owner publishes, and only then added to ~/.ssh/known_hosts.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from workbench.git.errors import GitError

KEY_TYPES = "ed25519,ecdsa,rsa"
SCAN_TIMEOUT_S = 10


@dataclass(frozen=True)
class HostKey:
    host: str
    port: int
    known_hosts_line: str
    fingerprint: str  # "SHA256:…" as ssh prints it
    key_type: str


def ssh_host_of(url: str) -> tuple[str, int] | None:
    """(host, port) of an ssh remote URL (ssh://user@host:port/path or user@host:path), else None."""
    if url.startswith("ssh://") or url.startswith("git+ssh://"):
        parts = urlsplit(url)
        return (parts.hostname, parts.port or 22) if parts.hostname else None
    match = re.match(r"^(?:[^@/]+@)?([^:/]+):(?!//)", url)
    if match and "://" not in url:
        return match.group(1), 22
    return None


def scan_host_key(host: str, port: int = 22) -> HostKey:
    """The key the host presents now; GitError when it cannot be reached."""
    try:
        scan = subprocess.run(["ssh-keyscan", "-T", str(SCAN_TIMEOUT_S), "-p", str(port), "-t", KEY_TYPES, host],
                              capture_output=True, text=True, timeout=SCAN_TIMEOUT_S + 5)
    except FileNotFoundError:
        raise GitError("ssh-keyscan is not installed. Install the OpenSSH client (openssh-client).") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{host}:{port} did not answer. Check the remote's address and your network.") from None
    lines = [line for line in scan.stdout.splitlines() if line and not line.startswith("#")]
    if not lines:
        raise GitError(f"{host}:{port} did not present an SSH host key. Check the remote's address and port.",
                       details=scan.stderr)
    line = lines[0]
    fingerprint = subprocess.run(["ssh-keygen", "-lf", "-"], input=line, capture_output=True, text=True)
    fields = fingerprint.stdout.split()
    if fingerprint.returncode != 0 or len(fields) < 2:
        raise GitError("Could not read the host's key fingerprint.", details=fingerprint.stderr)
    key_type = fields[-1].strip("()") if fields[-1].startswith("(") else line.split()[1]
    return HostKey(host, port, line, fields[1], key_type)


def default_known_hosts() -> Path:
    """The file ssh itself reads: ~/.ssh/known_hosts of the user's home from the password
    database (ssh ignores $HOME)."""
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh" / "known_hosts"


def trust_host_key(key: HostKey, known_hosts: Path | None = None) -> Path:
    """Add ``key`` to known_hosts (created 0600 in a 0700 ~/.ssh if missing); returns the file."""
    known_hosts = known_hosts or default_known_hosts()
    known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    existing = known_hosts.read_text() if known_hosts.exists() else ""
    if key.known_hosts_line not in existing.splitlines():
        with open(known_hosts, "a", encoding="utf-8") as handle:
            if existing and not existing.endswith("\n"):
                handle.write("\n")
            handle.write(key.known_hosts_line + "\n")
        os.chmod(known_hosts, 0o600)
    return known_hosts
