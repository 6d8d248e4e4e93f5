"""The model registry: every completed run that made a model becomes the next model version.

A version ``NNNN`` is ``models/bestmodel_NNNN.pt`` (the run's best weights by the project's
metric), the other files the run exported (``bestmodel_NNNN.onnx``), variants the model tools
make later (``bestmodel_NNNN.int8.onnx``), and ``neural_net_info_NNNN.yaml``: hyper-parameters,
training facts, metrics, dataset version, code commit, parent version, the run, every file's
sha256, and the device verifications as they happen. The YAML is written last: a version is
visible only once it is complete.

Files are hard-linked from the run folder (trainkit replaces its files by renaming, so the run
never writes into a registered file), reflinked or copied from anywhere else, and a file
identical to one an earlier version holds is a hard link to it under the new version's name, not
a second copy. Numbers only grow.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from workbench.platform.atomic_files import sync_folder, write_text_atomically
from workbench.platform.file_hashes import hash_file
from workbench.registry.aliases import AliasBook, AliasMove
from workbench.registry.errors import RegistryError
from workbench.registry.retention import RetentionPlan, plan_retention
from workbench.registry.settings import RegistrySettings
from workbench.registry.store import RegistryFolder, format_number, now_iso, os_user, parse_number

MODEL_PREFIX = "bestmodel_"
INFO_PREFIX = "neural_net_info_"
_INCOMING = ".incoming-"
_GITIGNORE = ("# Model files are large and live here, not in Git; the neural_net_info_*.yaml\n"
              "# records (hashes, metrics, where each came from) may be committed.\n*\n!.gitignore\n!*.yaml\n")


@dataclass
class ModelFile:
    name: str            # its name in models/
    size: int
    sha256: str
    role: str            # "best weights (val_acc)", "onnx", "int8 quantized", ...
    source: str = ""     # where it came from
    stored: str = ""     # "hardlink", "reflink", "copy", or "shared" (linked to an earlier version's same bytes)


@dataclass
class ModelVersion:
    number: int
    info: dict
    files: list[ModelFile]
    aliases: list[str] = field(default_factory=list)
    pinned: bool = False

    @property
    def name(self) -> str:
        return format_number(self.number)

    @property
    def weights(self) -> ModelFile | None:
        """The version's main weights file (the first registered)."""
        return self.files[0] if self.files else None

    @property
    def metrics(self) -> dict:
        return dict(self.info.get("metrics") or {})

    @property
    def size(self) -> int:
        """What the version's files weigh (those it shares with an earlier version too)."""
        return sum(item.size for item in self.files)

    @property
    def own_size(self) -> int:
        """What the version added to the registry: its files, not those it shares."""
        return sum(item.size for item in self.files if item.stored != "shared")

    def to_json(self) -> dict:
        return {"version": self.name, "aliases": self.aliases, "pinned": self.pinned, "size": self.size,
                "own_size": self.own_size,
                "files": [vars(item) for item in self.files], **{k: v for k, v in self.info.items()
                                                                  if k not in ("files", "version")}}


@dataclass
class RegisterResult:
    version: ModelVersion
    retention: RetentionReport | None = None


@dataclass
class RetentionReport:
    plan: RetentionPlan
    freed_bytes: int = 0        # space the disk got back (files with no other link left)
    removed_bytes: int = 0      # size of every file removed from the registry
    dry_run: bool = False


class ModelRegistry:
    """The model versions of one project."""

    def __init__(self, settings: RegistrySettings):
        self.settings = settings
        self.store = RegistryFolder(settings.folder)
        self.folder = self.store.models
        self.aliases = AliasBook(self.store.folder)

    # --- reading -----------------------------------------------------------------------

    def list(self) -> list[ModelVersion]:
        """Every version, oldest first, with its aliases and pin."""
        if not self.folder.is_dir():
            return []
        aliases, pinned = self.aliases.all(), self.store.pinned()
        versions = []
        for number in self._numbers():
            version = self._read(number)
            version.aliases = sorted(name for name, target in aliases.items() if target == number)
            version.pinned = number in pinned
            versions.append(version)
        return versions

    def get(self, number: int | str) -> ModelVersion:
        number = parse_number(number, "model version")
        numbers = self._numbers() if self.folder.is_dir() else []
        if number not in numbers:
            known = ", ".join(format_number(n) for n in numbers)
            raise RegistryError(f"there is no model version {format_number(number)}"
                                + (f" (there are {known})" if known else " (none registered yet)") + ".")
        # Only this version's record is read: another's damaged YAML does not stop this one.
        version = self._read(number)
        version.aliases = self.aliases.of_version(number)
        version.pinned = number in self.store.pinned()
        return version

    def resolve(self, name: str) -> ModelVersion:
        """A version by number or by alias (``production``)."""
        if str(name).strip().isdigit():
            return self.get(name)
        target = self.aliases.all().get(str(name))
        if target is None:
            raise RegistryError(f"{name!r} is neither a model version number nor an alias "
                                f"(aliases: {', '.join(sorted(self.aliases.all())) or 'none'}).")
        return self.get(target)

    def weights_path(self, number: int | str) -> Path:
        """The main weights file of a version, checked to be there and whole."""
        version = self.resolve(str(number))
        problems = self.problems(version)
        if version.weights is None:
            problems = [f"its record {self._info_path(version.number).name} names no files; remove the version"]
        if problems:
            raise RegistryError(f"model version {version.name} cannot be used: {problems[0]}")
        return self.folder / version.weights.name

    def problems(self, version: ModelVersion) -> list[str]:
        """What is wrong with a version's files on disk (missing, or not the recorded size)."""
        found = []
        for item in version.files:
            path = self.folder / item.name
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                found.append(f"its file {item.name} is missing from {self.folder}; restore it from the run "
                             f"folder ({item.source or 'unknown'}) or remove the version")
                continue
            if size != item.size:
                found.append(f"its file {item.name} is {size:,} bytes, not the {item.size:,} recorded: it was "
                             "changed after registration; restore it or remove the version")
        return found

    def version_of_file(self, path: Path | str) -> int | None:
        """The version a file in this registry's models folder belongs to, by its name."""
        path = Path(path)
        try:
            if path.resolve().parent != self.folder.resolve():
                return None
        except OSError:
            return None
        stem = path.name[len(MODEL_PREFIX):] if path.name.startswith(MODEL_PREFIX) else ""
        digits = stem.split(".", 1)[0]
        return int(digits) if digits.isdigit() else None

    # --- registering -------------------------------------------------------------------

    def register(self, files: list[tuple[Path, str]], info: dict, run_folder: Path | None = None) -> RegisterResult:
        """Register the next version from ``files`` (path and role; the first is the main
        weights) and ``info`` (the record's fields), then apply retention."""
        if not files:
            raise RegistryError("there is no model file to register.")
        for path, _role in files:
            if not Path(path).is_file():
                raise RegistryError(f"cannot register {path}: it does not exist (was the run's output moved?).")
        with self.store.locked():
            self._remove_half_made()
            try:
                self._prepare_folder()
                number = self.store.take_number("model", self._numbers())
            except OSError as exc:
                raise RegistryError(f"could not register a model version in {self.folder}: "
                                    f"{exc.strerror or exc}. Nothing was registered; free some space (or fix "
                                    "its permissions) and register again.") from None
            version = self._write_version(number, files, info, run_folder)
            report = self._apply_retention(self.settings.version_max, dry_run=False)
        version.aliases, version.pinned = self.aliases.of_version(number), False
        return RegisterResult(version, report)

    def add_variant(self, number: int | str, path: Path, role: str) -> ModelFile:
        """File a model derived from version ``number`` (a quantized or converted one) under the
        version: ``bestmodel_NNNN<suffixes>`` beside the others, recorded in its YAML."""
        with self.store.locked():
            version = self.get(number)
            if self.version_of_file(path) == version.number:
                # Already the version's file, beside the others (a model tool wrote it there):
                # recorded under its own name, again if it was before (its hash is new).
                name = Path(path).name
            else:
                name = _file_name(version.number, Path(path), {item.name for item in version.files})
            target = self.folder / name
            if Path(path).resolve() == target.resolve():
                stored = "in place"
            else:
                # Stored under a temporary name, then renamed: a file already there (perhaps a
                # hard link to a run's file) is replaced, never written through.
                incoming = self.folder / f"{_INCOMING}{name}-{os.getpid()}"
                try:
                    stored = _store(Path(path), incoming, inside_run=False)
                    os.replace(incoming, target)
                except OSError as exc:
                    incoming.unlink(missing_ok=True)
                    raise RegistryError(f"could not file {path} under model version {version.name}: "
                                        f"{exc.strerror or exc}. Free some space (or fix the permissions of "
                                        f"{self.folder}) and try again.") from None
            item = ModelFile(name=name, size=target.stat().st_size, sha256=hash_file(target), role=role,
                             source=str(path), stored=stored)
            files = [existing for existing in version.files if existing.name != name] + [item]
            self._write_info(version.number, {**version.info, "files": [vars(f) for f in files]})
            return item

    def record_verification(self, number: int | str, record: dict) -> None:
        """Add a device verification (device, time, passed, figures) to a version's record."""
        with self.store.locked():
            version = self.get(number)
            verifications = list(version.info.get("verifications") or []) + [{"time": now_iso(), **record}]
            self._write_info(version.number, {**version.info, "verifications": verifications,
                                              "files": [vars(f) for f in version.files]})

    # --- pins, aliases, removal, retention ---------------------------------------------

    def pin(self, number: int | str, pinned: bool = True) -> ModelVersion:
        with self.store.locked():
            version = self.get(number)
            self.store.set_pinned(version.number, pinned)
        return self.get(version.number)

    def set_alias(self, alias: str, number: int | str, reason: str = "") -> AliasMove:
        with self.store.locked():
            version = self.get(number)
            return self.aliases.move(alias, version.number, reason)

    def rollback(self, alias: str, reason: str = "") -> AliasMove:
        """Move ``alias`` back one move (an undo); an alias that was never anywhere else goes to
        the version before the one it points to, the newest still registered."""
        with self.store.locked():
            target = self.aliases.rollback_target(alias)
            if target is None:
                current = self.aliases.all()[alias]
                earlier = [number for number in self._numbers() if number < current]
                if not earlier:
                    raise RegistryError(f"{alias} has no earlier version to go back to: it points to "
                                        f"{format_number(current)}, and no older version is registered.")
                target = earlier[-1]
                reason = reason or f"rollback to the version before {format_number(current)}"
            if target not in self._numbers():
                raise RegistryError(f"{alias} was on version {format_number(target)} before, but that version was "
                                    f"removed; point it at another with `workbench registry alias {alias} NNNN`.")
            return self.aliases.move(alias, target, reason or "rollback", action="rollback")

    def remove(self, number: int | str) -> RetentionReport:
        """Remove one version (not a pinned or aliased one: unpin it or move the alias first)."""
        with self.store.locked():
            version = self.get(number)
            if version.pinned:
                raise RegistryError(f"model version {version.name} is pinned; unpin it first "
                                    f"(`workbench registry unpin {version.name}`).")
            if version.aliases:
                raise RegistryError(f"model version {version.name} is what {', '.join(version.aliases)} points to; "
                                    "move the alias to another version first.")
            versions = self._file_sets()
            referred = set().union(*(names for n, names in versions.items() if n != version.number))
            plan = RetentionPlan(keep=[n for n in versions if n != version.number], remove=[version.number])
            for name in sorted(versions[version.number]):
                (plan.files_kept_shared if name in referred else plan.files_removed).append(name)
            return self._carry_out(plan)

    def gc(self, keep: int | None = None, dry_run: bool = False) -> RetentionReport:
        """Retention on demand: keep the newest ``keep`` (default ``version_max``) versions."""
        if keep is not None and keep < 0:
            raise RegistryError(f"--keep must be 0 or more, not {keep}.")
        with self.store.locked():
            return self._apply_retention(self.settings.version_max if keep is None else keep, dry_run)

    # --- inside ------------------------------------------------------------------------

    def _numbers(self) -> list[int]:
        numbers = []
        for path in self.folder.glob(f"{INFO_PREFIX}*.yaml"):
            digits = path.stem[len(INFO_PREFIX):]
            if digits.isdigit():
                numbers.append(int(digits))
        return sorted(numbers)

    def _info_path(self, number: int) -> Path:
        return self.folder / f"{INFO_PREFIX}{format_number(number)}.yaml"

    def _read(self, number: int) -> ModelVersion:
        import yaml

        path = self._info_path(number)
        try:
            info = yaml.safe_load(path.read_text(encoding="utf-8"))
            files = [ModelFile(**{key: item[key] for key in ModelFile.__dataclass_fields__ if key in item})
                     for item in info["files"]]
        except FileNotFoundError:
            raise RegistryError(f"there is no model version {format_number(number)}.") from None
        except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
            raise RegistryError(f"{path} is damaged ({str(exc).splitlines()[0]}). Restore it (from Git or a "
                                f"backup), or remove version {format_number(number)}.") from None
        return ModelVersion(number=number, info=info, files=files)

    def _file_sets(self) -> dict[int, set[str]]:
        return {version.number: {item.name for item in version.files} for version in
                (self._read(number) for number in self._numbers())}

    def _write_version(self, number: int, files: list[tuple[Path, str]], info: dict,
                       run_folder: Path | None) -> ModelVersion:
        self._prepare_folder()
        known = self._known_hashes()
        staging = self.folder / f"{_INCOMING}{format_number(number)}-{os.getpid()}"
        placed: list[Path] = []
        current = ""
        try:
            staging.mkdir()
            entries: list[ModelFile] = []
            for path, role in files:
                path = Path(path)
                current = f" ({path.name})"
                sha = hash_file(path)
                size = path.stat().st_size
                name = _file_name(number, path, {entry.name for entry in entries})
                if sha in known:
                    # The same bytes as an earlier version's file: a link to it under this
                    # version's own name, so the version's files all carry its number (the model
                    # tools file a conversion under the version its input's name says).
                    stored = _store(self.folder / known[sha], staging / name, inside_run=True)
                    stored = "shared" if stored == "hardlink" else stored
                    entries.append(ModelFile(name=name, size=size, sha256=sha, role=role, source=str(path),
                                             stored=stored))
                    continue
                inside_run = run_folder is not None and path.resolve().is_relative_to(Path(run_folder).resolve())
                stored = _store(path, staging / name, inside_run)
                entries.append(ModelFile(name=name, size=size, sha256=sha, role=role, source=str(path),
                                         stored=stored))
                known[sha] = name
            for entry in entries:
                os.replace(staging / entry.name, self.folder / entry.name)
                placed.append(self.folder / entry.name)
            current = f" ({self._info_path(number).name})"
            record = {"version": format_number(number), "created": now_iso(), "created_by": os_user(),
                      **info, "files": [vars(entry) for entry in entries], "verifications": []}
            self._write_info(number, record)
        except BaseException as exc:
            for path in placed:
                path.unlink(missing_ok=True)
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise RegistryError(f"could not register model version {format_number(number)}{current}: "
                                    f"{exc.strerror or exc}. Nothing was registered; free some space (or fix "
                                    f"the permissions of {self.folder}) and register again.") from None
            raise
        shutil.rmtree(staging, ignore_errors=True)
        sync_folder(self.folder)
        return self._read(number)

    def _write_info(self, number: int, record: dict) -> None:
        import yaml

        text = f"# Model version {format_number(number)}: what it is and where it came from.\n" + \
            yaml.safe_dump(_plain(record), sort_keys=False, allow_unicode=True, width=100)
        write_text_atomically(self._info_path(number), text)

    def _known_hashes(self) -> dict[str, str]:
        known: dict[str, str] = {}
        for number in self._numbers():
            for item in self._read(number).files:
                if (self.folder / item.name).is_file():
                    known.setdefault(item.sha256, item.name)
        return known

    def _prepare_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            write_text_atomically(ignore, _GITIGNORE)

    def _remove_half_made(self) -> None:
        """What a registration that died midway left: its staging folder, and model files no
        version's YAML names (the YAML comes last, so those were never visible)."""
        if not self.folder.is_dir():
            return
        for staging in self.folder.glob(f"{_INCOMING}*"):
            if staging.is_dir():
                shutil.rmtree(staging, ignore_errors=True)
            else:
                staging.unlink(missing_ok=True)
        named = set().union(*self._file_sets().values()) if self._numbers() else set()
        for path in self.folder.glob(f"{MODEL_PREFIX}*"):
            if path.name not in named:
                path.unlink(missing_ok=True)

    def _apply_retention(self, keep: int, dry_run: bool) -> RetentionReport:
        aliased: dict[int, list[str]] = {}
        for name, target in self.aliases.all().items():
            aliased.setdefault(target, []).append(name)
        plan = plan_retention(self._file_sets(), keep, self.store.pinned(), aliased)
        if dry_run:
            report = RetentionReport(plan, dry_run=True)
            for name in plan.files_removed:
                try:
                    stat = (self.folder / name).stat()
                except FileNotFoundError:
                    continue
                report.removed_bytes += stat.st_size
                report.freed_bytes += stat.st_size if stat.st_nlink == 1 else 0
            return report
        return self._carry_out(plan)

    def _carry_out(self, plan: RetentionPlan) -> RetentionReport:
        report = RetentionReport(plan)
        # The YAMLs first: once a version's record is gone it is not visible, so a crash
        # in the middle leaves unnamed files the next change cleans, never a version with holes.
        if plan.remove:
            # Recorded first: what went, and the numbers that must not come back even if
            # registry.json is lost.
            self.store.record_removal({"versions": [format_number(n) for n in plan.remove],
                                      "files": plan.files_removed})
        for number in plan.remove:
            self._info_path(number).unlink(missing_ok=True)
        for name in plan.files_removed:
            path = self.folder / name
            try:
                stat = path.stat()
                path.unlink()
            except FileNotFoundError:
                continue
            report.removed_bytes += stat.st_size
            report.freed_bytes += stat.st_size if stat.st_nlink == 1 else 0
        if plan.remove:
            sync_folder(self.folder)
        return report


def _file_name(number: int, source: Path, taken: set[str]) -> str:
    """``bestmodel_NNNN`` with the source's suffixes: best.pt -> .pt, model.int8.onnx -> .int8.onnx."""
    stem, dot, suffixes = source.name.partition(".")
    name = f"{MODEL_PREFIX}{format_number(number)}{dot}{suffixes}"
    if name in taken:
        name = f"{MODEL_PREFIX}{format_number(number)}.{stem}{dot}{suffixes}"
    count = 2
    while name in taken:
        name = f"{MODEL_PREFIX}{format_number(number)}.{stem}-{count}{dot}{suffixes}"
        count += 1
    return name


def _store(source: Path, target: Path, inside_run: bool) -> str:
    """Put ``source`` at ``target`` without a second copy on disk when the filesystem allows.

    A hard link only for a run folder's files: the training helpers replace those by renaming,
    while a file elsewhere (a script's own model.pt at the project root) may be rewritten in
    place by the next run, which would change the registered version through the link."""
    if inside_run:
        try:
            os.link(source, target)
            return "hardlink"
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES):
                raise
    if _reflink(source, target):
        return "reflink"
    shutil.copy2(source, target)
    return "copy"


def _reflink(source: Path, target: Path) -> bool:
    """A copy-on-write clone (Btrfs, XFS): no data copied until one side changes."""
    try:
        import fcntl
    except ImportError:
        return False
    ficlone = 0x40049409
    try:
        with open(source, "rb") as src, open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), ficlone, src.fileno())
        shutil.copystat(source, target)
        return True
    except OSError:
        target.unlink(missing_ok=True)
        return False


def _plain(value):
    """``value`` with paths and tuples made YAML-safe."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and value != value:
        return None
    return value
