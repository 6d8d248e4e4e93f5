"""The editor's checker for hyper-parameter files: problems as the user types.

The project's schema (FastNN's keys plus those its workbench.toml declares) is read again only
when workbench.toml changes. Called on the editor's worker thread, never on the GUI thread.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

HPARAMS_SUFFIX = ".hparams"


class HParamsChecker:
    """``checker(text, path) -> [EditorDiagnostic]`` for the ``.hparams`` files of one project."""

    def __init__(self, project_dir: Path):
        self.project_dir = Path(project_dir)
        self._lock = threading.Lock()
        self._schema = None
        self._stamp: tuple | None = None

    def schema(self):
        # Leave this import here: the window does not need the hyper-parameter module until a
        # .hparams file is open.
        from workbench_trainkit.hparams import project_schema

        try:
            info = os.stat(self.project_dir / "workbench.toml")
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError:
            stamp = None
        with self._lock:
            if self._schema is None or stamp != self._stamp:
                self._schema = project_schema(self.project_dir)
                self._stamp = stamp
            return self._schema

    def __call__(self, text: str, path: Path) -> list:
        from workbench.editor.diagnostics import EditorDiagnostic
        from workbench_trainkit.hparams import check_hparams_text

        try:
            schema = self.schema()
        except Exception as exc:  # a broken [training.keys] table is reported on line 1
            return [EditorDiagnostic(1, 0, 0, f"The project's hyper-parameter keys cannot be read: {exc}")]
        _values, problems = check_hparams_text(text, schema, str(path))
        found = []
        for problem in problems:
            message = problem.message
            if problem.suggestion and problem.suggestion not in message:
                message += f" (did you mean {problem.suggestion}?)"
            found.append(EditorDiagnostic(problem.line, problem.start, problem.end, message,
                                          problem.severity if problem.severity == "warning" else "error"))
        return found
