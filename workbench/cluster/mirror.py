"""The local run folder of a cluster run as a mirror of the remote one.

``LogMirror`` appends what the job wrote to ``stdout.log``, ``stderr.log`` and ``metrics.jsonl``
on the cluster to the same files here, from where it left off: the offset in a remote file is
the local file's size minus a base (0 for a new run; what the local file held before this run's
job began writing for a run resumed as a new one), so the local files themselves are the record
and a follower started again never copies a byte twice. When the trainer writes no
``metrics.jsonl`` of its own, the ``step=… loss=…`` lines of the mirrored stdout become its
records, as the local supervisor does it.

The order in which the two logs got their bytes is noted in ``log-order``
(``workbench.training.log_order``), so that a log view shows each line where it came. After a
stop that Workbench asked for, Slurm's note that it ended the job's step ("slurmstepd: error:
*** STEP 2.0 ON node CANCELLED AT … ***") is no error of the run: it is rewritten, in place and
to the same length, as "workbench: job step 2.0 stopped on request", so the local file stays
as long as the remote one. Such a note for a cancel no one here asked for, or one "DUE TO"
something (a time limit), stays as it is.

``pull_products`` fetches ``checkpoints/``, ``outputs/`` and ``outcome.json``: only files that are
new or changed (size or modification time), each through a ``.part`` file renamed into place, with
a checkpoint's ``latest.json`` last so that it never names a file not here yet.

The SFTP client is paramiko's (``stat``, ``open``, ``listdir_attr``, ``get``).
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.platform.atomic_files import write_text_atomically
from workbench.training.log_order import ArrivalRecorder
from workbench.training.log_patterns import PrintedOutput, patterns_of_run_folder
from workbench.training.metrics import PrintedMetrics, format_record, last_step
from workbench.training.run_folder import RunFolder

MIRRORED = ("stdout.log", "stderr.log", "metrics.jsonl")
PRODUCT_FOLDERS = ("checkpoints", "outputs")
PRODUCT_FILES = ("outcome.json",)
STATE_FILE = "mirror.json"
# At most this much of one file is copied a poll, so one poll never takes long.
CHUNK_LIMIT = 8 << 20
# Slurm's note that it ended a step or the job at someone's request (no "DUE TO …" reason).
STOP_NOTE = re.compile(rb"(?:srun|slurmstepd(?:-[^:\s]*)?): error: "
                       rb"\*\*\* (STEP|JOB) (\S+) ON \S+ CANCELLED AT \S+ \*\*\*")
_NOTE_PREFIXES = (b"srun", b"slurmstepd")


class LogMirror:
    """Copies what the remote run folder's logs and metrics gained since the last call."""

    def __init__(self, folder: RunFolder, remote_run_dir: str, metrics_source: str = ""):
        self.folder = folder
        self.remote_run_dir = remote_run_dir.rstrip("/")
        self.metrics_source = metrics_source   # "", "trainer" or "stdout", as RunInfo has it
        self.stop_requested = False   # set while a stop asked for here is under way
        self._state = read_mirror_state(folder)
        self._printed: PrintedMetrics | None = None
        self._output: PrintedOutput | None = None
        self._order = ArrivalRecorder(folder.path)

    def poll(self, sftp: Any, final: bool = False) -> bool:
        """Copy the new bytes (everything there is when ``final``); whether anything came.
        Transport errors (a dropped connection) propagate."""
        got = False
        while True:
            more = False
            for name in ("stdout.log", "stderr.log"):
                count, full = self._copy(sftp, name, final=final)
                got, more = got or count > 0, more or not full
            # Only now: a trainer that writes metrics.jsonl creates it before printing any step, so
            # a file not there now was not there when the lines just copied were printed either.
            if self.metrics_source != "stdout":
                count, full = self._copy(sftp, "metrics.jsonl", is_metrics=True)
                got, more = got or count > 0, more or not full
            if self.metrics_source != "trainer":
                self._parse_stdout(final)
            if not (final and more):
                return got

    def _copy(self, sftp: Any, name: str, is_metrics: bool = False, final: bool = False) -> tuple[int, bool]:
        """Append the new bytes of remote ``name``; (bytes copied, whether that was all)."""
        local = self.folder.path / name
        base = int(self._state["bases"].get(name, 0))
        offset = max(0, _size(local) - base)
        remote = f"{self.remote_run_dir}/{name}"
        try:
            size = sftp.stat(remote).st_size
        except OSError as exc:
            if _missing(exc):
                return 0, True
            raise
        if is_metrics and self.metrics_source == "":
            self.metrics_source = "trainer"
        if size is None or size <= offset:
            return 0, True
        want = min(size - offset, CHUNK_LIMIT)
        with sftp.open(remote, "rb") as handle:
            handle.seek(offset)
            if want > 1 << 20:
                handle.prefetch(want)
            data = _read_exactly(handle, want)
        if name == "stderr.log" and self.stop_requested:
            data = quiet_stop_notes(data, hold_partial=not final)
        if data:
            if name in ("stdout.log", "stderr.log"):
                self._order.before_append(name.split(".")[0])
            with open(local, "ab") as out:
                out.write(data)
        return len(data), offset + len(data) >= size

    def _parse_stdout(self, final: bool) -> None:
        """Turn the metric lines of the mirrored stdout (since the last call) into records."""
        start = int(self._state.get("parsed", 0))
        try:
            with open(self.folder.stdout_log, "rb") as handle:
                handle.seek(start)
                data = handle.read()
        except FileNotFoundError:
            return
        end = len(data) if final else data.rfind(b"\n") + 1
        if end <= 0:
            return
        if self._output is None:
            previous = last_step(self.folder.metrics) if self.metrics_source == "stdout" else None
            self._printed = PrintedMetrics(previous)
            self._output = PrintedOutput(patterns_of_run_folder(self.folder), previous)
        # Whole lines only (a line is cut at its end), so no character is cut either.
        records = self._output.feed(data[:end].decode("utf-8", errors="replace"), final=True)
        if records:
            self.metrics_source = "stdout"
            with open(self.folder.metrics, "a", encoding="utf-8") as out:
                for record in records:
                    out.write(format_record(self._printed.record(record)))
        self._state["parsed"] = start + end
        self.save()

    def save(self) -> None:
        write_mirror_state(self.folder, self._state)


def quiet_stop_notes(data: bytes, hold_partial: bool = False) -> bytes:
    """``data`` (stderr bytes) with Slurm's notes of a requested cancel rewritten as
    "workbench: job step 2.0 stopped on request", padded with spaces to the note's length. With
    ``hold_partial``, a last line without its end that may be the start of such a note is left
    out (it is copied once it is whole)."""
    lines = data.split(b"\n")
    tail = lines.pop()
    if hold_partial and tail and any(tail.startswith(prefix) or prefix.startswith(tail) for prefix in _NOTE_PREFIXES):
        tail = None
    out = []
    for line in lines:
        match = STOP_NOTE.fullmatch(line.rstrip(b"\r"))
        if match:
            what = b"job step" if match.group(1) == b"STEP" else b"job"
            text = b"workbench: " + what + b" " + match.group(2) + b" stopped on request"
            if len(text) > len(line):
                text = b"workbench: stopped on request"
            if len(text) <= len(line):
                line = text.ljust(len(line))
        out.append(line)
    return b"".join(line + b"\n" for line in out) + (tail or b"")


def read_mirror_state(folder: RunFolder) -> dict:
    """``mirror.json``: ``{"bases": {name: bytes}, "parsed": bytes, "stderr_segment": bytes}``
    (zeros when absent): the bases, how far the stdout has been read for metric lines, and
    where the current job's stderr begins locally (its error line is looked for from there)."""
    try:
        state = json.loads((folder.path / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    if not isinstance(state, dict):
        state = {}
    bases = state.get("bases") if isinstance(state.get("bases"), dict) else {}
    return {"bases": {name: int(bases.get(name, 0)) for name in MIRRORED}, "parsed": int(state.get("parsed", 0)),
            "stderr_segment": int(state.get("stderr_segment", 0))}


def write_mirror_state(folder: RunFolder, state: dict) -> None:
    write_text_atomically(folder.path / STATE_FILE, json.dumps(state) + "\n")


def start_mirror_at(folder: RunFolder, remote_sizes: dict[str, int] | None = None) -> None:
    """Make the mirror go on from the local files as they are now: the remote files are empty
    (a new remote run folder), or have ``remote_sizes`` bytes that the local files end with."""
    remote_sizes = remote_sizes or {}
    state = read_mirror_state(folder)
    for name in MIRRORED:
        state["bases"][name] = _size(folder.path / name) - int(remote_sizes.get(name, 0))
    state["parsed"] = _size(folder.stdout_log)
    state["stderr_segment"] = _size(folder.stderr_log)
    write_mirror_state(folder, state)


# ---------------------------------------------------------------------------------------------
# products


@dataclass
class PullReport:
    fetched: list[str] = field(default_factory=list)      # run-folder-relative paths
    unchanged: int = 0
    bytes_fetched: int = 0

    @property
    def outputs(self) -> list[str]:
        return [path for path in self.fetched if path.startswith("outputs/")]


def remote_products(conn: Any, remote_run_dir: str) -> list[tuple[str, int, int]]:
    """``(relative path, size, mtime)`` of every file under the remote ``checkpoints/`` and
    ``outputs/``, and ``outcome.json`` when it is there (one ``find`` on the cluster)."""
    import shlex

    root = shlex.quote(remote_run_dir.rstrip("/"))
    names = " ".join([*PRODUCT_FOLDERS, *PRODUCT_FILES])
    result = conn.run(f"cd {root} 2>/dev/null && find {names} -type f -printf '%s %T@ %p\\n' 2>/dev/null; true",
                      check=False)
    found = []
    for line in result.stdout.splitlines():
        size, mtime, path = (line.split(" ", 2) + ["", ""])[:3]
        if not path or not size.isdigit() or path.endswith(".part") or Path(path).name.startswith(".tmp"):
            continue
        try:
            found.append((path, int(size), int(float(mtime))))
        except ValueError:
            continue
    # latest.json names a checkpoint: fetched after the checkpoints it may name.
    found.sort(key=lambda item: (Path(item[0]).name == "latest.json", item[0]))
    return found


def pull_products(conn: Any, remote_run_dir: str, folder: RunFolder, cancel=None, progress=None) -> PullReport:
    """Fetch the new or changed files of the remote ``checkpoints/``, ``outputs/`` and
    ``outcome.json`` into ``folder`` over ``conn`` (a ClusterConnection). A file that
    disappears meanwhile (a checkpoint rotated away while the job runs) is skipped."""
    report = PullReport()
    root = remote_run_dir.rstrip("/")
    files = remote_products(conn, root)
    sftp = conn.sftp() if files else None
    total = sum(size for _, size, mtime in files) or 1
    for relative, size, mtime in files:
        if cancel is not None:
            cancel.raise_if_cancelled()
        local = folder.path / relative
        try:
            status = local.stat()
            if status.st_size == size and int(status.st_mtime) == mtime:
                report.unchanged += 1
                continue
        except FileNotFoundError:
            pass
        local.parent.mkdir(parents=True, exist_ok=True)
        part = local.with_name(f"{local.name}.{os.getpid()}.part")
        try:
            download(sftp, f"{root}/{relative}", part)
        except OSError as exc:
            part.unlink(missing_ok=True)
            if _missing(exc):
                continue
            raise
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        os.utime(part, (mtime, mtime))
        os.replace(part, local)
        report.fetched.append(relative)
        report.bytes_fetched += size
        if progress is not None:
            from workbench.tasks import Progress

            progress(Progress(f"Fetched {relative}", min(1.0, report.bytes_fetched / total)))
    return report


def download(sftp, remote: str, local: Path) -> int:
    """Copy the remote file to ``local``; its size. Reads exactly the size the file has (with
    requests sent ahead), never past its end: a read at the end costs a round trip or more."""
    with sftp.open(remote, "rb") as handle:
        size = handle.stat().st_size or 0
        if size > 1 << 16:
            handle.prefetch(size)
        with open(local, "wb") as out:
            left = size
            while left > 0:
                chunk = handle.read(min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
    return size - left


def local_outputs(folder: RunFolder) -> list[str]:
    """Every file under the local ``outputs/``, run-folder-relative, sorted."""
    root = folder.outputs
    if not root.is_dir():
        return []
    return sorted(str(path.relative_to(folder.path)) for path in root.rglob("*")
                  if path.is_file() and not path.name.endswith(".part"))


# ---------------------------------------------------------------------------------------------


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _missing(exc: OSError) -> bool:
    return isinstance(exc, FileNotFoundError) or getattr(exc, "errno", None) == errno.ENOENT


def _read_exactly(handle: Any, count: int) -> bytes:
    chunks, left = [], count
    while left > 0:
        chunk = handle.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
