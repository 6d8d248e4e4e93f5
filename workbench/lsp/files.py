"""Files the server's answers lead to: which belong to installed packages (they open read-only),
and edits to files no editor has open (written to disk, each file kept so the change can be
undone). Qt-free.
"""

from __future__ import annotations

import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from workbench.editor.errors import EditorError
from workbench.editor.textfile import read_text_file, write_text_file
from workbench.lsp.errors import LanguageServerError
from workbench.lsp.results import FileEdit
from workbench.lsp.text_sync import apply_edits

INSTALLED_FOLDERS = ("site-packages", "dist-packages", "typeshed")


def is_installed_file(path: Path | str, project_root: Path | str) -> bool:
    """Whether ``path`` is an installed package's or the standard library's, not the
    project's: code to read, not to change."""
    path = Path(path).resolve()
    root = Path(project_root).resolve()
    if path == root or root in path.parents:
        # Unless the project keeps its environment inside (.venv/lib/.../site-packages).
        return any(part in INSTALLED_FOLDERS for part in path.relative_to(root).parts)
    if any(part in INSTALLED_FOLDERS for part in path.parts):
        return True
    prefixes = {Path(sysconfig.get_paths()["stdlib"]).resolve(), Path(sys.base_prefix).resolve() / "lib"}
    return any(prefix == path or prefix in path.parents for prefix in prefixes)


@dataclass
class DiskChange:
    """Files changed on disk by one edit, with their text before, so it can be undone."""

    files: list[tuple[Path, str, str]] = field(default_factory=list)
    """(path, text before, text written) of each file."""

    def undo(self) -> list[str]:
        """Put every file back as it was; returns a message for each one that was not
        (it changed since, or cannot be written)."""
        problems = []
        for path, before, written in self.files:
            try:
                file = read_text_file(path)
                if file.text != written:
                    problems.append(f"{path.name} changed since the rename; it was left as it is.")
                    continue
                write_text_file(path, before, file.encoding, file.eol, file.has_bom)
            except EditorError as exc:
                problems.append(str(exc))
        return problems


def apply_to_disk(edits: list[FileEdit]) -> DiskChange:
    """Apply each file's edits to the file on disk, keeping its encoding and line endings.

    Every file is read and edited before any is written, so a file that cannot be read or
    edited leaves all of them untouched; raises LanguageServerError then."""
    planned = []
    for file_edit in edits:
        try:
            file = read_text_file(file_edit.path)
        except EditorError as exc:
            raise LanguageServerError(f"Nothing was changed: {exc}") from None
        if not file.is_text:
            raise LanguageServerError(f"Nothing was changed: {file_edit.path} is not a text file.")
        try:
            new_text = apply_edits(file.text, file_edit.edits)
        except ValueError as exc:
            raise LanguageServerError(f"Nothing was changed: {exc}") from None
        planned.append((file_edit.path, file, new_text))
    change = DiskChange()
    for path, file, new_text in planned:
        if new_text == file.text:
            continue
        try:
            write_text_file(path, new_text, file.encoding, file.eol, file.has_bom)
        except EditorError as exc:
            problems = change.undo()
            raise LanguageServerError(f"{exc} The files changed before it were put back."
                                      + (" " + " ".join(problems) if problems else "")) from None
        change.files.append((path, file.text, new_text))
    return change
