"""The hub's registry of windows: who runs, in which process, for which project, in what state."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from workbench.ipc import messages


@dataclass
class WindowEntry:
    window_id: str
    pid: int
    kind: str
    project: str | None
    state: str = messages.STATE_STARTING
    title: str = ""
    started_at: float = field(default_factory=time.time)

    def to_json(self) -> dict:
        return asdict(self)


class WindowRegistry:
    """Plain bookkeeping; the hub decides when entries change."""

    def __init__(self) -> None:
        self._entries: dict[str, WindowEntry] = {}

    def add(self, entry: WindowEntry) -> WindowEntry:
        self._entries[entry.window_id] = entry
        return entry

    def get(self, window_id: str) -> WindowEntry | None:
        return self._entries.get(window_id)

    def remove(self, window_id: str) -> WindowEntry | None:
        return self._entries.pop(window_id, None)

    def entries(self, include_spares: bool = False) -> list[WindowEntry]:
        return [e for e in self._entries.values() if include_spares or e.kind != messages.KIND_SPARE]

    def live_for_project(self, project: str) -> WindowEntry | None:
        """The project's window (tool windows of the project are not it)."""
        for entry in self._entries.values():
            if entry.kind == messages.KIND_PROJECT and entry.project == project and entry.state != messages.STATE_CRASHED:
                return entry
        return None

    def crashed_for_project(self, project: str) -> list[WindowEntry]:
        return [e for e in self._entries.values() if e.kind == messages.KIND_PROJECT and e.project == project
                and e.state == messages.STATE_CRASHED]

    def spare(self) -> WindowEntry | None:
        for entry in self._entries.values():
            if entry.kind == messages.KIND_SPARE and entry.state == messages.STATE_READY:
                return entry
        return None

    def has_user_windows(self) -> bool:
        return any(e.kind != messages.KIND_SPARE and e.state != messages.STATE_CRASHED
                   for e in self._entries.values())
