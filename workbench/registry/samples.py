"""The samples a project's data holds now: what a dataset version is cut from.

- Files (``[data] train = "data/train"``): every regular file under the folder is one sample,
  keyed by its path from the project folder, with its size and sha256. Hashes come from the
  project's hash cache (shared with the cluster's data sync), so only files whose size or
  modification time changed are read again.
- A dataset the project's code builds (``[data] samples = "data:sample_ids"``): the function is
  called in the project's own Python by the training helpers (``python -m
  workbench_trainkit.sample_ids``) and names each sample by a stable id.
"""

from __future__ import annotations

import json
import os
import stat as stat_module
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from workbench.platform.file_hashes import hash_file
from workbench.registry.errors import RegistryError
from workbench.registry.settings import DataSource
from workbench.tasks import CancelToken, Progress, ProgressCallback

SAMPLE_IDS_TIMEOUT_S = 600.0


class Sample(NamedTuple):
    """One sample: its key (a project-relative path, or an id) and, for files, size and hash.
    A named tuple: a cut makes one per sample, and a frozen dataclass costs three times more."""

    key: str
    size: int | None = None
    sha256: str = ""

    def line(self) -> str:
        """Its manifest line: the key, then for a file its size and sha256, tab-separated."""
        if self.size is None:
            return self.key
        return f"{self.key}\t{self.size}\t{self.sha256}"


@dataclass(frozen=True)
class CurrentSamples:
    """What the data holds now: the training samples, and the validation ones (None when the
    project declares no validation split)."""

    kind: str                       # "files" or "ids"
    train: list[Sample]
    val: list[Sample] | None
    hashed: int = 0                 # files read to hash them (the rest came from the cache)


def current_samples(project_dir: Path, source: DataSource, python: str = sys.executable,
                    progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> CurrentSamples:
    """The samples ``source`` names now; RegistryError when the project declares no data."""
    if source.train_folder:
        return _file_samples(Path(project_dir), source, progress, cancel)
    if source.samples_function:
        return _code_samples(Path(project_dir), source.samples_function, python)
    raise RegistryError(
        f"{Path(project_dir) / 'workbench.toml'} does not say where the data is. Add a [data] table with "
        "train = \"data/train\" (a folder of sample files) or samples = \"module:function\" (a function of your "
        "code that returns {\"train\": [ids], \"val\": [ids]}).")


def _file_samples(project_dir: Path, source: DataSource, progress, cancel) -> CurrentSamples:
    from workbench.project.project_file import data_hash_cache

    folders = [("train", source.train_folder)] + ([("val", source.val_folder)] if source.val_folder else [])
    listed: dict[str, list[tuple[str, str, os.stat_result]]] = {}
    for split, name in folders:
        folder = (project_dir / name).resolve()
        if not folder.is_dir():
            raise RegistryError(f"[data] {split} names {name!r}, which is not a folder in {project_dir}. Create "
                                "it, or fix the path in workbench.toml.")
        listed[split] = _walk(project_dir, folder)
    cache = data_hash_cache(project_dir)
    known = cache.entries
    # The cache's dict read in one pass, not through lookup(): a call per file cost more than
    # hashing the few files that changed.
    stale = [(key, path, stat) for items in listed.values() for key, path, stat in items
             if (entry := known.get(key)) is None or entry[0] != stat.st_size or entry[1] != stat.st_mtime_ns]
    for done, (key, path, stat) in enumerate(stale):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if progress is not None and done % 200 == 0:
            progress(Progress(f"Hashing {len(stale):,} new or changed files", done / len(stale)))
        try:
            sha = hash_file(path, cancel)
        except OSError as exc:
            raise RegistryError(f"cannot read the sample {key}: {exc.strerror or exc}. Fix its "
                                "permissions or move it out of the data folder.") from None
        cache.record(key, stat.st_size, stat.st_mtime_ns, sha)
    samples = {split: [Sample(key, stat.st_size, known[key][2]) for key, _path, stat in items]
               for split, items in listed.items()}
    hashed = len(stale)
    cache.save()
    return CurrentSamples("files", samples["train"], samples.get("val"), hashed)


def _walk(project_dir: Path, folder: Path) -> list[tuple[str, str, os.stat_result]]:
    """Every regular file under ``folder`` (hidden ones and symbolic links left out), sorted by
    key. ``os.scandir`` and string keys, not Path objects: a cut walks every sample file, and
    with 100,000 of them pathlib's resolve and relative_to cost more than hashing the changed
    ones does."""
    root = str(project_dir.resolve())
    prefix = root.rstrip(os.sep) + os.sep
    cut = len(prefix)
    found = []
    pending = [str(folder)]
    is_regular = stat_module.S_ISREG
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name[0] == ".":
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if is_regular(stat.st_mode):
                path = entry.path
                found.append((path[cut:] if path.startswith(prefix) else path, path, stat))
    if os.sep != "/":
        found = [(key.replace(os.sep, "/"), path, stat) for key, path, stat in found]
    found.sort(key=lambda item: item[0])
    for key, _path, _stat in found:
        if "\t" in key or "\n" in key or "\r" in key:
            raise RegistryError(f"the sample file {key!r} has a tab or line break in its name, which a "
                                "manifest cannot hold: rename it.")
    return found


def _code_samples(project_dir: Path, function: str, python: str) -> CurrentSamples:
    command = [python, "-m", "workbench_trainkit.sample_ids", function, "--project", str(project_dir)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_trainkit_root()),
                                                                      os.environ.get("PYTHONPATH", "")]))}
    try:
        done = subprocess.run(command, cwd=project_dir, env=env, capture_output=True, text=True,
                              timeout=SAMPLE_IDS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RegistryError(f"{function} took more than {SAMPLE_IDS_TIMEOUT_S:.0f} s to name the samples; make it "
                            "return the ids without loading the data.") from None
    except OSError as exc:
        raise RegistryError(f"cannot run the project's Python {python}: {exc.strerror or exc}.") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = next((line[len("error: "):] for line in reversed(lines) if line.startswith("error: ")),
                      lines[-1] if lines else f"exit status {done.returncode}")
        raise RegistryError(f"the samples of [data] samples = {function!r} could not be listed: {reason}")
    try:
        answer = json.loads(done.stdout)
        train = [Sample(str(key)) for key in answer["train"]]
        # No validation ids (left out, or an empty list) is no validation split, not an empty one.
        val = [Sample(str(key)) for key in answer["val"]] if answer.get("val") else None
    except (ValueError, KeyError, TypeError) as exc:
        raise RegistryError(f"{function} gave no list of sample ids ({exc}); it must return "
                            "{\"train\": [ids], \"val\": [ids]}.") from None
    return CurrentSamples("ids", train, val)


def _trainkit_root() -> Path:
    """The folder holding ``workbench_trainkit``, for a project interpreter without Workbench."""
    import importlib.util

    found = importlib.util.find_spec("workbench_trainkit")
    if found is not None and found.submodule_search_locations:
        return Path(list(found.submodule_search_locations)[0]).resolve().parent
    return Path(__file__).resolve().parents[2]
