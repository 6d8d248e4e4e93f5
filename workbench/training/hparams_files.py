"""The project's hyper-parameter files, and overrides as people type them (``key=value``), for
the dialogs that start runs here or on a cluster. Qt-free; called on worker threads and, for a
few lines of overrides, on the GUI thread."""

from __future__ import annotations

import os
from pathlib import Path

SKIPPED_FOLDERS = {".git", ".workbench", "runs", "__pycache__", ".venv", "venv", "node_modules", "outputs"}


def find_hparams_files(project_dir: Path, limit: int = 200) -> list[str]:
    """Project-relative paths of the ``*.hparams`` files under ``project_dir``."""
    found = []
    for folder, folders, files in os.walk(project_dir):
        folders[:] = sorted(f for f in folders if f not in SKIPPED_FOLDERS and not f.startswith("."))
        for name in sorted(files):
            if name.endswith(".hparams"):
                found.append(Path(folder, name).relative_to(project_dir).as_posix())
                if len(found) >= limit:
                    return found
    return found


def parse_overrides(text: str, schema=None) -> tuple[list[str], str]:
    """The ``key=value`` overrides in ``text`` (one a line, or several separated by spaces; ``#``
    starts a comment) and an error message ("" when they are all well formed and, given the
    project's ``schema``, name known keys with values of the right type)."""
    # Leave this import here: the hyper-parameter module loads when a dialog needs it.
    from workbench_trainkit.hparams import check_hparams_text, parse_override

    overrides = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pieces = [line] if line.count("=") == 1 else line.split()
        for piece in pieces:
            try:
                key, value = parse_override(piece)
            except ValueError as exc:
                return [], str(exc)
            overrides.append(f"{key}={value}")
    if schema is not None and overrides:
        _values, problems = check_hparams_text("\n".join(overrides), schema, "overrides")
        if problems:
            return [], problems[0].message
    return overrides, ""
