"""Which local files are the project's data for the cluster, from ``workbench.toml``::

    [cluster]
    data = ["data/", "labels.csv"]      # files or folders, relative to the project folder
    exclude = ["*.tmp", "data/cache/"]  # glob patterns, see below

    [cluster.data_refs]                 # already on the cluster: linked there, never uploaded
    "data/imagenet" = "/shared/datasets/imagenet"

Exclude patterns work like ``.gitignore`` lines: a pattern without ``/`` matches a file or folder
name at any depth (``*.tmp``), one with ``/`` matches the path from the project folder
(``data/cache``, ``data/*/raw``), a trailing ``/`` matches folders only, and ``**/`` may stand for
no folder at all. ``*`` also matches ``/``, so ``data/*.tmp`` reaches into sub-folders.

A data reference's name is a path in the project's data layout: on the cluster it becomes a
symbolic link in the project's data folder to the referenced path, so a job finds referenced and
synced data side by side. A local copy under that name (say, a small sample for local runs) is
left out of the upload and reported as referenced.

Nothing is left out silently: every file that is not sent is in ``excluded`` (by a pattern, a
reference, a reserved name, or the built-in rule for ``.git/``, ``.workbench/`` and ``runs/`` at
the top of the project) or ``skipped`` (a symbolic link, a special file, an unreadable file
or folder, a data entry that does not exist), each with its reason. Qt-free, stdlib only.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from workbench.cluster.errors import ClusterError

# Names the sync itself uses inside the project's data folder on the cluster.
MANIFEST_NAME = ".manifest.json"
STAGING_NAME = ".wb-staging"
_RESERVED = {MANIFEST_NAME, MANIFEST_NAME + ".part", STAGING_NAME}

# Always left out, whatever the settings say: Workbench's own state and run folders, and Git's
# folder (the code reaches the cluster through Git). Only at the top of the project folder.
_BUILT_IN_EXCLUDES = {".workbench": "Workbench's own state for this project",
                      "runs": "the project's run folders (Workbench's own)",
                      ".git": "Git's folder: the code goes to the cluster through Git"}


@dataclass(frozen=True)
class DataRef:
    """Data that already lives on the cluster: ``name`` in the data layout, ``remote_path`` there."""

    name: str
    remote_path: str
    exists: bool | None = None
    """Whether ``remote_path`` exists on the cluster (None until checked)."""
    problem: str = ""
    """Why the link could not be made on the cluster, when it could not."""


@dataclass(frozen=True)
class DataSettings:
    """The ``[cluster]`` data settings of a project, checked."""

    data: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    refs: tuple[DataRef, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.data and not self.refs


@dataclass(frozen=True)
class LocalFile:
    """A regular file to sync: ``path`` is relative to the project folder, with ``/``."""

    path: str
    local: Path
    size: int
    mtime_ns: int
    mode: int


@dataclass(frozen=True)
class LeftOut:
    """A file or folder that is not sent, and why."""

    path: str
    reason: str


@dataclass
class DataSelection:
    """The local side of a sync: what is sent, and what is left out with its reason."""

    files: list[LocalFile] = field(default_factory=list)
    excluded: list[LeftOut] = field(default_factory=list)
    """Left out on purpose: by an exclude pattern, a data reference, or a built-in rule."""
    skipped: list[LeftOut] = field(default_factory=list)
    """Could not be sent: symbolic links, special files, unreadable files, missing entries."""
    refs: list[DataRef] = field(default_factory=list)


def read_data_settings(settings: dict | None, project_dir: Path | str) -> DataSettings:
    """The data settings from a parsed ``workbench.toml`` (a project's ``settings``).

    Raises ClusterError naming the setting and the fix when a value has the wrong type or a path
    leaves the project folder.
    """
    where = Path(project_dir) / "workbench.toml"
    table = (settings or {}).get("cluster", {})
    if not isinstance(table, dict):
        raise ClusterError(f"[cluster] in {where} must be a table.")
    data = _string_list(table.get("data", []), "data", where, 'data = ["data/"]')
    exclude = _string_list(table.get("exclude", []), "exclude", where, 'exclude = ["*.tmp", "data/cache/"]')
    for pattern in exclude:
        if not pattern.strip().strip("/"):
            raise ClusterError(f"[cluster] exclude in {where} has an empty pattern; remove it.")
    refs_table = table.get("data_refs", {})
    if not isinstance(refs_table, dict):
        raise ClusterError(f'[cluster.data_refs] in {where} must be a table of name = "/path/on/the/cluster".')
    refs = []
    for name, remote in refs_table.items():
        if not isinstance(remote, str) or not remote.strip():
            raise ClusterError(f'[cluster.data_refs] {name} in {where} must be a path on the cluster, '
                               f'e.g. {name} = "/shared/datasets/{name}".')
        refs.append(DataRef(_relative(name, f"[cluster.data_refs] {name}", where), remote.strip()))
    entries = [_relative(entry, f"[cluster] data entry {entry!r}", where, allow_root=True) for entry in data]
    return DataSettings(tuple(dict.fromkeys(entries)), tuple(exclude), tuple(refs))


def select_data(project_dir: Path | str, data: DataSettings) -> DataSelection:
    """Walk the data entries of ``project_dir`` (no hashing, no reading of file contents)."""
    root = Path(project_dir)
    selection = DataSelection(refs=list(data.refs))
    walker = _Walker(root, data, selection)
    for entry in data.data:
        walker.entry(entry)
    selection.files.sort(key=lambda f: f.path)
    return selection


def excluded_by(path: str, is_dir: bool, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` that leaves ``path`` out (see the module text), or None."""
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        bare = pattern.strip()
        if bare.endswith("/") and not is_dir:
            continue
        bare = bare.rstrip("/")
        anchored = "/" in bare
        target = path if anchored else name
        bare = bare.lstrip("/")
        candidates = [bare]
        while candidates[-1].startswith("**/"):
            candidates.append(candidates[-1][3:])
        if any(fnmatch.fnmatchcase(target, candidate) for candidate in candidates):
            return pattern
    return None


class _Walker:
    def __init__(self, root: Path, data: DataSettings, selection: DataSelection):
        self.root = root
        self.patterns = data.exclude
        self.refs = {ref.name: ref for ref in data.refs}
        self.selection = selection
        self.seen: set[str] = set()

    def entry(self, entry: str) -> None:
        path = self.root / entry if entry else self.root
        try:
            info = path.lstat()
        except FileNotFoundError:
            self.skip(entry, "does not exist (named in [cluster] data)")
            return
        except OSError as exc:
            self.skip(entry, f"cannot be read: {exc.strerror}")
            return
        if entry and self.left_out(entry, stat.S_ISDIR(info.st_mode)):
            return
        if stat.S_ISDIR(info.st_mode):
            self.folder(path, entry)
        else:
            self.file(path, entry, info)

    def folder(self, folder: Path, rel: str) -> None:
        try:
            with os.scandir(folder) as scan:
                children = sorted(scan, key=lambda child: child.name)
        except OSError as exc:
            self.skip(rel or ".", f"folder cannot be read: {exc.strerror}")
            return
        for child in children:
            child_rel = f"{rel}/{child.name}" if rel else child.name
            try:
                is_dir = child.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if self.left_out(child_rel, is_dir):
                continue
            if is_dir:
                self.folder(Path(child.path), child_rel)
                continue
            try:
                info = child.stat(follow_symlinks=False)
            except OSError as exc:
                self.skip(child_rel, f"cannot be read: {exc.strerror}")
                continue
            self.file(Path(child.path), child_rel, info)

    def file(self, path: Path, rel: str, info: os.stat_result) -> None:
        if rel in self.seen:
            return
        self.seen.add(rel)
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            self.skip(rel, "symbolic link: not followed (copy the file in, add its target to [cluster] data, "
                           "or reference data already on the cluster in [cluster.data_refs])")
        elif not stat.S_ISREG(mode):
            self.skip(rel, f"special file ({_kind(mode)}): only regular files are synced")
        elif not _readable(path):
            self.skip(rel, "cannot be read: permission denied")
        else:
            self.selection.files.append(LocalFile(rel, path, info.st_size, info.st_mtime_ns, mode & 0o7777))

    def left_out(self, rel: str, is_dir: bool) -> bool:
        reason = None
        if rel in _BUILT_IN_EXCLUDES:
            reason = _BUILT_IN_EXCLUDES[rel]
        elif rel in self.refs:
            reason = f"referenced on the cluster as {self.refs[rel].remote_path} ([cluster.data_refs])"
        elif rel in _RESERVED:
            reason = "name reserved for the sync's own files on the cluster"
        else:
            pattern = excluded_by(rel, is_dir, self.patterns)
            if pattern is not None:
                reason = f"matches the exclude pattern {pattern!r}"
        if reason is None:
            return False
        if rel not in self.seen:
            self.seen.add(rel)
            self.selection.excluded.append(LeftOut(rel + ("/" if is_dir else ""), reason))
        return True

    def skip(self, rel: str, reason: str) -> None:
        self.selection.skipped.append(LeftOut(rel, reason))


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "not a regular file"


def _string_list(value, key: str, where: Path, example: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ClusterError(f"[cluster] {key} in {where} must be a list of strings, e.g. {example}.")
    return value


def _relative(value: str, what: str, where: Path, allow_root: bool = False) -> str:
    """``value`` as a clean project-relative path with ``/``; "" for the project folder itself."""
    text = value.strip().replace("\\", "/")
    pure = PurePosixPath(text)
    if pure.is_absolute() or ".." in pure.parts or (len(text) > 1 and text[1] == ":"):
        raise ClusterError(f"{what} in {where} must be a path inside the project folder, relative to it.")
    clean = "/".join(part for part in pure.parts if part != ".")
    if not clean and not allow_root:
        raise ClusterError(f"{what} in {where} must name a path inside the project folder.")
    return clean
