"""The cluster side of a data sync: listing what is there, and landing files atomically.

Over SSH the costly things are round trips and remote commands (a command through a login shell
takes a few hundred milliseconds even on loopback), not bytes. So:

- **Listing** reads the manifest over SFTP and lists the folders that matter once each (or, for
  trees of many folders, runs one ``find``), instead of a ``stat`` per file.
- **Large files** (``DIRECT_MIN_SIZE`` and up) go one by one to ``<name>.part`` with pipelined
  SFTP writes, then ``posix_rename`` to the final name. An interrupted upload leaves the
  ``.part``; the next sync appends to it from its size, and the cluster's ``sha256sum`` checks
  the whole file before it is renamed (a ``.part`` left from another version of the file fails
  that check and the file is sent again from the start).
- **Small files** travel in tar **bundles** of up to ``BUNDLE_MAX_BYTES``: one pipelined upload
  per bundle instead of an open, write, close and rename per file. The cluster unpacks a bundle
  into ``.wb-staging/`` beside the data and moves each file into place with ``mv`` (a
  ``rename(2)`` on the same file system), so each file still lands whole. That runs on the
  cluster while the next files upload (``data_runner.RemoteApplier``).

Remote commands need bash, GNU coreutils (``sha256sum``, ``mv -t``) and tar, as Linux clusters
have. paramiko is only used through the objects the connection hands out.
"""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import shlex
import stat
import sys
import tarfile
from dataclasses import dataclass, field

from workbench.cluster.data_selection import MANIFEST_NAME, STAGING_NAME, LocalFile
from workbench.cluster.errors import ClusterError, ConnectionLost
from workbench.cluster.manifest import Manifest

DIRECT_MIN_SIZE = 1 << 20
"""Files this big or bigger are uploaded on their own (and resumable); smaller ones in bundles."""
BUNDLE_MAX_BYTES = 8 << 20
BUNDLE_MAX_FILES = 1000
CHUNK = 1 << 20
FIND_ABOVE_FOLDERS = 48
"""Above this many folders to list, one remote ``find`` is cheaper than listing each over SFTP."""
_SCRIPT_LIMIT = 60_000
"""Bytes of one remote command: ``bash -lc`` takes its script as one argument, at most 128 KiB."""
STALE_STAGING_MINUTES = 24 * 60
"""Leftovers of syncs cut off this long ago are removed from the staging folder."""
_BUNDLE_DATA = "d"
_BUNDLE_SCRIPT = "apply.sh"


class LocalFileProblem(Exception):
    """A local file could not be read as listed (unreadable, or changed while being sent)."""


@dataclass
class RemoteListing:
    """What the cluster's data folder holds: regular files with their sizes, folders, and other
    entries (symbolic links, specials) with their ``stat`` type letter."""

    root_exists: bool = False
    files: dict[str, int] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    others: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Paths, listing, manifest


def remote_root(sftp, data_root: str, key: str) -> str:
    """``<data_root>/<key>`` as an absolute path on the cluster."""
    return posixpath.join(absolute(sftp, data_root), key)


def absolute(sftp, path: str) -> str:
    """``path`` on the cluster made absolute: ``~`` and relative paths are taken from the login
    user's home, as a shell would (SFTP itself does not expand ``~``)."""
    base = path.strip() or "~"
    if base == "~" or base.startswith("~/") or not base.startswith("/"):
        home = sftp.normalize(".")
        rest = base[2:] if base.startswith("~/") else "" if base == "~" else base
        base = posixpath.join(home, rest) if rest else home
    return posixpath.normpath(base)


def read_manifest(sftp, root: str) -> Manifest | None:
    """The manifest the last sync left, or None when there is none."""
    try:
        with sftp.open(f"{root}/{MANIFEST_NAME}", "rb") as remote:
            remote.prefetch()
            return Manifest.from_json(remote.read())
    except FileNotFoundError:
        return None
    except OSError as exc:
        if is_missing(exc):
            return None
        raise


def write_manifest(sftp, root: str, manifest: Manifest) -> None:
    """Replace the manifest atomically: written beside it, then renamed over it."""
    temporary = f"{root}/{MANIFEST_NAME}.part"
    with sftp.open(temporary, "wb", bufsize=CHUNK) as remote:
        remote.set_pipelined(True)
        remote.write(manifest.to_json().encode("utf-8"))
    sftp.posix_rename(temporary, f"{root}/{MANIFEST_NAME}")


def list_remote(conn, sftp, root: str, folders: set[str]) -> RemoteListing:
    """List ``root`` and those of its sub-folders (relative, ``""`` for the root) named in
    ``folders``, each once; the staging folder is left out."""
    wanted = {""}
    for folder in folders:
        while folder:
            wanted.add(folder)
            folder = posixpath.dirname(folder)
    if len(wanted) > FIND_ABOVE_FOLDERS:
        return _list_with_find(conn, root)
    return _list_with_sftp(sftp, root, wanted)


def _list_with_sftp(sftp, root: str, wanted: set[str]) -> RemoteListing:
    listing = RemoteListing()
    listed: set[str] = set()
    for folder in sorted(wanted, key=lambda f: (f.count("/") + bool(f), f)):
        if folder:
            parent = posixpath.dirname(folder)
            if parent not in listed or folder not in listing.dirs:
                continue  # its parent is missing, or holds no such folder: nothing to ask
        try:
            entries = sftp.listdir_attr(posixpath.join(root, folder) if folder else root)
        except OSError as exc:
            if is_missing(exc):
                continue
            raise
        listed.add(folder)
        if not folder:
            listing.root_exists = True
        for entry in entries:
            rel = f"{folder}/{entry.filename}" if folder else entry.filename
            if rel == STAGING_NAME:
                continue
            _add(listing, rel, _type_letter(entry.st_mode), entry.st_size)
    return listing


def _list_with_find(conn, root: str) -> RemoteListing:
    marker = "WB-LIST"
    result = conn.run("\n".join([
        f"cd -- {shlex.quote(root)} 2>/dev/null || exit 0",
        f"printf '{marker}\\0'",
        f"find . -mindepth 1 -path ./{STAGING_NAME} -prune -o -printf '%y %s %P\\0'",
    ]), check=False)
    if result.code != 0:
        raise ClusterError(f"Could not list the data folder {root} on the cluster (exit status {result.code}): "
                           f"{last_line(result.stderr)}", details=result.stderr)
    listing = RemoteListing()
    _, found, body = result.stdout.partition(marker + "\0")
    if not found:
        return listing
    listing.root_exists = True
    for record in body.split("\0"):
        kind, _, rest = record.partition(" ")
        size, _, rel = rest.partition(" ")
        if rel and size.isdigit():
            _add(listing, rel, kind, int(size))
    return listing


def _add(listing: RemoteListing, rel: str, kind: str, size: int | None) -> None:
    if kind == "f":
        listing.files[rel] = size or 0
    elif kind == "d":
        listing.dirs.add(rel)
    else:
        listing.others[rel] = kind


def _type_letter(mode: int | None) -> str:
    if mode is None:
        return "?"
    if stat.S_ISREG(mode):
        return "f"
    if stat.S_ISDIR(mode):
        return "d"
    if stat.S_ISLNK(mode):
        return "l"
    return "?"


def make_folders(sftp, root: str, folders: set[str], existing: set[str]) -> None:
    """Create the missing ones of ``folders`` (relative to ``root``, parents first); ``existing``
    is updated. ``root`` itself is created with its parents when missing."""
    if "" not in existing:
        _make_absolute(sftp, root)
        existing.add("")
    for folder in sorted(folders, key=lambda f: (f.count("/"), f)):
        chain = []
        while folder and folder not in existing:
            chain.append(folder)
            folder = posixpath.dirname(folder)
        for missing in reversed(chain):
            try:
                sftp.mkdir(posixpath.join(root, missing))
            except OSError:
                if not _is_dir(sftp, posixpath.join(root, missing)):
                    raise
            existing.add(missing)


def _make_absolute(sftp, path: str) -> None:
    if _is_dir(sftp, path):
        return
    parent = posixpath.dirname(path)
    if parent and parent != path:
        _make_absolute(sftp, parent)
    try:
        sftp.mkdir(path)
    except OSError:
        if not _is_dir(sftp, path):
            raise


def _is_dir(sftp, path: str) -> bool:
    try:
        return stat.S_ISDIR(sftp.stat(path).st_mode or 0)
    except OSError as exc:
        if is_missing(exc):
            return False
        raise


def is_missing(exc: OSError) -> bool:
    return isinstance(exc, FileNotFoundError) or exc.errno == errno.ENOENT


def temporary_name(path: str, taken: set[str]) -> str:
    """Where a large file is uploaded before its rename: ``<path>.part``, unless the data itself
    has a file of that name."""
    name = path + ".part"
    while name in taken:
        name += "~"
    return name


# ---------------------------------------------------------------------------------------------
# Large files, one by one


def upload_file(sftp, item: LocalFile, remote_temporary: str, offset: int, cancel, on_bytes) -> str:
    """Send ``item`` to ``remote_temporary`` from byte ``offset`` (0: from scratch) and return the
    sha256 of the whole file as read now. The temporary file stays when this is interrupted."""
    digest = hashlib.sha256()
    try:
        source = open(item.local, "rb")
    except OSError as exc:
        raise LocalFileProblem(f"cannot be read: {exc.strerror}") from None
    with source:
        _check_unchanged(source, item)
        left = offset
        while left:
            chunk = source.read(min(CHUNK, left))
            if not chunk:
                raise LocalFileProblem(_CHANGED)
            digest.update(chunk)
            left -= len(chunk)
        remote = sftp.open(remote_temporary, "r+b" if offset else "wb", bufsize=CHUNK)
        try:
            remote.set_pipelined(True)
            if offset:
                remote.seek(offset)
            left = item.size - offset
            while left:
                chunk = source.read(min(CHUNK, left))
                if not chunk:
                    raise LocalFileProblem(_CHANGED)
                digest.update(chunk)
                remote.write(chunk)
                left -= len(chunk)
                on_bytes(len(chunk))
                if cancel is not None:
                    cancel.raise_if_cancelled()
        except BaseException:
            _close_quietly(remote)
            raise
        remote.close()  # waits for the cluster to acknowledge every write
    return digest.hexdigest()


_CHANGED = "changed while being synced; sync again"


def _check_unchanged(source, item: LocalFile) -> None:
    """The file is still the one listed: a file written to meanwhile is reported, not sent half-old."""
    now = os.fstat(source.fileno())
    if now.st_size != item.size or now.st_mtime_ns != item.mtime_ns:
        raise LocalFileProblem(_CHANGED)


def unchanged_since_listed(item: LocalFile) -> bool:
    try:
        now = item.local.stat()
    except OSError:
        return False
    return now.st_size == item.size and now.st_mtime_ns == item.mtime_ns


def _close_quietly(remote) -> None:
    try:
        remote.close()
    except Exception:  # the connection may be gone: what was written stays for a resume
        # paramiko would try to close it again when the object is collected, and fail again.
        remote._closed = True


# ---------------------------------------------------------------------------------------------
# Small files, in bundles


@dataclass
class BundleJob:
    """A bundle uploaded to the staging folder, to be checked and unpacked on the cluster."""

    name: str
    members: list[tuple[LocalFile, str]]
    """The files in it, with the sha256 of what was sent."""


@dataclass
class VerifyJob:
    """A resumed upload, to be checked with sha256sum on the cluster before its rename."""

    item: LocalFile
    temporary: str
    sha256: str


class BundleWriter:
    """Streams small files as one tar archive to ``<root>/.wb-staging/<name>.tar``."""

    def __init__(self, sftp, root: str, name: str):
        self.name = name
        self.path = f"{root}/{STAGING_NAME}/{name}.tar"
        self.members: list[tuple[LocalFile, str]] = []
        self.data_bytes = 0
        self.sent_bytes = 0
        self._remote = sftp.open(self.path, "wb", bufsize=CHUNK)
        self._remote.set_pipelined(True)

    @property
    def full(self) -> bool:
        return self.data_bytes >= BUNDLE_MAX_BYTES or len(self.members) >= BUNDLE_MAX_FILES

    def add(self, item: LocalFile) -> int:
        """Append ``item``; returns the bytes sent for it. LocalFileProblem when it cannot be read
        or changed since it was listed (then nothing of it was sent)."""
        try:
            with open(item.local, "rb") as source:
                _check_unchanged(source, item)
                data = source.read(item.size + 1)
        except OSError as exc:
            raise LocalFileProblem(f"cannot be read: {exc.strerror}") from None
        if len(data) != item.size:
            raise LocalFileProblem(_CHANGED)
        header = _tar_header(f"{_BUNDLE_DATA}/{item.path}", len(data), item.mtime_ns // 1_000_000_000,
                             (item.mode & 0o777) | 0o400)
        sent = self._write(header) + self._write(data) + self._write(_padding(len(data)))
        self.members.append((item, hashlib.sha256(data).hexdigest()))
        self.data_bytes += len(data)
        return sent

    def finish(self, root: str) -> BundleJob:
        """Add the script that moves the files into place, end the archive and wait until the
        cluster has all of it."""
        script = _apply_script([item.path for item, _ in self.members]).encode("utf-8")
        self._write(_tar_header(_BUNDLE_SCRIPT, len(script), 0, 0o644) + script + _padding(len(script)))
        self._write(b"\0" * (2 * tarfile.BLOCKSIZE))
        self._remote.close()
        return BundleJob(self.name, self.members)

    def abandon(self, sftp) -> None:
        """Stop (cancelled or failed): close and try to remove the partial archive."""
        _close_quietly(self._remote)
        try:
            sftp.remove(self.path)
        except Exception:  # a stale bundle is removed by a later sync anyway
            pass

    def _write(self, data: bytes) -> int:
        self._remote.write(data)
        self.sent_bytes += len(data)
        return len(data)


def _tar_header(name: str, size: int, mtime: int, mode: int) -> bytes:
    """A tar header for a regular file. tarfile's general code costs ~50 µs a header, a tenth of
    a second for a bundle of 2,000 small files; a short name (the usual case) is built here."""
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) > 99 or size >= 8**11 or mtime < 0 or mtime >= 8**11:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, max(mtime, 0), mode
        return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
    header = bytearray(tarfile.BLOCKSIZE)
    header[0:len(encoded)] = encoded
    header[100:108] = b"%07o\0" % mode
    header[108:124] = b"0000000\0" * 2  # uid, gid
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"%011o\0" % mtime
    header[148:156] = b" " * 8  # the checksum counts its own field as spaces
    header[156:157] = tarfile.REGTYPE
    header[257:265] = tarfile.GNU_MAGIC
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def _padding(size: int) -> bytes:
    return b"\0" * (-size % tarfile.BLOCKSIZE)


def _apply_script(paths: list[str]) -> str:
    """The ``sh`` script, run in the unpacked bundle with ``R`` = the data folder, that moves
    every file into place: one ``mv -t`` per target folder, not one process per file."""
    by_folder: dict[str, list[str]] = {}
    for path in paths:
        by_folder.setdefault(posixpath.dirname(path), []).append(path)
    # Not `set -e`: one file that cannot be placed should not keep the others from landing.
    lines = [f"cd {_BUNDLE_DATA} || exit 1", "status=0"]
    folders = [folder for folder in by_folder if folder]
    for start in range(0, len(folders), 200):
        lines.append("mkdir -p -- " + " ".join(_under_root(f) for f in folders[start:start + 200]) + " || status=1")
    for folder, members in by_folder.items():
        for start in range(0, len(members), 500):
            words = " ".join(shlex.quote(m) for m in members[start:start + 500])
            lines.append(f"mv -f -t {_under_root(folder)} -- {words} || status=1")
    lines.append("exit $status")
    return "\n".join(lines) + "\n"


def _under_root(folder: str) -> str:
    return '"$R"/' + shlex.quote(folder) if folder else '"$R"'


def remove_remote_files(conn, root: str, paths: list[str]) -> None:
    """Delete ``paths`` (relative to ``root``) on the cluster, many per command, and the folders
    that leaves empty (up to, not including, ``root``)."""
    folders = sorted({posixpath.dirname(path) for path in paths} - {""})
    for words in _word_batches(paths):
        result = conn.run(f"cd -- {shlex.quote(root)} && rm -f -- {words}", check=False)
        if result.code != 0:
            raise ClusterError(f"Could not delete files in {root} on the cluster: {last_line(result.stderr)}",
                               details=result.stderr)
    for words in _word_batches(folders):
        conn.run(f"cd -- {shlex.quote(root)} && rmdir -p --ignore-fail-on-non-empty -- {words} 2>/dev/null",
                 check=False)


def remote_hashes(conn, root: str, paths: list[str]) -> dict[str, str]:
    """sha256 of files on the cluster (relative to ``root``), computed there; files that are
    missing or unreadable are left out."""
    hashes = {}
    for words in _word_batches(paths):
        result = conn.run(f"cd -- {shlex.quote(root)} && sha256sum -- {words}", check=False)
        for line in result.stdout.splitlines():
            # "<hash>  <name>"; a name with a backslash or newline comes escaped, prefixed with "\"
            if len(line) > 66 and not line.startswith("\\") and line[64:66] in ("  ", " *"):
                hashes[line[66:]] = line[:64]
    return hashes


def _word_batches(paths: list[str]):
    """``paths`` as quoted shell words, in groups that keep a command under the size limit."""
    words, size = [], 0
    for path in paths:
        word = shlex.quote(path)
        if words and size + len(word) > _SCRIPT_LIMIT:
            yield " ".join(words)
            words, size = [], 0
        words.append(word)
        size += len(word) + 1
    if words:
        yield " ".join(words)


def link_reference(sftp, root: str, name: str, target: str) -> str:
    """Make ``<root>/<name>`` a symbolic link to ``target`` (absolute); returns "" or why it was
    not made. A link of that name is replaced; a real file or folder is left alone."""
    link = posixpath.join(root, name)
    try:
        kind = _type_letter(sftp.lstat(link).st_mode)
    except OSError as exc:
        if not is_missing(exc):
            raise
        kind = None
    if kind == "l":
        try:
            if sftp.readlink(link) == target:
                return ""
        except OSError:
            pass
        sftp.remove(link)
    elif kind is not None:
        return existing_entry_problem(name, kind, target)
    sftp.symlink(target, link)
    return ""


def existing_entry_problem(name: str, kind: str, target: str) -> str:
    what = "folder" if kind == "d" else "file"
    return (f"a {what} named {name} is already in the data folder on the cluster: move it away to link "
            f"{target} there")


def last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (as opposed to a refused file operation)."""
    if isinstance(exc, ConnectionLost | EOFError):
        return True
    paramiko = sys.modules.get("paramiko")  # loaded by the connection when it is a paramiko one
    return paramiko is not None and isinstance(exc, paramiko.SSHException)

