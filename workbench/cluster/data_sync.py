"""Sync a project's datasets to the cluster's data root, sending only what changed.

What is synced comes from ``workbench.toml`` (``[cluster] data``, ``exclude``,
``[cluster.data_refs]``; see ``data_selection``). On the cluster the data lands in
``<data_root>/<project-key>/`` with the same relative paths as in the project, beside a
``.manifest.json`` of what the last sync left there (see ``manifest``).

``plan_sync`` says what a sync would do — send (and why), unchanged, skipped, excluded, deleted
locally — without sending anything: the dry run of ``workbench cluster sync --dry-run`` and the
list the Run on Cluster window shows. ``sync_data`` does it (see ``data_transfer`` for how files
travel and land). Files deleted locally are only reported, unless ``delete=True``.

A sync that is cut off (cancelled, or the connection dropped) keeps what it landed, never leaves a
half-written file under a final name, and the next sync picks up from there: an interrupted large
file resumes from its ``.part``; files that landed but missed the manifest are recognised by
their hash on the cluster instead of being sent again.

The connection is anything with ``run(command, timeout=None, check=True) -> CommandResult(code,
stdout, stderr)`` and ``sftp()`` (a shared paramiko SFTPClient), as ``ClusterConnection`` is.
"""

from __future__ import annotations

import os
import posixpath
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workbench.cluster import data_transfer as transfer
from workbench.cluster.data_runner import Landed, RemoteApplier
from workbench.cluster.data_selection import (STAGING_NAME, DataRef, DataSelection, DataSettings, LeftOut,
                                              LocalFile, read_data_settings, select_data)
from workbench.cluster.errors import ClusterError
from workbench.cluster.manifest import HashCache, Manifest, hash_file
from workbench.tasks import CancelToken, Cancelled, Progress, ProgressCallback
from workbench.project.project_file import data_hash_cache

MANIFEST_EVERY_S = 10.0
"""A long sync also saves the manifest this often, so a cut connection loses little."""
_PROGRESS_EVERY_S = 0.1


class Connection(Protocol):
    def run(self, command: str, timeout: float | None = None, check: bool = True,
            retry_if_dropped: bool = False) -> Any: ...

    def sftp(self) -> Any: ...


@dataclass(frozen=True)
class SyncProgress(Progress):
    """A progress report with the counts behind it (content bytes, not counting resumed parts)."""

    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0


@dataclass(frozen=True)
class PlannedFile:
    """A file a sync sends: why, and from which byte (a resumed upload starts past 0)."""

    path: str
    size: int
    reason: str
    resume_from: int = 0


@dataclass
class SyncPlan:
    """What a sync would do now. Paths are relative to the project folder, with ``/``."""

    remote_dir: str
    """``<data_root>/<project-key>`` on the cluster, absolute ("" when no data is configured)."""
    send: list[PlannedFile] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[LeftOut] = field(default_factory=list)
    """Not sent although named by ``[cluster] data``: symbolic links, special or unreadable files,
    missing entries."""
    excluded: list[LeftOut] = field(default_factory=list)
    """Left out on purpose: exclude patterns, data references, Workbench's and Git's folders."""
    deleted: list[str] = field(default_factory=list)
    """On the cluster from an earlier sync, but no longer in the local data (deleted or now
    excluded); removed there only by ``sync_data(..., delete=True)``."""
    refs: list[DataRef] = field(default_factory=list)

    @property
    def bytes_to_send(self) -> int:
        return sum(f.size - f.resume_from for f in self.send)

    @property
    def configured(self) -> bool:
        return bool(self.remote_dir)

    def lines(self) -> list[str]:
        """The plan as text, one line per file, for a dry run."""
        if not self.configured:
            return ["No data to sync: add [cluster] data = [\"data/\"] (or [cluster.data_refs]) to workbench.toml."]
        out = [f"Data folder on the cluster: {self.remote_dir}"]
        out += [f"send      {f.path}  ({_size(f.size)}, {f.reason})" for f in self.send]
        out += [f"skip      {s.path}  ({s.reason})" for s in self.skipped]
        out += [f"exclude   {s.path}  ({s.reason})" for s in self.excluded]
        out += [f"deleted   {path}  (only on the cluster now; kept there unless deleting)" for path in self.deleted]
        for ref in self.refs:
            state = "" if ref.exists is not False else ", missing on the cluster"
            state += f", {ref.problem}" if ref.problem else ""
            out.append(f"reference {ref.name} -> {ref.remote_path}  (not uploaded{state})")
        out.append(f"{len(self.send)} to send ({_size(self.bytes_to_send)}), {len(self.unchanged)} unchanged, "
                   f"{len(self.skipped)} skipped, {len(self.excluded)} excluded, {len(self.deleted)} deleted locally")
        return out


@dataclass
class SyncReport:
    """What a sync did."""

    files_sent: int
    bytes_sent: int
    """Bytes that went over the connection for file data (bundle framing included)."""
    files_unchanged: int
    skipped: list[LeftOut] = field(default_factory=list)
    excluded: list[LeftOut] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Those of ``deleted`` removed from the cluster (``delete=True``)."""
    resumed: list[str] = field(default_factory=list)
    """Files whose upload continued an interrupted one."""
    refs: list[DataRef] = field(default_factory=list)
    remote_dir: str = ""
    seconds: float = 0.0


def read_settings(project_dir: Path | str, settings: dict | None = None) -> DataSettings:
    """The project's data settings (``settings`` is its parsed ``workbench.toml``; None reads it)."""
    if settings is None:
        from workbench.project.project_file import load_project

        settings = load_project(project_dir).settings
    return read_data_settings(settings, project_dir)


def remote_data_dir(conn: Connection, profile, project_dir: Path | str) -> str:
    """Where the project's data is on the cluster: ``<data_root>/<project-key>``, absolute."""
    from workbench.project.project_file import project_key

    return transfer.remote_root(conn.sftp(), profile.data_root, project_key(project_dir))


def plan_sync(conn: Connection | None, project_dir: Path | str, profile, settings: dict | None = None,
              progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> SyncPlan:
    """What ``sync_data`` would send, leave alone, skip and report as deleted, sending nothing.

    Reads the local files that changed since they were last hashed (the hashes are cached), the
    manifest and a listing of the data folder on the cluster. With ``conn`` None it only lists
    the local side, every file as to be sent. Raises ClusterError for wrong
    settings or a failing cluster, ConnectionLost when the connection drops, Cancelled.
    """
    if conn is None:
        return _offline_plan(Path(project_dir), profile, settings)
    with _drop_guard(conn, "comparing the data with the cluster's", getattr(profile, "data_root", "")):
        prepared = _prepare(conn, Path(project_dir), profile, settings, progress, cancel)
    if prepared is not None:
        prepared.cache.save()
        return prepared.plan
    return SyncPlan(remote_dir="", **_left_out(read_settings(project_dir, settings), Path(project_dir)))


def _offline_plan(project_dir: Path, profile, settings: dict | None) -> SyncPlan:
    """Without a connection: what would be considered, every file as if new."""
    from workbench.project.project_file import project_key

    data = read_settings(project_dir, settings)
    if data.empty:
        return SyncPlan(remote_dir="", **_left_out(data, project_dir))
    selection = select_data(project_dir, data)
    return SyncPlan(remote_dir=posixpath.join(profile.data_root, project_key(project_dir)),
                    send=[PlannedFile(f.path, f.size, "not compared with the cluster (not connected)")
                          for f in selection.files],
                    skipped=selection.skipped, excluded=selection.excluded, refs=selection.refs)


def sync_data(conn: Connection, project_dir: Path | str, profile, settings: dict | None = None,
              progress: ProgressCallback | None = None, cancel: CancelToken | None = None, *,
              delete: bool = False) -> SyncReport:
    """Bring ``<data_root>/<project-key>`` on the cluster up to date with the project's data.

    Only new and changed files are sent; each lands whole under its final name. ``delete=True``
    also removes files that are no longer in the local data. ``progress`` gets SyncProgress
    reports; ``cancel`` stops at the next chunk (Cancelled is raised after what landed is recorded,
    and an interrupted large file resumes next time). Raises ClusterError (ConnectionLost when
    the connection drops), and ClusterError naming the files that could not be placed.
    """
    started = time.monotonic()
    root_dir = Path(project_dir)
    with _drop_guard(conn, "comparing the data with the cluster's", getattr(profile, "data_root", "")):
        prepared = _prepare(conn, root_dir, profile, settings, progress, cancel)
    if prepared is None:
        left = _left_out(read_settings(root_dir, settings), root_dir)
        return SyncReport(0, 0, 0, skipped=left["skipped"], excluded=left["excluded"])
    sender = _Sender(conn, prepared, progress, cancel)
    try:
        with _drop_guard(conn, "syncing the data", profile.data_root):
            sender.run(delete)
    finally:
        prepared.cache.save()
    plan = prepared.plan
    report = SyncReport(
        files_sent=sender.files_sent, bytes_sent=sender.bytes_sent, files_unchanged=len(plan.unchanged),
        skipped=plan.skipped + sender.skipped, excluded=plan.excluded, deleted=plan.deleted,
        removed=sender.removed, resumed=sender.resumed, refs=sender.refs, remote_dir=plan.remote_dir,
        seconds=time.monotonic() - started)
    if sender.failed:
        first = sender.failed[0]
        raise ClusterError(f"{len(sender.failed)} file(s) could not be placed on the cluster in {plan.remote_dir} "
                           f"(first: {first.path}: {first.reason}). Check the space and permissions there, then "
                           f"sync again.", details="\n".join(f"{f.path}: {f.reason}" for f in sender.failed))
    return report


# ---------------------------------------------------------------------------------------------
# Planning


@dataclass
class _Prepared:
    plan: SyncPlan
    selection: DataSelection
    sftp: Any
    root: str
    manifest: Manifest
    manifest_found: bool
    manifest_changed: bool
    listing: transfer.RemoteListing
    cache: HashCache
    outgoing: list[tuple[LocalFile, PlannedFile]]


def _prepare(conn: Connection, project_dir: Path, profile, settings: dict | None,
             progress: ProgressCallback | None, cancel: CancelToken | None) -> _Prepared | None:
    from workbench.project.project_file import project_key

    data = read_settings(project_dir, settings)
    if data.empty:
        return None
    if not getattr(profile, "data_root", ""):
        raise ClusterError(f"The cluster profile {getattr(profile, 'name', '')} has no data folder: set its data "
                           f"root (`workbench cluster add NAME --data-root PATH`, or Edit in Cluster Profiles).")
    selection = select_data(project_dir, data)
    sftp = conn.sftp()
    root = transfer.remote_root(sftp, profile.data_root, project_key(project_dir))
    manifest = transfer.read_manifest(sftp, root)
    found = manifest is not None
    manifest = manifest or Manifest()
    folders = {posixpath.dirname(f.path) for f in selection.files}
    folders |= {posixpath.dirname(path) for path in manifest.files}
    folders |= {posixpath.dirname(ref.name) for ref in selection.refs}
    listing = transfer.list_remote(conn, sftp, root, folders)
    cache = data_hash_cache(project_dir)
    cache.keep_only({f.path for f in selection.files})

    plan = SyncPlan(remote_dir=root, skipped=list(selection.skipped), excluded=list(selection.excluded))
    taken = {f.path for f in selection.files} | set(manifest.files)
    outgoing: list[tuple[LocalFile, PlannedFile]] = []
    to_hash: list[tuple[LocalFile, str]] = []
    adopt: list[LocalFile] = []
    for item in selection.files:
        entry, remote_size = manifest.get(item.path), listing.files.get(item.path)
        if entry is None:
            if remote_size == item.size:
                adopt.append(item)  # there already (a cut sync, a lost manifest)? its hash will tell
            else:
                outgoing.append((item, _planned(item, "new", listing, taken)))
        elif remote_size is None:
            outgoing.append((item, _planned(item, "missing on the cluster", listing, taken)))
        elif remote_size != entry.size:
            outgoing.append((item, _planned(item, "changed on the cluster", listing, taken)))
        elif item.size != entry.size:
            outgoing.append((item, _planned(item, "changed", listing, taken)))
        else:
            to_hash.append((item, entry.sha256))

    hashes = _local_hashes([item for item, _ in to_hash] + adopt, cache, progress, cancel)
    for item, remote_sha in to_hash:
        if hashes.get(item.path) == remote_sha:
            plan.unchanged.append(item.path)
        else:
            outgoing.append((item, _planned(item, "changed", listing, taken)))
    changed = False
    if adopt:
        there = transfer.remote_hashes(conn, root, [item.path for item in adopt])
        for item in adopt:
            sha = hashes.get(item.path)
            if sha is not None and there.get(item.path) == sha:
                plan.unchanged.append(item.path)
                manifest.record(item.path, item.size, sha)
                changed = True
            else:
                outgoing.append((item, _planned(item, "new", listing, taken)))
    # Files that could not be hashed just now (unreadable, vanished) are reported, not sent.
    unreadable = {item.path for item in [i for i, _ in to_hash] + adopt if item.path not in hashes}
    if unreadable:
        plan.skipped += [LeftOut(path, "cannot be read") for path in sorted(unreadable)]
        outgoing = [(item, planned) for item, planned in outgoing if item.path not in unreadable]
        plan.unchanged = [path for path in plan.unchanged if path not in unreadable]

    outgoing.sort(key=lambda pair: pair[0].path)
    plan.send = [planned for _, planned in outgoing]
    plan.unchanged.sort()
    local = {f.path for f in selection.files} | {s.path for s in plan.skipped}
    plan.deleted = sorted(path for path in manifest.files if path not in local)
    plan.refs = [_check_ref(sftp, ref, listing) for ref in selection.refs]
    return _Prepared(plan, selection, sftp, root, manifest, found, changed, listing, cache, outgoing)


def _planned(item: LocalFile, reason: str, listing: transfer.RemoteListing, taken: set[str]) -> PlannedFile:
    if item.size >= transfer.DIRECT_MIN_SIZE:
        part = listing.files.get(transfer.temporary_name(item.path, taken), 0)
        if 0 < part < item.size:
            return PlannedFile(item.path, item.size, f"{reason}, resuming at {_size(part)}", part)
    return PlannedFile(item.path, item.size, reason)


def _local_hashes(items: list[LocalFile], cache: HashCache, progress, cancel) -> dict[str, str]:
    """sha256 of ``items``, from the cache when size and mtime match, else read (and cached)."""
    hashes = {}
    total = sum(item.size for item in items if cache.lookup(item.path, item.size, item.mtime_ns) is None)
    done, last = 0, 0.0
    for number, item in enumerate(items):
        cached = cache.lookup(item.path, item.size, item.mtime_ns)
        if cached is not None:
            hashes[item.path] = cached
            continue
        if cancel is not None:
            cancel.raise_if_cancelled()
        try:
            sha = hash_file(item.local, cancel)
        except OSError:
            continue
        hashes[item.path] = sha
        if transfer.unchanged_since_listed(item):
            cache.record(item.path, item.size, item.mtime_ns, sha)
        done += item.size
        now = time.monotonic()
        if progress is not None and now - last >= _PROGRESS_EVERY_S:
            last = now
            progress(Progress(f"Checking data files ({number + 1} of {len(items)})",
                              done / total if total else None))
    return hashes


def _check_ref(sftp, ref: DataRef, listing: transfer.RemoteListing) -> DataRef:
    """``ref`` with its target made absolute (a link's relative target would mean something
    else), whether that exists, and what stands in the way of the link."""
    target = transfer.absolute(sftp, ref.remote_path)
    try:
        sftp.stat(target)
        exists = True
    except OSError as exc:
        if not transfer.is_missing(exc):
            raise
        exists = False
    kind = "d" if ref.name in listing.dirs else "f" if ref.name in listing.files else listing.others.get(ref.name)
    problem = transfer.existing_entry_problem(ref.name, kind, target) if kind in ("d", "f") else ""
    return DataRef(ref.name, target, exists, problem)


def _left_out(data: DataSettings, project_dir: Path) -> dict:
    selection = select_data(project_dir, data)
    return {"skipped": selection.skipped, "excluded": selection.excluded}


# ---------------------------------------------------------------------------------------------
# Sending


class _Sender:
    def __init__(self, conn: Connection, prepared: _Prepared, progress, cancel):
        self.conn = conn
        self.p = prepared
        self.sftp = prepared.sftp
        self.root = prepared.root
        self.progress = progress
        self.cancel = cancel
        self._session = _session_id()
        self.applier = RemoteApplier(conn, prepared.sftp, prepared.root, self._session)
        self.files_sent = 0
        self.bytes_sent = 0
        self.skipped: list[LeftOut] = []
        self.failed: list[LeftOut] = []
        self.removed: list[str] = []
        self.resumed: list[str] = []
        self.refs: list[DataRef] = list(prepared.plan.refs)
        self._files_done = 0
        self._bytes_done = 0
        self._files_total = len(prepared.outgoing)
        self._bytes_total = prepared.plan.bytes_to_send
        self._last_progress = 0.0
        self._manifest_dirty = prepared.manifest_changed or not prepared.manifest_found
        self._manifest_saved = time.monotonic()
        self._taken = {f.path for f in prepared.selection.files} | set(prepared.manifest.files)
        self._again: list[LocalFile] = []

    def run(self, delete: bool) -> None:
        small = [(item, planned) for item, planned in self.p.outgoing if item.size < transfer.DIRECT_MIN_SIZE]
        large = [(item, planned) for item, planned in self.p.outgoing if item.size >= transfer.DIRECT_MIN_SIZE]
        folders = {posixpath.dirname(item.path) for item, _ in large}
        folders |= {posixpath.dirname(ref.name) for ref in self.refs}
        needs_runner = bool(small) or any(planned.resume_from for _, planned in large)
        if needs_runner:
            folders.add(STAGING_NAME)
        existing = set(self.p.listing.dirs) | ({""} if self.p.listing.root_exists else set())
        try:
            transfer.make_folders(self.sftp, self.root, folders - {""}, existing)
            if needs_runner:
                self.applier.start()
            self._send_bundles(small)
            for item, planned in large:
                self._send_large(item, planned.resume_from)
            self._take(self.applier.finish())
            self.applier.raise_failure()
            for item in self._again:
                self._send_large(item, 0)
            if delete and self.p.plan.deleted:
                transfer.remove_remote_files(self.conn, self.root, self.p.plan.deleted)
                for path in self.p.plan.deleted:
                    self.p.manifest.forget(path)
                self.removed = list(self.p.plan.deleted)
                self._manifest_dirty = True
            self.refs = [self._link(ref) for ref in self.refs]
        except Cancelled:
            self._wind_down()
            raise
        except BaseException as exc:
            if not transfer.is_connection_error(exc):
                self._wind_down()
            raise
        self._save_manifest()
        self._report(now_anyway=True)

    def _send_bundles(self, small: list[tuple[LocalFile, PlannedFile]]) -> None:
        writer = None
        count = 0
        try:
            for item, _ in small:
                self._check_cancel()
                if writer is None:
                    count += 1
                    writer = transfer.BundleWriter(self.sftp, self.root, f"{self._session}-{count}")
                try:
                    self.bytes_sent += writer.add(item)
                except transfer.LocalFileProblem as problem:
                    self.skipped.append(LeftOut(item.path, str(problem)))
                self._advance(item.size, files=1)
                if writer.full:
                    self._finish_bundle(writer)
                    writer = None
            if writer is not None:
                self._finish_bundle(writer)
                writer = None
        finally:
            if writer is not None:
                writer.abandon(self.sftp)

    def _finish_bundle(self, writer: transfer.BundleWriter) -> None:
        before = writer.sent_bytes
        job = writer.finish(self.root)
        self.bytes_sent += writer.sent_bytes - before
        if job.members:
            self.applier.submit(job)
        self._take(self.applier.collect())

    def _send_large(self, item: LocalFile, offset: int) -> None:
        self._check_cancel()
        temporary = transfer.temporary_name(item.path, self._taken)
        remote_temporary = posixpath.join(self.root, temporary)
        sent_before = self._bytes_done
        try:
            try:
                sha = transfer.upload_file(self.sftp, item, remote_temporary, offset, self.cancel,
                                           lambda n: self._advance(n, every_chunk=True))
            except FileNotFoundError:
                if not offset:
                    raise
                offset = 0  # the .part went away since the listing: start over
                sha = transfer.upload_file(self.sftp, item, remote_temporary, 0, self.cancel,
                                           lambda n: self._advance(n, every_chunk=True))
        except transfer.LocalFileProblem as problem:
            self.skipped.append(LeftOut(item.path, str(problem)))
            self._advance(0, files=1)
            return
        finally:
            self.bytes_sent += self._bytes_done - sent_before
        if transfer.unchanged_since_listed(item):
            self.p.cache.record(item.path, item.size, item.mtime_ns, sha)
        if offset:
            self.resumed.append(item.path)
            self.applier.submit(transfer.VerifyJob(item, temporary, sha))
        else:
            self.sftp.posix_rename(remote_temporary, posixpath.join(self.root, item.path))
            self._landed(item, sha)
        self._advance(0, files=1)
        self._take(self.applier.collect())

    def _take(self, outcomes: list[Landed]) -> None:
        for outcome in outcomes:
            job = outcome.job
            if isinstance(job, transfer.BundleJob):
                for item, sha in job.members:
                    if outcome.ok:
                        self._landed(item, sha)
                        if transfer.unchanged_since_listed(item):
                            self.p.cache.record(item.path, item.size, item.mtime_ns, sha)
                    else:
                        self.failed.append(LeftOut(item.path, outcome.problem))
            elif outcome.ok:
                self._landed(job.item, job.sha256)
            elif outcome.mismatch:
                # The .part held the start of another version of the file: send it whole.
                self.resumed.remove(job.item.path)
                self._again.append(job.item)
            else:
                self.failed.append(LeftOut(job.item.path, outcome.problem))
        if self._manifest_dirty and time.monotonic() - self._manifest_saved >= MANIFEST_EVERY_S:
            self._save_manifest()

    def _landed(self, item: LocalFile, sha: str) -> None:
        self.p.manifest.record(item.path, item.size, sha)
        self.files_sent += 1
        self._manifest_dirty = True

    def _link(self, ref: DataRef) -> DataRef:
        problem = transfer.link_reference(self.sftp, self.root, ref.name, ref.remote_path)
        return DataRef(ref.name, ref.remote_path, ref.exists, problem)

    def _wind_down(self) -> None:
        """After a cancel or a failure with the connection still up: let the uploads that
        finished land, and record them."""
        try:
            self._take(self.applier.finish())
            self._save_manifest()
        except Exception:  # the original exception says more; what landed is found by hash next time
            pass

    def _save_manifest(self) -> None:
        if self._manifest_dirty:
            transfer.write_manifest(self.sftp, self.root, self.p.manifest)
            self._manifest_dirty = False
            self._manifest_saved = time.monotonic()

    def _check_cancel(self) -> None:
        if self.cancel is not None:
            self.cancel.raise_if_cancelled()

    def _advance(self, size: int, files: int = 0, every_chunk: bool = False) -> None:
        """Count what was sent; reported at most every _PROGRESS_EVERY_S, except the chunks of a
        large file (1 MiB each), so a caller can act on a precise point of a long upload."""
        self._bytes_done += size
        self._files_done += files
        self._report(every_chunk)

    def _report(self, now_anyway: bool = False) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if not now_anyway and now - self._last_progress < _PROGRESS_EVERY_S:
            return
        self._last_progress = now
        total = self._bytes_total
        self.progress(SyncProgress(
            f"Syncing data: {self._files_done} of {self._files_total} files, "
            f"{_size(self._bytes_done)} of {_size(total)}",
            min(1.0, self._bytes_done / total) if total else 1.0,
            files_done=self._files_done, files_total=self._files_total, bytes_done=self._bytes_done,
            bytes_total=total))


@contextmanager
def _drop_guard(conn: Connection, doing: str, data_root: str = ""):
    """A dropped connection becomes ConnectionLost (through the connection's own translation,
    when it has one: paramiko reports a drop as EOFError, OSError or SSHException, depending on
    where it is noticed); a file operation the cluster refuses becomes a ClusterError."""
    guard = getattr(conn, "drop_guard", None)
    try:
        if guard is None:
            yield
        else:
            with guard(doing):
                yield
    except ClusterError:
        raise
    except OSError as exc:
        if transfer.is_connection_error(exc):
            raise
        where = f" Check that the profile's data root ({data_root}) is a folder you can write to there." \
            if data_root else ""
        raise ClusterError(f"The cluster refused an operation while {doing}: {exc}.{where}") from exc


def _session_id() -> str:
    return f"{int(time.time())}-{os.getpid()}-{os.urandom(3).hex()}"


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"
