"""The kept list of a project's files, for Quick Open.

The folder is walked once, off the GUI thread, with ``.gitignore`` files respected (each one
for its own folder and below, as git reads them) and ``.git`` left out; every key typed in
Quick Open ranks this kept list and never walks the folder again. ``refresh`` walks again on
demand (Quick Open asks each time it opens, and keeps showing the old list until the new one is
there); ``add`` and ``remove`` keep it current between walks.

``RecentFiles`` is the project's files in the order they were last opened, kept in
``.workbench/recent_files.json`` so the order survives a restart.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.platform.fuzzy import word_starts
from workbench.tasks import CancelToken

ALWAYS_LEFT_OUT = {".git", ".hg", ".svn"}
RECENT_FILES = "recent_files.json"
MAX_RECENT_FILES = 50


@dataclass(frozen=True)
class FileList:
    """One walk's result: project-relative paths with ``/`` separators, sorted, each also
    lower-cased, with the index where its file name starts and where the name's words start;
    and, for the first keys typed (which match most files), the files by what starts their
    names' words: ``word_heads[h]`` holds the files with a word that starts with ``h`` (one or
    two letters), ``name_heads[h]`` those whose name starts with it, both shortest path first."""

    paths: tuple[str, ...]
    lowered: tuple[str, ...]
    name_starts: tuple[int, ...]
    name_word_starts: tuple[tuple[int, ...], ...] = ()
    word_heads: dict[str, list[int]] = field(default_factory=dict)
    name_heads: dict[str, list[int]] = field(default_factory=dict)
    _head_sets: dict[str, frozenset[int]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, paths) -> "FileList":
        ordered = tuple(sorted(set(paths)))
        lowered = tuple(p.lower() for p in ordered)
        name_starts = tuple(p.rfind("/") + 1 for p in ordered)
        name_word_starts = tuple(tuple(word_starts(p[start:])) for p, start in zip(ordered, name_starts))
        word_heads: dict[str, list[int]] = {}
        name_heads: dict[str, list[int]] = {}
        for index in sorted(range(len(ordered)), key=lambda i: len(ordered[i])):
            name = lowered[index][name_starts[index]:]
            heads = set()
            for start in name_word_starts[index]:
                heads.add(name[start])
                heads.add(name[start:start + 2])
            for head in heads:
                word_heads.setdefault(head, []).append(index)
            for head in {name[:1], name[:2]} - {""}:
                name_heads.setdefault(head, []).append(index)
        return cls(ordered, lowered, name_starts, name_word_starts, word_heads, name_heads)

    def __len__(self) -> int:
        return len(self.paths)

    def with_word_head(self, head: str) -> frozenset[int]:
        """The files in ``word_heads[head]``, as a set (made once per head)."""
        found = self._head_sets.get(head)
        if found is None:
            found = self._head_sets[head] = frozenset(self.word_heads.get(head, ()))
        return found


class FileIndex:
    """The files of the project at ``root``, walked once and then kept."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._files = FileList.of(())
        self._lock = threading.Lock()
        self.walked = False
        """Whether a walk has finished (before it, ``files`` is empty)."""

    @property
    def files(self) -> FileList:
        return self._files

    def refresh(self, cancel: CancelToken | None = None) -> FileList:
        """Walk the folder again (in a worker thread: this reads the disk) and keep the result."""
        files = FileList.of(walk_project(self.root, cancel))
        with self._lock:
            self._files = files
            self.walked = True
        return files

    def add(self, path: Path | str) -> None:
        """Count a file made since the last walk (by the window, say, or Save As)."""
        relative = self.relative(path)
        if relative is not None and relative not in self._files.paths:
            with self._lock:
                self._files = FileList.of(self._files.paths + (relative,))

    def remove(self, path: Path | str) -> None:
        """Forget a file (or every file under a folder) deleted since the last walk."""
        relative = self.relative(path)
        if relative is None:
            return
        with self._lock:
            kept = [p for p in self._files.paths if p != relative and not p.startswith(relative + "/")]
            self._files = FileList.of(kept)

    def relative(self, path: Path | str) -> str | None:
        """``path`` relative to the project with ``/`` separators; None when it lies outside."""
        path = Path(path)
        if not path.is_absolute():
            return path.as_posix()
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None  # outside the project: not one of its files


def walk_project(root: Path, cancel: CancelToken | None = None) -> list[str]:
    """Every file under ``root`` that its ``.gitignore`` files do not leave out, as
    ``/``-separated paths relative to ``root``."""
    import pathspec  # only the walk needs it

    found: list[str] = []
    # Each entry: (folder prefix the rules are relative to, the rules).
    folders: list[tuple[str, list[tuple[str, object]]]] = [("", [])]
    while folders:
        if cancel is not None:
            cancel.raise_if_cancelled()
        prefix, rules = folders.pop()
        folder = root / prefix if prefix else root
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable or gone since its parent was read: nothing to list
        names = {entry.name for entry in entries}
        if ".gitignore" in names:
            try:
                lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
                rules = rules + [(prefix, pathspec.GitIgnoreSpec.from_lines(lines))]
            except OSError:
                pass
        for entry in entries:
            relative = prefix + entry.name
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_folder and entry.name in ALWAYS_LEFT_OUT:
                continue
            if _ignored(relative + "/" if is_folder else relative, rules):
                continue
            if is_folder:
                folders.append((relative + "/", rules))
            else:
                found.append(relative)
    return found


def _ignored(relative: str, rules: list[tuple[str, object]]) -> bool:
    """Whether the last rule file with an opinion on ``relative`` leaves it out (a deeper
    ``.gitignore`` can bring back what a shallower one left out)."""
    verdict = False
    for prefix, spec in rules:
        result = spec.check_file(relative[len(prefix):])
        if result.include is not None:
            verdict = result.include
    return verdict


class RecentFiles:
    """The project files last opened, most recent first, kept in the project's state folder."""

    def __init__(self, state_dir: Path | None):
        self.file = state_dir / RECENT_FILES if state_dir is not None else None
        self._paths: list[str] = self._read()

    def paths(self) -> list[str]:
        return list(self._paths)

    def note(self, relative: str) -> None:
        """Put ``relative`` at the top of the list and write the list down."""
        self._paths = [relative] + [p for p in self._paths if p != relative][:MAX_RECENT_FILES - 1]
        if self.file is None:
            return
        try:
            write_text_atomically(self.file, json.dumps(self._paths, indent=1))
        except OSError:
            pass  # a read-only project still ranks recent files for this session

    def _read(self) -> list[str]:
        if self.file is None:
            return []
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [p for p in data if isinstance(p, str)] if isinstance(data, list) else []
