"""Dataset versions: manifests, not copies.

A version ``NNNN`` is ``datasets/train_NNNN.txt`` (one sample a line, sorted: a project-relative
path with its size and sha256, or a sample id) and ``train_NNNN.json`` (counts, the manifest's
hash, the parent version, when, by whom and why it was cut). The validation split,
``datasets/val.txt``, is written with the first version and kept as it is until the user
replaces it on purpose (``new_val``), which ``val-history.jsonl`` records: iterations stay
comparable.

A fraction takes the first part of the samples in a fixed order (each key's sha256 with a fixed
seed), so the 50 %, 60 %, ... 100 % versions of the same data nest, and a sample added later
does not move the others.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.registry.errors import RegistryError
from workbench.registry.samples import CurrentSamples, Sample, current_samples
from workbench.registry.settings import RegistrySettings
from workbench.registry.store import RegistryFolder, format_number, now_iso, os_user, parse_number
from workbench.tasks import CancelToken, ProgressCallback

MANIFEST_PREFIX = "train_"
VAL_MANIFEST = "val.txt"
VAL_HISTORY = "val-history.jsonl"
ORDER_SEED = "workbench-dataset-order-0"
_FORMAT = 1


@dataclass
class DatasetVersion:
    number: int
    manifest: Path
    samples: int
    bytes: int | None
    manifest_sha256: str
    kind: str
    created: str
    created_by: str
    reason: str = ""
    fraction: float | None = None
    parent: int | None = None
    added: int = 0
    removed: int = 0
    changed: int = 0
    val_samples: int | None = None
    val_sha256: str = ""

    @property
    def name(self) -> str:
        return format_number(self.number)

    def to_json(self) -> dict:
        data = asdict(self)
        data["manifest"] = str(self.manifest)
        data["version"] = self.name
        data["parent"] = format_number(self.parent) if self.parent is not None else None
        return data


@dataclass
class DataChanges:
    """How the samples of one state differ from another's: keys added, removed, changed."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def to_json(self) -> dict:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


@dataclass
class CutResult:
    version: DatasetVersion
    changes: DataChanges           # since the version before it (everything, for the first)
    val_note: str = ""             # what happened to val.txt, when anything did
    hashed: int = 0                # files read to hash them


class DatasetVersions:
    """The dataset versions of one project."""

    def __init__(self, project_dir: Path | str, settings: RegistrySettings, python: str = sys.executable):
        self.project_dir = Path(project_dir)
        self.settings = settings
        self.python = python
        self.store = RegistryFolder(settings.folder)
        self.folder = self.store.datasets

    # --- reading -----------------------------------------------------------------------

    def list(self) -> list[DatasetVersion]:
        """Every version, oldest first (a version whose metadata is damaged is an error)."""
        if not self.folder.is_dir():
            return []
        numbers = sorted(parse_number(path.stem[len(MANIFEST_PREFIX):])
                         for path in self.folder.glob(f"{MANIFEST_PREFIX}*.json")
                         if path.stem[len(MANIFEST_PREFIX):].isdigit())
        return [self._read_metadata(number) for number in numbers]

    def latest(self) -> DatasetVersion | None:
        versions = self.list()
        return versions[-1] if versions else None

    def get(self, number: int | str) -> DatasetVersion:
        """Version ``number``, its manifest checked against the hash recorded when it was cut."""
        number = parse_number(number, "dataset version")
        version = self._read_metadata(number)
        actual = _sha256_of(version.manifest)
        if actual is None:
            raise RegistryError(f"dataset version {version.name}'s manifest {version.manifest} is missing. Restore "
                                "it (from Git or a backup), or cut a new version.")
        if actual != version.manifest_sha256:
            raise RegistryError(f"dataset version {version.name}'s manifest {version.manifest.name} does not match "
                                "the hash recorded when it was cut: it was edited or damaged. Restore it (from Git "
                                "or a backup), or cut a new version.")
        return version

    def keys(self, number: int | str) -> list[str]:
        """The sample keys of version ``number``, in manifest order."""
        return [sample.key for sample in self.samples(number)]

    def samples(self, number: int | str) -> list[Sample]:
        version = self.get(number)
        return read_manifest(version.manifest)

    def val_manifest(self) -> Path | None:
        path = self.folder / VAL_MANIFEST
        return path if path.is_file() else None

    def val_history(self) -> list[dict]:
        path = self.folder / VAL_HISTORY
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def pending(self, progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> DataChanges:
        """What the data holds now that the newest version does not (all of it, with none)."""
        now = self._current(progress, cancel)
        latest = self.latest()
        before = {} if latest is None else {s.key: s for s in self.samples(latest.number)}
        if latest is not None and latest.fraction not in (None, 1.0):
            # A fraction leaves samples out on purpose: they are not new.
            return _changes(before, {s.key: s for s in now.train if s.key in before})
        return _changes(before, {s.key: s for s in now.train})

    def diff(self, first: int | str, second: int | str | None = None) -> DataChanges:
        """What version ``second`` (default: the one after ``first``) holds that ``first`` does
        not, and the reverse."""
        first_number = parse_number(first, "dataset version")
        if second is None:
            later = [v.number for v in self.list() if v.number > first_number]
            if not later:
                raise RegistryError(f"dataset version {format_number(first_number)} is the newest: name the two "
                                    "versions to compare.")
            second = later[0]
        before = {s.key: s for s in self.samples(first_number)}
        after = {s.key: s for s in self.samples(second)}
        return _changes(before, after)

    # --- cutting -----------------------------------------------------------------------

    def cut(self, fraction: float | None = None, reason: str = "", new_val: bool = False,
            progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> CutResult:
        """Cut the next version from what the data holds now (``fraction``: the first part of
        it in the fixed order). Waits for any other cut or registration to finish first."""
        if fraction is not None and not 0.0 < fraction <= 1.0:
            raise RegistryError(f"--fraction must be more than 0 and at most 1 (0.5 is half), not {fraction}.")
        now = self._current(progress, cancel)
        if not now.train:
            raise RegistryError("the data holds no training samples: add some, or check [data] in workbench.toml.")
        chosen = sorted(_first_part(now.train, fraction), key=lambda sample: sample.key)
        with self.store.locked():
            self._remove_half_made()
            try:
                version, changes, val_note = self._write_version(now, chosen, fraction, reason, new_val)
            except OSError as exc:
                raise RegistryError(f"could not cut a dataset version in {self.folder}: {exc.strerror or exc}. "
                                    "Nothing was cut; free some space (or fix its permissions) and cut "
                                    "again.") from None
        return CutResult(version, changes, val_note, now.hashed)

    # --- inside ------------------------------------------------------------------------

    def _write_version(self, now: CurrentSamples, chosen: list[Sample], fraction: float | None, reason: str,
                       new_val: bool) -> tuple[DatasetVersion, DataChanges, str]:
        """Write the next version's manifest, then its metadata (under the lock)."""
        existing = self.list()
        parent = existing[-1] if existing else None
        lines = [sample.line() for sample in chosen]
        changes = _line_changes(self._lines_of_parent(parent), lines)
        val_samples, val_sha, val_note = self._keep_val(now, new_val, reason)
        number = self.store.take_number("dataset", [v.number for v in existing])
        name = format_number(number)
        manifest = self.folder / f"{MANIFEST_PREFIX}{name}.txt"
        header = (f"# workbench dataset version {name}: {len(chosen):,} samples ({now.kind}); one a line"
                  + (": path, size, sha256" if now.kind == "files" else ": sample id") + "\n")
        text = header + "\n".join(lines) + "\n"
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(manifest, text)
        sizes = [sample.size for sample in chosen]
        version = DatasetVersion(
            number=number, manifest=manifest, samples=len(chosen),
            bytes=sum(sizes) if now.kind == "files" else None,
            manifest_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), kind=now.kind,
            created=now_iso(), created_by=os_user(), reason=reason, fraction=fraction,
            parent=parent.number if parent else None, added=len(changes.added), removed=len(changes.removed),
            changed=len(changes.changed), val_samples=val_samples, val_sha256=val_sha)
        # The metadata last: a version is visible once it is in place, never half-made.
        write_text_atomically(self._metadata_path(number), json.dumps(
            {"format": _FORMAT, **version.to_json(), "manifest": manifest.name}, indent=2) + "\n")
        return version, changes, val_note

    def _lines_of_parent(self, parent: DatasetVersion | None) -> list[str]:
        """The sample lines of the version before, to count what changed; none when its
        manifest is missing or damaged (a new cut is the way out of that, so it must not be
        refused). The hash matching what this code wrote, the lines need no checking one by
        one: a cut of 100,000 files would spend more on that than on hashing what changed."""
        if parent is None:
            return []
        try:
            data = parent.manifest.read_bytes()
        except OSError:
            return []
        if hashlib.sha256(data).hexdigest() != parent.manifest_sha256:
            return []
        return [line for line in data.decode("utf-8").split("\n")[1:] if line]

    def _current(self, progress, cancel) -> CurrentSamples:
        return current_samples(self.project_dir, self.settings.data, self.python, progress, cancel)

    def _keep_val(self, now: CurrentSamples, new_val: bool, reason: str) -> tuple[int | None, str, str]:
        """Write val.txt the first time (or when asked to), else keep it; what happened, in words."""
        if now.val is None:
            return None, "", ""
        path = self.folder / VAL_MANIFEST
        text = "# workbench validation split: the same for every dataset version unless replaced on purpose\n" + \
            "".join(sample.line() + "\n" for sample in sorted(now.val, key=lambda s: s.key))
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        kept = _sha256_of(path)
        if kept == sha:
            return len(now.val), sha, ""
        if kept is not None and not new_val:
            recorded = read_manifest(path)
            changes = _changes({s.key: s for s in recorded}, {s.key: s for s in now.val})
            note = (f"the validation data changed since val.txt was written ({len(changes.added)} added, "
                    f"{len(changes.removed)} removed, {len(changes.changed)} changed); val.txt is kept so versions "
                    "stay comparable (replace it on purpose with --new-val)")
            return len(recorded), kept, note
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, text)
        entry = {"time": now_iso(), "user": os_user(), "samples": len(now.val), "sha256": sha,
                 "reason": reason or ("first version" if kept is None else "replaced on purpose")}
        with open(self.folder / VAL_HISTORY, "a", encoding="utf-8") as history:
            history.write(json.dumps(entry) + "\n")
        return len(now.val), sha, "" if kept is None else f"val.txt replaced ({len(now.val)} samples), as asked"

    def _metadata_path(self, number: int) -> Path:
        return self.folder / f"{MANIFEST_PREFIX}{format_number(number)}.json"

    def _read_metadata(self, number: int) -> DatasetVersion:
        path = self._metadata_path(number)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = ", ".join(v.name for v in self.list()) if self.folder.is_dir() else ""
            raise RegistryError(f"there is no dataset version {format_number(number)}"
                                + (f" (there are {known})" if known else " (none cut yet)")
                                + ". Cut one with `workbench dataset version`.") from None
        except (OSError, ValueError) as exc:
            raise RegistryError(f"{path} is damaged ({exc}). Restore it (from Git or a backup), or cut a new "
                                "version.") from None
        try:
            return DatasetVersion(
                number=number, manifest=self.folder / str(data["manifest"]), samples=int(data["samples"]),
                bytes=None if data.get("bytes") is None else int(data["bytes"]),
                manifest_sha256=str(data["manifest_sha256"]), kind=str(data["kind"]), created=str(data["created"]),
                created_by=str(data.get("created_by", "")), reason=str(data.get("reason", "")),
                fraction=None if data.get("fraction") is None else float(data["fraction"]),
                parent=None if data.get("parent") is None else parse_number(data["parent"]),
                added=int(data.get("added", 0)), removed=int(data.get("removed", 0)),
                changed=int(data.get("changed", 0)),
                val_samples=None if data.get("val_samples") is None else int(data["val_samples"]),
                val_sha256=str(data.get("val_sha256", "")))
        except (KeyError, TypeError, ValueError, RegistryError) as exc:
            raise RegistryError(f"{path} is damaged (bad or missing {exc}). Restore it (from Git or a backup), "
                                "or cut a new version.") from None

    def _remove_half_made(self) -> None:
        """A manifest without its metadata was cut by a process that died before finishing."""
        if not self.folder.is_dir():
            return
        for manifest in self.folder.glob(f"{MANIFEST_PREFIX}*.txt"):
            if not manifest.with_suffix(".json").exists():
                manifest.unlink(missing_ok=True)


def read_manifest(path: Path) -> list[Sample]:
    """The samples of a manifest file; RegistryError naming the line when one is damaged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"the manifest {path} is missing. Restore it, or cut a new version.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"cannot read the manifest {path} ({exc}). Restore it, or cut a new version.") from None
    samples = []
    # Split on line feeds only (str.splitlines also splits on form feeds and other separators a
    # file name or an id may hold), and only the first line can be the header: an id may
    # start with "#".
    for number, line in enumerate(text.split("\n"), 1):
        if not line or (number == 1 and line.startswith("#")):
            continue
        fields = line.split("\t")
        try:
            if len(fields) == 1:
                samples.append(Sample(fields[0]))
            elif len(fields) == 3 and len(fields[2]) == 64:
                samples.append(Sample(fields[0], int(fields[1]), fields[2]))
            else:
                raise ValueError
        except ValueError:
            raise RegistryError(f"{path}:{number} is not a manifest line (a sample, or a path, size and sha256 "
                                "separated by tabs). Restore the file, or cut a new version.") from None
    return samples


def _first_part(samples: list[Sample], fraction: float | None) -> list[Sample]:
    if fraction is None or fraction >= 1.0:
        return list(samples)
    ordered = sorted(samples, key=lambda s: hashlib.sha256(f"{ORDER_SEED}:{s.key}".encode("utf-8")).digest())
    return ordered[:max(1, math.ceil(len(ordered) * fraction - 1e-9))]


def _line_changes(before: list[str], after: list[str]) -> DataChanges:
    """``_changes`` from two manifests' lines: only the lines not in both are split into key,
    size and hash (a cut where 1 % changed looks at 1 % of them)."""
    old_lines, new_lines = set(before), set(after)
    gone = {line.partition("\t")[0]: line for line in old_lines - new_lines}
    came = {line.partition("\t")[0]: line for line in new_lines - old_lines}
    return DataChanges(added=sorted(key for key in came if key not in gone),
                       removed=sorted(key for key in gone if key not in came),
                       changed=sorted(key for key in came if key in gone))


def _changes(before: dict[str, Sample], after: dict[str, Sample]) -> DataChanges:
    return DataChanges(
        added=sorted(key for key in after if key not in before),
        removed=sorted(key for key in before if key not in after),
        changed=sorted(key for key in after if key in before and after[key].sha256 != before[key].sha256))


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
