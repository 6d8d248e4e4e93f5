"""Cluster profiles: how to reach a cluster and where Workbench works on it.

Profiles are user-level settings, never part of a project: ``<config dir>/clusters.toml``, one
``[clusters.NAME]`` table each. Each change reads the file fresh, edits it and writes it back
atomically, because windows, followers and the CLI may all touch it; the user may edit it too, so
a change keeps their comments and layout. No secret is ever stored
here: a key file's passphrase lives in the OS keyring or the ssh-agent.
"""

from __future__ import annotations

import contextlib
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from workbench.cluster.errors import ClusterError

PROFILES_FILE = "clusters.toml"
SCHEDULERS = ("slurm", "ssh")
DEFAULT_WORK_ROOT = "~/workbench"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST = re.compile(r"[A-Za-z0-9_.:%-]+")
_USER = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?")
_JUMP = re.compile(r"(?:(?P<user>[^@\s]+)@)?(?:\[(?P<host6>[0-9A-Fa-f:.%]+)\]|(?P<host>[^@:\s\[\]]+))(?::(?P<port>\d+))?")


@dataclass
class ClusterProfile:
    """One cluster as the user described it. Empty strings mean "not set"."""

    name: str
    host: str
    port: int = 22
    user: str = ""
    """Login name on the cluster; empty means the local user's name, as ssh does."""
    key_file: str = ""
    """Private key file on this machine; empty means the keys the ssh-agent holds."""
    jump_host: str = ""
    """``[user@]host[:port]`` of a bastion to go through (ssh's ProxyJump)."""
    work_root: str = DEFAULT_WORK_ROOT
    """Remote folder for the project repositories, trainkit and run folders (``~`` = home)."""
    data_root: str = ""
    """Remote folder for synced datasets (the cluster's shared storage); empty means
    ``<work_root>/data``."""
    python_setup: str = ""
    """Shell lines run before a job, for example ``source ~/venv/bin/activate``."""
    scheduler: str = "slurm"
    partition: str = ""
    account: str = ""
    qos: str = ""
    env: dict[str, str] = field(default_factory=dict)
    """Variables exported for every command on the cluster, taken literally (no ``$`` expansion)."""

    def __post_init__(self) -> None:
        if not self.data_root and self.work_root:
            self.data_root = self.work_root.rstrip("/") + "/data"

    @property
    def login_user(self) -> str:
        """``user``, or the local user's name when it is empty."""
        if self.user:
            return self.user
        import getpass

        return getpass.getuser()

    @property
    def destination(self) -> str:
        """``user@host:port`` as shown to the user (the port only when it is not 22)."""
        port = "" if self.port == 22 else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host and port else self.host
        return f"{self.login_user}@{host}{port}"

    def problems(self) -> list[str]:
        """What is wrong with this profile, one sentence each saying how to fix it; empty when valid."""
        found = []
        if not _NAME.fullmatch(self.name or ""):
            found.append(f"The profile name {self.name!r} is not valid: use up to 40 letters, digits, "
                         f"'-' or '_', starting with a letter or digit.")
        if not self.host:
            found.append("The host is missing: give the cluster's login node with --host.")
        elif not _HOST.fullmatch(self.host):
            hint = " (give the user name with --user)" if "@" in self.host else ""
            found.append(f"The host {self.host!r} is not a host name or address{hint}.")
        if not isinstance(self.port, int) or isinstance(self.port, bool) or not 1 <= self.port <= 65535:
            found.append(f"The port {self.port!r} is not a TCP port (1 to 65535).")
        if self.user and not _USER.fullmatch(self.user):
            found.append(f"The user name {self.user!r} is not valid.")
        if self.jump_host and parse_jump_host(self.jump_host) is None:
            found.append(f"The jump host {self.jump_host!r} is not [user@]host[:port].")
        for label, path in (("work root", self.work_root), ("data root", self.data_root)):
            if not path:
                found.append(f"The {label} is missing: give a folder on the cluster.")
            elif not (path.startswith("/") or path == "~" or path.startswith("~/")):
                found.append(f"The {label} {path!r} must be an absolute path or start with ~/ "
                             f"(the home folder on the cluster).")
            elif any(c in path for c in "\n\r\0"):
                found.append(f"The {label} must be one line.")
        if self.scheduler not in SCHEDULERS:
            found.append(f"The scheduler {self.scheduler!r} is not one of: {', '.join(SCHEDULERS)}.")
        for label, value in (("partition", self.partition), ("account", self.account), ("QoS", self.qos)):
            if value and not re.fullmatch(r"[A-Za-z0-9_.,:+-]+", value):
                found.append(f"The {label} {value!r} is not a valid Slurm name.")
        for key, value in self.env.items():
            if not _ENV_NAME.fullmatch(key):
                found.append(f"The variable name {key!r} is not valid: letters, digits and '_', "
                             f"not starting with a digit.")
            if not isinstance(value, str) or "\0" in value:
                found.append(f"The value of {key} must be text.")
        return found

    def validate(self) -> None:
        """ClusterError listing every problem; nothing when the profile is valid."""
        found = self.problems()
        if found:
            raise ClusterError(" ".join(found))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ClusterProfile":
        """A profile from a mapping as ``to_json`` (or the TOML file) gives it; keys this version
        does not know are ignored, so a newer Workbench's file still loads."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["env"] = {str(k): str(v) for k, v in dict(values.get("env") or {}).items()}
        return cls(**values)


def parse_env_assignment(text: str) -> tuple[str, str]:
    """``("K", "V")`` from ``"K=V"``; ClusterError when it is not an assignment to a valid name."""
    key, sep, value = text.partition("=")
    if not sep or not _ENV_NAME.fullmatch(key):
        raise ClusterError(f"{text!r} is not NAME=VALUE with a variable name of letters, digits and '_'.")
    return key, value


def parse_jump_host(text: str) -> tuple[str, str, int] | None:
    """``(user, host, port)`` of ``[user@]host[:port]`` (user empty when not given; IPv6 in
    brackets); None when ``text`` is not of that form."""
    match = _JUMP.fullmatch(text.strip())
    if not match:
        return None
    port = int(match.group("port") or 22)
    if not 1 <= port <= 65535:
        return None
    return match.group("user") or "", match.group("host6") or match.group("host"), port


# ---------------------------------------------------------------------------------------------
# The file


def profiles_file(config_dir: Path | None = None) -> Path:
    """``<config dir>/clusters.toml`` (the user's config folder unless ``config_dir`` is given)."""
    if config_dir is None:
        from workbench.project.recent import user_config_dir

        config_dir = user_config_dir()
    return Path(config_dir) / PROFILES_FILE


def load_profiles(config_dir: Path | None = None) -> list[ClusterProfile]:
    """Every profile, sorted by name; empty when there is no file yet. ClusterError (naming the
    file and line) when the file cannot be read: it is the user's, so it is never replaced."""
    return sorted(_read(profiles_file(config_dir)).values(), key=lambda p: p.name.lower())


def get_profile(name: str, config_dir: Path | None = None) -> ClusterProfile:
    """The profile called ``name``; ClusterError saying which exist when there is none."""
    profiles = _read(profiles_file(config_dir))
    if name in profiles:
        return profiles[name]
    known = ", ".join(sorted(profiles)) or "none yet"
    raise ClusterError(f"There is no cluster profile named {name!r} (profiles: {known}). "
                       f"Add one with `workbench cluster add {name} --host HOST`.")


def save_profile(profile: ClusterProfile, config_dir: Path | None = None) -> Path:
    """Add ``profile``, or replace the one with its name; returns the file. ClusterError when the
    profile is not valid."""
    from workbench.platform.toml_files import update_table

    profile.validate()
    path = profiles_file(config_dir)
    _read(path)  # a file that cannot be read is the user's to fix, never replaced
    with _editing_profiles(path) as clusters:
        update_table(clusters, profile.name, _profile_table(profile))
    return path


def remove_profile(name: str, config_dir: Path | None = None) -> None:
    """Delete the profile ``name``; ClusterError when there is none. Host keys and keyring
    entries stay: another profile may use the same host or key."""
    path = profiles_file(config_dir)
    profiles = _read(path)
    if name not in profiles:
        get_profile(name, config_dir)  # raises with the list of names
    with _editing_profiles(path) as clusters:
        del clusters[name]


def _read(path: Path) -> dict[str, ClusterProfile]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterError(f"Cannot read the cluster profiles in {path}: {exc}. Fix or move that file.") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClusterError(f"The cluster profiles file {path} is not valid TOML ({exc}). Fix that line, or move "
                           f"the file away to start a new list.") from None
    tables = data.get("clusters", {})
    if not isinstance(tables, dict):
        raise ClusterError(f"In {path}, 'clusters' must be a table of profiles. Fix or move that file.")
    profiles = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ClusterError(f"In {path}, clusters.{name} must be a table. Fix or move that file.")
        try:
            profile = ClusterProfile.from_json({**table, "name": name})
        except TypeError as exc:
            raise ClusterError(f"In {path}, the profile {name!r} is incomplete ({exc}). Fix or remove it.") from None
        profiles[name] = profile
    return profiles


@contextlib.contextmanager
def _editing_profiles(path: Path) -> Iterator[Any]:
    """The ``clusters`` table of the file at ``path``, to change in the block; written back
    atomically, with the user's own comments and layout kept, when the block ends."""
    from workbench.platform.toml_files import TomlFileError, editing, update_table

    try:
        # 0600 for a new file: it names hosts, users and key paths, which is nobody else's business.
        with editing(path, mode=0o600) as document:
            if not document:
                import tomlkit

                document.add(tomlkit.comment("Workbench's cluster profiles: edit with `workbench cluster "
                                             "add|edit|remove` or the"))
                document.add(tomlkit.comment("Cluster Profiles dialog. Passphrases are never stored here "
                                             "(OS keyring or ssh-agent)."))
                document["version"] = 1
                document.add(tomlkit.nl())
            if "clusters" not in document:
                update_table(document, "clusters", {}, super_table=True)
            yield document["clusters"]
    except TomlFileError as exc:
        raise ClusterError(f"Cannot change the cluster profiles: {exc}. Fix or move that file.") from None


def _profile_table(profile: ClusterProfile) -> dict:
    """The values of ``profile``'s ``[clusters.NAME]`` table, in the order of its fields."""
    values = {f.name: getattr(profile, f.name) for f in fields(ClusterProfile) if f.name not in ("name", "env")}
    if profile.env:
        values["env"] = dict(profile.env)
    return values
