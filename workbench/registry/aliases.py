"""Aliases (``production``, ``staging``, any name) that point to model versions, and the record
of every move: when, from which version to which, why, and by whom. So "which model was on the
devices on 3 May?" has an answer (``at``), and ``rollback`` moves an alias back along its moves.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.registry.errors import RegistryError
from workbench.registry.store import format_number, now_iso, os_user

ALIASES_FILE = "aliases.json"
HISTORY_FILE = "alias-history.jsonl"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class AliasMove:
    time: str
    alias: str
    version: int | None             # where the alias points after the move (None: deleted)
    previous: int | None            # where it pointed before
    reason: str
    user: str
    action: str                     # "set", "rollback" or "delete"

    def to_json(self) -> dict:
        return {"time": self.time, "alias": self.alias,
                "to": None if self.version is None else format_number(self.version),
                "from": None if self.previous is None else format_number(self.previous),
                "reason": self.reason, "user": self.user, "action": self.action}


class AliasBook:
    """The aliases of one registry folder. Callers hold the registry's lock to change them."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def all(self) -> dict[str, int]:
        path = self.folder / ALIASES_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return {str(name): int(number) for name, number in data.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise RegistryError(f"{path} is damaged ({exc}). Restore it (from Git or a backup); the moves "
                                f"are all in {HISTORY_FILE} beside it.") from None

    def of_version(self, number: int) -> list[str]:
        return sorted(name for name, target in self.all().items() if target == number)

    def history(self, alias: str | None = None) -> list[AliasMove]:
        path = self.folder / HISTORY_FILE
        if not path.is_file():
            return []
        moves = []
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                move = AliasMove(time=str(data["time"]), alias=str(data["alias"]),
                                 version=None if data["to"] is None else int(data["to"]),
                                 previous=None if data["from"] is None else int(data["from"]),
                                 reason=str(data.get("reason", "")), user=str(data.get("user", "")),
                                 action=str(data.get("action", "set")))
            except (ValueError, KeyError, TypeError) as exc:
                raise RegistryError(f"{path}:{line_number} is damaged ({exc}). Remove or mend that line.") from None
            if alias is None or move.alias == alias:
                moves.append(move)
        return moves

    def move(self, alias: str, number: int | None, reason: str = "", action: str = "set") -> AliasMove:
        """Point ``alias`` at ``number`` (None deletes it) and record the move."""
        check_alias_name(alias)
        aliases = self.all()
        previous = aliases.get(alias)
        if number is None:
            aliases.pop(alias, None)
        else:
            aliases[alias] = number
        entry = AliasMove(time=now_iso(), alias=alias, version=number, previous=previous, reason=reason,
                          user=os_user(), action=action)
        self.folder.mkdir(parents=True, exist_ok=True)
        # The record first: a move that is recorded but not made is visible and can be made
        # again; one made but not recorded would be a hole in the history.
        with open(self.folder / HISTORY_FILE, "a", encoding="utf-8") as history:
            history.write(json.dumps(entry.to_json()) + "\n")
        write_text_atomically(self.folder / ALIASES_FILE, json.dumps(
            {name: format_number(target) for name, target in sorted(aliases.items())}, indent=2) + "\n")
        return entry

    def rollback_target(self, alias: str) -> int | None:
        """The version ``alias`` pointed to before it was last moved to where it is now: each
        rollback goes one move further back, as an undo does. None when it pointed nowhere
        before (its first move)."""
        current = self.all().get(alias)
        if current is None:
            raise RegistryError(f"there is no alias {alias!r}; set it with `workbench registry alias {alias} NNNN`.")
        moves = self.history(alias)
        undone = 0
        for move in reversed(moves):
            if move.action == "rollback":
                undone += 1
                continue
            if move.action == "set" and move.version is not None:
                if undone:
                    undone -= 1
                    continue
                return move.previous
        return None

    def at(self, alias: str, when: str) -> int | None:
        """Where ``alias`` pointed at ``when`` (an ISO time, as the history records them)."""
        target = None
        for move in self.history(alias):
            if move.time <= when:
                target = move.version
        return target


def check_alias_name(name: str) -> None:
    if not _NAME.match(name or "") or name.isdigit():
        raise RegistryError(f"{name!r} cannot be an alias: use a name that starts with a letter, of letters, "
                            "digits, '.', '_' and '-' (as production or staging).")
