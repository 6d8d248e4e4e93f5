"""What a run writes in its working folder (the project folder): TensorBoard event files and
model files, found by a bounded, pruned walk, and the run's products in ``products.json``.

A script adopted as it is writes where it likes: ``runs/<date>_<host>/events.out.tfevents.*``
(SummaryWriter's default), ``checkpoints/best.pth``, ``model.safetensors``. The walk skips what
never holds them (version control, virtual environments, caches, hidden folders) and every
Workbench run folder (a ``runs/<id>/`` with a ``run.json``): their outputs are listed by the
Models panel already, and another run's files are not this run's.

``products.json`` in the run folder::

    {"products": [{"path": "checkpoints/best.pth", "size": 1234, "modified": 1764490000.5}]}

``path`` is relative to the project folder. The Models panel (workbench.modeltools.model_index)
reads the same file to list those models under their run.

Only the standard library is imported here: the supervisor of every run imports this module.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

PRODUCTS_FILE = "products.json"
# The model files a run's products are made of (what the model tools open).
PRODUCT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".onnx", ".pt2")
EVENT_FILE_MARK = "tfevents"
_PRODUCT_SUFFIX_SET = frozenset(PRODUCT_SUFFIXES)
# Folders never walked, wherever they are: tools, caches and state, not a run's files.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})
RUN_RECORD = "run.json"
# A walk stops after this many entries, so a project with a huge data folder stays cheap.
MAX_ENTRIES = 200_000
# A file whose modification time is this close before the run's start counts as the run's:
# the file system's clock is coarser than time.time() (a jiffy behind on Linux).
CLOCK_SLACK_S = 0.05


def is_event_file(name: str) -> bool:
    """Whether ``name`` is a TensorBoard event file (``events.out.tfevents.<time>.<host>...``)."""
    return EVENT_FILE_MARK in name and not name.startswith(".")


def is_product_file(name: str) -> bool:
    """Whether ``name`` is a model file a run may produce (not hidden, not a temporary file)."""
    return not name.startswith(".") and name.lower().endswith(PRODUCT_SUFFIXES)


@dataclass
class ScanResult:
    """What one walk found written since the run started (and not seen by an earlier walk)."""

    event_files: list[Path] = field(default_factory=list)   # new event files
    products: list[Path] = field(default_factory=list)      # model files new or changed
    entries: int = 0                                        # directory entries looked at
    truncated: bool = False                                 # the walk hit MAX_ENTRIES


class WorkingFolderScan:
    """Walks ``root`` for event and model files the run wrote since ``started_at``.

    The first walk counts a file as the run's when it was modified at or after the start; later
    walks count a file that is new to them or whose size or time changed, so no clock is
    compared after the first walk. ``skip`` are more folders (absolute) not to walk.
    """

    def __init__(self, root: Path | str, started_at: float, skip=(), max_entries: int = MAX_ENTRIES):
        self.root = Path(root)
        self.started_at = started_at
        self.skip = {os.path.normpath(str(path)) for path in skip}
        self.max_entries = max_entries
        self._seen: dict[str, tuple[int, int]] = {}   # path -> (size, mtime_ns) at the last walk
        self._walked = False

    def scan(self) -> ScanResult:
        """One walk; what it found that the run wrote since the last walk (or its start)."""
        result = ScanResult()
        found: dict[str, tuple[int, int]] = {}
        self._walk(str(self.root), found, result)
        threshold_ns = int((self.started_at - CLOCK_SLACK_S) * 1e9)
        for path, signature in found.items():
            before = self._seen.get(path)
            if before == signature:
                continue
            if not self._walked and signature[1] < threshold_ns:
                continue  # there before the run started
            if is_event_file(os.path.basename(path)):
                if before is None:
                    result.event_files.append(Path(path))
            else:
                result.products.append(Path(path))
        # A walk cut short keeps what it did not reach as it was, so nothing is found twice.
        self._seen = {**self._seen, **found} if result.truncated else found
        self._walked = True
        return result

    def _walk(self, folder: str, found: dict, result: ScanResult) -> None:
        try:
            entries = os.scandir(folder)
        except OSError:
            return
        subfolders = []
        # The loop runs for every file of the project, so it does the least it can: a name
        # check, and a stat only for a candidate (the walk's time is most of the supervisor's).
        with entries:
            for entry in entries:
                result.entries += 1
                if result.entries > self.max_entries:
                    result.truncated = True
                    return
                name = entry.name
                if name[0] == ".":
                    continue  # hidden: tools' state, temporary files
                dot = name.rfind(".")
                try:
                    if (dot > 0 and name[dot:].lower() in _PRODUCT_SUFFIX_SET) or EVENT_FILE_MARK in name:
                        status = entry.stat(follow_symlinks=False)
                        if stat.S_ISREG(status.st_mode):
                            found[entry.path] = (status.st_size, status.st_mtime_ns)
                            continue
                    if name not in SKIPPED_FOLDERS and entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.path)
                except OSError:
                    continue  # removed while walked
        for path in subfolders:
            if os.path.normpath(path) in self.skip or os.path.isfile(os.path.join(path, RUN_RECORD)):
                continue  # a Workbench run folder: its own outputs, or another run's
            self._walk(path, found, result)
            if result.truncated:
                return


def next_scan_delay(elapsed: float) -> float:
    """Seconds to the next walk ``elapsed`` seconds into a run: often while a script sets up
    (a SummaryWriter is made in its first seconds), then less and less often."""
    if elapsed < 5:
        return 0.1
    if elapsed < 30:
        return 0.5
    if elapsed < 300:
        return 2.0
    return 10.0


def read_products(run_dir: Path | str) -> list[dict]:
    """The products recorded in ``run_dir/products.json`` ([] when there are none or the file
    cannot be read)."""
    try:
        data = json.loads((Path(run_dir) / PRODUCTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    products = data.get("products") if isinstance(data, dict) else None
    if not isinstance(products, list):
        return []
    return [p for p in products if isinstance(p, dict) and isinstance(p.get("path"), str)]


def record_products(run_dir: Path | str, project_dir: Path | str, paths) -> list[dict]:
    """Add (or update) the model files ``paths`` in ``run_dir/products.json`` with their size
    and time now; returns every product. A file gone by now is left out."""
    from workbench.platform.atomic_files import write_text_atomically

    products = {p["path"]: p for p in read_products(run_dir)}
    changed = False
    for path in paths:
        try:
            status = os.stat(path)
            name = Path(path).resolve().relative_to(Path(project_dir).resolve()).as_posix()
        except (OSError, ValueError):
            continue
        entry = {"path": name, "size": status.st_size, "modified": round(status.st_mtime, 3)}
        if products.get(name) != entry:
            products[name] = entry
            changed = True
    listed = sorted(products.values(), key=lambda p: p["path"])
    if changed:
        write_text_atomically(Path(run_dir) / PRODUCTS_FILE, json.dumps({"products": listed}, indent=1) + "\n")
    return listed
