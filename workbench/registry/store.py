"""The registry folder's shared parts: its layout, its lock, and ``registry.json``.

```
registry/
  registry.json          next numbers (numbers only grow), pinned model versions
  removed.jsonl          every model version removed, when and by whom
  aliases.json           alias -> model version; alias-history.jsonl: every move
  datasets/              train_NNNN.txt + train_NNNN.json (a version), val.txt
  models/                bestmodel_NNNN.* + neural_net_info_NNNN.yaml (a version)
  .lock                  held while anything is cut, registered or removed
```

Every change happens under the lock and is written atomically; a version becomes visible only
when its metadata file (the last file written) is in place, so a half-made version never shows.
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from workbench.platform.atomic_files import write_text_atomically
from workbench.platform.locks import FileLock
from workbench.registry.errors import RegistryError

STATE_FILE = "registry.json"
REMOVED_FILE = "removed.jsonl"     # every model version removed: numbers never given again
LOCK_FILE = ".lock"
DIGITS = 4
NUMBER = re.compile(r"^\d{4,}$")
_FORMAT = 1
# A registration copies at most a few hundred MB; a lock held longer than this is a process
# that hangs, and the message names it.
LOCK_WAIT_S = 120.0


def format_number(number: int) -> str:
    """``3`` -> ``"0003"`` (four digits, more once past 9999)."""
    return f"{int(number):0{DIGITS}d}"


def parse_number(text: str | int, kind: str = "version") -> int:
    """``"0003"``, ``"3"`` or ``3`` -> 3; RegistryError for anything else."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    value = str(text).strip()
    if not value.isdigit():
        raise RegistryError(f"{value!r} is not a {kind} number: give its number, as 0003 or 3.")
    return int(value)


class RegistryFolder:
    """The registry of one project: where it is and the state every change shares."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.datasets = self.folder / "datasets"
        self.models = self.folder / "models"

    # --- the lock ------------------------------------------------------------------------

    @contextmanager
    def locked(self, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
        """Hold the registry's lock: one process cuts, registers or removes at a time; the
        other waits its turn (up to ``wait_s``, then a RegistryError naming the holder)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.folder / LOCK_FILE, mode=0o644)
        deadline = time.monotonic() + wait_s
        while not lock.try_acquire():
            if time.monotonic() >= deadline:
                holder = lock.holder_pid()
                who = f"process {holder}" if holder else "another process"
                raise RegistryError(f"the registry in {self.folder} is busy: {who} has been changing it for "
                                    f"{wait_s:.0f} s. Wait for it to finish, or end that process.")
            time.sleep(0.05)
        try:
            yield
        finally:
            lock.release()

    # --- registry.json -----------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.folder / STATE_FILE

    def read_state(self) -> dict:
        """``{"next": {"dataset": n, "model": n}, "pinned": [n, ...]}``. A damaged file is a
        RegistryError: it holds the numbers that must never be given again."""
        try:
            text = self.state_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"format": _FORMAT, "next": {}, "pinned": []}
        except OSError as exc:
            raise RegistryError(f"cannot read {self.state_file}: {exc.strerror or exc}.") from None
        try:
            state = json.loads(text)
            next_numbers = {str(kind): int(number) for kind, number in state.get("next", {}).items()}
            pinned = sorted({int(number) for number in state.get("pinned", [])})
        except (ValueError, TypeError, AttributeError) as exc:
            raise RegistryError(
                f"{self.state_file} is damaged ({exc}). Restore it (from Git or a backup), or delete it: "
                "Workbench then rebuilds it from the versions present and removed.jsonl, and pins are lost.") from None
        return {"format": _FORMAT, "next": next_numbers, "pinned": pinned}

    def write_state(self, state: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomically(self.state_file, json.dumps(state, indent=2, sort_keys=True) + "\n")

    def take_number(self, kind: str, present: list[int]) -> int:
        """The next number of ``kind`` ("dataset", "model"), recorded as taken before anything
        is written: a number is never given twice, even after a failed or removed version.
        The first is 0 (``0000``): the layout of continual-learning pipelines (TANGO's
        ``train_0000.txt`` … ``train_0005.txt``) that users already know; keep it so."""
        state = self.read_state()
        removed = self.removed_numbers() if kind == "model" else []
        number = max([state["next"].get(kind, 0), *(n + 1 for n in present), *(n + 1 for n in removed)])
        state["next"][kind] = number + 1
        self.write_state(state)
        return number

    def record_removal(self, entry: dict) -> None:
        """Append to ``removed.jsonl`` which model versions and files were removed, when, by whom."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / REMOVED_FILE, "a", encoding="utf-8") as log:
            log.write(json.dumps({"time": now_iso(), "user": os_user(), **entry}) + "\n")

    def removed_numbers(self) -> list[int]:
        """The model versions ever removed (a damaged line is skipped: registry.json still
        holds the next number)."""
        numbers = []
        try:
            lines = (self.folder / REMOVED_FILE).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        for line in lines:
            try:
                numbers += [int(version) for version in json.loads(line)["versions"]]
            except (ValueError, KeyError, TypeError):
                continue
        return numbers

    def pinned(self) -> set[int]:
        return set(self.read_state()["pinned"])

    def set_pinned(self, number: int, pinned: bool) -> None:
        state = self.read_state()
        numbers = set(state["pinned"])
        numbers.add(number) if pinned else numbers.discard(number)
        state["pinned"] = sorted(numbers)
        self.write_state(state)


def os_user() -> str:
    """Who made a change, for the records (the OS user's login name)."""
    for name in ("USER", "LOGNAME", "USERNAME"):
        if os.environ.get(name):
            return os.environ[name]
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return "unknown"


def now_iso() -> str:
    """The time now as ISO 8601 with the local offset, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime())
