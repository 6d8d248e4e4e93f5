"""The project's run history: ``<project>/.workbench/runs.sqlite``, one row per run.

SQLite in WAL mode, so the supervisor of a run and the window (or CLI) that lists runs write and
read at once without blocking each other, and a process killed mid-write leaves the last
committed history. Each row holds the run's RunInfo as JSON, as ``run.json`` in its folder does;
``run.json`` is written first, so when the two disagree the service takes the folder's word
(and writes it back here).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from workbench.training.errors import TrainingError
from workbench.training.run_info import RunInfo

STORE_NAME = "runs.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    state TEXT NOT NULL,
    info TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at);
"""


class RunStore:
    """The run rows of one project. Each call opens its own connection, so a store may be used
    from any thread and by any number of processes."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir)
        self.path = self.project_dir / ".workbench" / STORE_NAME
        self._ready = False

    def put(self, info: RunInfo) -> None:
        """Insert or replace the row of ``info.id``."""
        with self._connect(create=True) as db:
            db.execute("INSERT OR REPLACE INTO runs (id, created_at, state, info) VALUES (?, ?, ?, ?)",
                       (info.id, info.created_at, info.state, json.dumps(info.to_json())))

    def get(self, run_id: str) -> RunInfo | None:
        with self._connect() as db:
            if db is None:
                return None
            row = db.execute("SELECT info FROM runs WHERE id = ?", (run_id,)).fetchone()
        return self._info(row[0]) if row else None

    def all(self) -> list[RunInfo]:
        """Every run, newest first."""
        with self._connect() as db:
            if db is None:
                return []
            rows = db.execute("SELECT info FROM runs ORDER BY created_at DESC, id DESC").fetchall()
        return [info for info in (self._info(row[0]) for row in rows) if info is not None]

    def delete(self, run_id: str) -> None:
        with self._connect() as db:
            if db is not None:
                db.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def _info(self, text: str) -> RunInfo | None:
        try:
            info = RunInfo.from_json(json.loads(text))
        except (ValueError, TypeError):
            return None
        # The project may have moved since the row was written.
        info.project_dir = str(self.project_dir)
        info.run_dir = str(self.project_dir / "runs" / info.id)
        return info

    def _connect(self, create: bool = False) -> "_Connection":
        return _Connection(self, create)

    def _open(self, create: bool) -> sqlite3.Connection | None:
        if not self.path.exists():
            if not create:
                return None
            from workbench.project.project_file import ensure_state_dir

            try:
                ensure_state_dir(self.project_dir)
            except OSError as exc:
                raise TrainingError(f"Cannot keep the run history in {self.path.parent}: "
                                    f"{exc.strerror or exc}. Check the project folder's permissions.") from None
        try:
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
            if not self._ready:
                # WAL is a property of the file: set once, kept by every later connection.
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                self._ready = True
            # In WAL mode, NORMAL loses no committed row when a process crashes (only on power loss
            # may the last ones go), and spares an fsync per write.
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise TrainingError(f"The run history {self.path} cannot be opened ({exc}). "
                                "Delete it to start a new one; the runs themselves stay in runs/.") from None
        return db


class _Connection:
    def __init__(self, store: RunStore, create: bool):
        self._store, self._create, self._db = store, create, None

    def __enter__(self) -> sqlite3.Connection | None:
        self._db = self._store._open(self._create)
        return self._db

    def __exit__(self, kind, value, traceback) -> None:
        if self._db is not None:
            self._db.close()
        if isinstance(value, sqlite3.Error):
            raise TrainingError(f"The run history {self._store.path} cannot be used ({value}). "
                                "Delete it to start a new one; the runs themselves stay in runs/.") from None
