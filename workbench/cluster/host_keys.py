"""Host key checking for cluster connections, as OpenSSH does it.

Two files are read: Workbench's own ``<config dir>/known_hosts`` (where keys the user trusts from
Workbench go) and the user's ``~/.ssh/known_hosts`` (never written). Entries may be plain,
hashed (``|1|salt|hash``), wildcard patterns, negated, or marked ``@revoked``; a host on a port
other than 22 is named ``[host]:port``. A key is compared by its type and its bytes, so this
module needs no SSH library.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from pathlib import Path

from workbench.cluster.errors import ClusterError, HostKeyChanged, UnknownHostKey

KNOWN_HOSTS_FILE = "known_hosts"


@dataclass(frozen=True)
class KnownHostEntry:
    file: Path
    line: int  # 1-based
    marker: str  # "", "@revoked" or "@cert-authority"
    key_type: str
    key_base64: str


@dataclass(frozen=True)
class PresentedKey:
    """The key a host showed: its type name (``ssh-ed25519``) and its bytes in base64."""

    key_type: str
    key_base64: str

    @property
    def fingerprint(self) -> str:
        """``SHA256:…`` as ``ssh-keygen -l`` prints it."""
        digest = hashlib.sha256(base64.b64decode(self.key_base64)).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def workbench_known_hosts(config_dir: Path | None = None) -> Path:
    """Workbench's own known_hosts file in the user's config folder."""
    if config_dir is None:
        from workbench.project.recent import user_config_dir

        config_dir = user_config_dir()
    return Path(config_dir) / KNOWN_HOSTS_FILE


def user_known_hosts() -> Path:
    """The file ssh itself reads: ~/.ssh/known_hosts of the home folder in the password database
    (ssh ignores $HOME)."""
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh" / "known_hosts"


def host_key_name(host: str, port: int) -> str:
    """The name known_hosts uses: ``host`` on port 22, ``[host]:port`` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


def entries_for(name: str, files: list[Path]) -> list[KnownHostEntry]:
    """Every entry of ``files`` (in order) whose host patterns match ``name``."""
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for number, raw in enumerate(text.splitlines(), start=1):
            fields = raw.split()
            if not fields or fields[0].startswith("#"):
                continue
            marker = fields.pop(0) if fields[0].startswith("@") else ""
            if len(fields) < 3 or not _patterns_match(fields[0], name):
                continue
            found.append(KnownHostEntry(path, number, marker, fields[1], fields[2]))
    return found


def preferred_key_types(entries: list[KnownHostEntry]) -> list[str]:
    """Host key algorithms to ask for first, so a host with several keys shows the one on record
    (as OpenSSH orders HostKeyAlgorithms)."""
    types = []
    for entry in entries:
        if entry.marker:
            continue
        algorithms = ["rsa-sha2-512", "rsa-sha2-256"] if entry.key_type == "ssh-rsa" else [entry.key_type]
        types += [a for a in algorithms if a not in types]
    return types


def check_host_key(host: str, port: int, key: PresentedKey, files: list[Path], *, profile: str = "",
                   remember_in: Path | None = None) -> str:
    """Whether ``key`` is the one on record for ``host:port``: returns "known" when it is;
    raises HostKeyChanged when a different key (or a revoked one) is on record, and
    UnknownHostKey when none is. ``remember_in`` is where trusting it would write (for messages)."""
    name = host_key_name(host, port)
    entries = entries_for(name, files)
    remember_in = remember_in or (files[0] if files else workbench_known_hosts())
    for entry in entries:
        if entry.marker == "@revoked" and entry.key_base64 == key.key_base64:
            raise HostKeyChanged(
                f"The host key of {name} ({key.fingerprint}) is marked revoked on line {entry.line} of {entry.file}. "
                f"Workbench will not connect; ask the cluster's administrators which key is current.",
                host=host, port=port, fingerprint=key.fingerprint, known_hosts=str(entry.file), line=entry.line)
    plain = [e for e in entries if not e.marker]
    if any(e.key_type == key.key_type and e.key_base64 == key.key_base64 for e in plain):
        return "known"
    if plain:
        same_type = [e for e in plain if e.key_type == key.key_type]
        entry = (same_type or plain)[0]
        what = ("a different key" if same_type else
                f"a {key.key_type} key, while the file records a {entry.key_type} key for it")
        raise HostKeyChanged(
            f"The host key of {name} has changed: it now presents {what} ({key.fingerprint}), "
            f"which does not match line {entry.line} of {entry.file}. Someone may be intercepting the "
            f"connection, or the cluster's key was replaced: ask its administrators. If the new key is "
            f"right, delete line {entry.line} of {entry.file}, then trust it with "
            f"`workbench cluster test {profile or 'NAME'} --trust`.",
            host=host, port=port, fingerprint=key.fingerprint, known_hosts=str(entry.file), line=entry.line)
    raise UnknownHostKey(host, key.fingerprint, port=port, key_type=key.key_type, profile=profile,
                         known_hosts_line=f"{name} {key.key_type} {key.key_base64}", known_hosts=str(remember_in))


def remember_host_key(key: UnknownHostKey | str, known_hosts: Path | None = None) -> Path:
    """Record a host key in Workbench's known_hosts (or ``known_hosts``): the key an
    UnknownHostKey reported (so exactly the key the user saw is trusted), or a known_hosts line.
    Returns the file. ~/.ssh/known_hosts is never written."""
    from workbench.platform.atomic_files import write_atomically

    line = key.known_hosts_line if isinstance(key, UnknownHostKey) else key.strip()
    if len(line.split()) < 3 or "\n" in line:
        raise ClusterError(f"{line!r} is not a known_hosts line (host key-type key).")
    path = Path(known_hosts) if known_hosts is not None else workbench_known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = ""
    if line in existing.splitlines():
        return path
    if existing and not existing.endswith("\n"):
        existing += "\n"
    write_atomically(path, (existing + line + "\n").encode("utf-8"), mode=0o600)
    return path


def _patterns_match(field: str, name: str) -> bool:
    """OpenSSH's rule: a name matches a comma-separated pattern list when some pattern matches
    it and no negated (``!``) pattern does."""
    matched = False
    for pattern in field.split(","):
        if pattern.startswith("|1|"):
            matched = matched or _hashed_match(pattern, name)
        elif pattern.startswith("!"):
            if _wildcard_match(pattern[1:], name):
                return False
        elif _wildcard_match(pattern, name):
            matched = True
    return matched


def _wildcard_match(pattern: str, name: str) -> bool:
    if "*" not in pattern and "?" not in pattern:
        return pattern.lower() == name.lower()
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.fullmatch(regex, name.lower()) is not None


def _hashed_match(pattern: str, name: str) -> bool:
    """``|1|base64(salt)|base64(HMAC-SHA1(salt, name))``, as ``ssh-keygen -H`` writes."""
    try:
        _, _, salt, digest = pattern.split("|", 3)
        expected = base64.b64decode(digest)
        actual = hmac.new(base64.b64decode(salt), name.encode("utf-8"), hashlib.sha1).digest()
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(expected, actual)
