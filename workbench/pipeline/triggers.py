"""``[pipeline.triggers]``: when the trigger watcher starts an iteration by itself.

```toml
[pipeline.triggers]
schedule = "02:00"                      # daily at this local time
every = "6h"                            # or periodically: "45s", "30m", "6h", "1d"
on_data_growth = { samples = 500 }      # or { percent = 10 }: new samples since the newest dataset version
check_every = "5m"                      # how often the data is looked at (default 5m)
start_with_workbench = true             # false: only `workbench pipeline watch` starts the watcher
retrain_unchanged = false               # true: a schedule or period retrains on data that has not changed
```

A schedule or a period that comes due when the last iteration is done and the data is as the
newest dataset version has it starts nothing (the watcher says so): retraining on the same data
would fill the registry with near copies, and model retention (the newest ``version_max``)
would drop the versions that differ for them. ``retrain_unchanged = true`` retrains all the same. A manual start is ``workbench
pipeline start``. A declaration that does not check out is one
error naming the line and the key, as for ``[[pipeline.steps]]``.

The clock (``TriggerClock``) and the data check (``DataGrowthCheck``) take the time as an
argument and hold no process, so the watcher's decisions can be driven and read directly.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from workbench.pipeline.errors import PipelineError

PROJECT_FILE = "workbench.toml"
ON_OPEN_LOG = Path(".workbench") / "pipeline" / "watcher-on-open.log"
"""Under the project: what a watcher started on opening the project says before it watches."""
DEFAULT_CHECK_EVERY_S = 300.0
SCHEDULE, EVERY, DATA_GROWTH = "schedule", "every", "data growth"
TRIGGER_KEYS = ("schedule", "every", "on_data_growth", "check_every", "start_with_workbench", "retrain_unchanged")
GROWTH_KEYS = ("samples", "percent")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_CLOCK_TIME = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")


@dataclass
class TriggerDeclaration:
    """The project's triggers; None where one is not declared."""

    schedule: tuple[int, int] | None = None       # (hour, minute), local time
    every_s: float | None = None
    growth_samples: int | None = None
    growth_percent: float | None = None
    check_every_s: float = DEFAULT_CHECK_EVERY_S
    start_with_workbench: bool = True
    """Whether opening the project in Workbench starts its watcher (when one is not running)."""
    retrain_unchanged: bool = False
    """Whether a schedule or a period starts an iteration when the data has not changed since
    the newest dataset version and the last iteration is done."""

    @property
    def any(self) -> bool:
        return self.schedule is not None or self.every_s is not None or self.watches_data

    @property
    def watches_data(self) -> bool:
        return self.growth_samples is not None or self.growth_percent is not None

    def describe(self) -> list[str]:
        """One line a trigger, as status shows them."""
        lines = []
        if self.schedule is not None:
            lines.append(f"daily at {self.schedule[0]:02d}:{self.schedule[1]:02d}")
        if self.every_s is not None:
            lines.append(f"every {format_duration(self.every_s)}")
        if self.watches_data:
            amounts = ([f"{self.growth_samples} samples"] if self.growth_samples is not None else []) + \
                      ([f"{self.growth_percent:g} %"] if self.growth_percent is not None else [])
            lines.append(f"data growth of {' or '.join(amounts)} (looked at every "
                         f"{format_duration(self.check_every_s)})")
        return lines


def read_triggers(project_dir: Path | str) -> TriggerDeclaration:
    """The project's ``[pipeline.triggers]``, checked (empty when it declares none)."""
    path = Path(project_dir) / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelineError(f"cannot read {path}: {exc.strerror or exc}. Is {project_dir} a Workbench "
                            "project?") from None
    return parse_triggers(text, path.name)


def parse_triggers(text: str, file_name: str = PROJECT_FILE) -> TriggerDeclaration:
    """``[pipeline.triggers]`` of a workbench.toml's ``text``; PipelineError naming the line and
    the key of the first fault."""
    try:
        settings = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(f"{file_name}: {exc}; fix the file's syntax.") from None
    pipeline = settings.get("pipeline")
    raw = pipeline.get("triggers") if isinstance(pipeline, dict) else None
    if raw is None:
        return TriggerDeclaration()
    lines = text.splitlines()

    def fault(key: str, what: str) -> PipelineError:
        return PipelineError(f"{file_name} line {_line_of(lines, key)}: key {key!r} of [pipeline.triggers] {what}")

    if not isinstance(raw, dict):
        raise fault("triggers", "must be a table ([pipeline.triggers]).")
    for key in raw:
        if key not in TRIGGER_KEYS:
            raise fault(key, f"is not a trigger (they are {', '.join(TRIGGER_KEYS)}){_close(key, TRIGGER_KEYS)}")
    declared = TriggerDeclaration()
    if "start_with_workbench" in raw:
        if not isinstance(raw["start_with_workbench"], bool):
            raise fault("start_with_workbench", f"must be true or false (false: opening the project does not start "
                                                f"the watcher), not {raw['start_with_workbench']!r}.")
        declared.start_with_workbench = raw["start_with_workbench"]
    if "retrain_unchanged" in raw:
        if not isinstance(raw["retrain_unchanged"], bool):
            raise fault("retrain_unchanged", f"must be true or false (true: a schedule or period retrains on data "
                                             f"that has not changed), not {raw['retrain_unchanged']!r}.")
        declared.retrain_unchanged = raw["retrain_unchanged"]
    if "schedule" in raw:
        declared.schedule = _clock_time(raw["schedule"])
        if declared.schedule is None:
            raise fault("schedule", f"must be a local time of day \"HH:MM\" (\"02:00\" is nightly at two), "
                                    f"not {raw['schedule']!r}.")
    for key in ("every", "check_every"):
        if key in raw:
            seconds = _duration(raw[key])
            if seconds is None or seconds <= 0:
                raise fault(key, f"must be a duration such as \"45s\", \"30m\", \"6h\" or \"1d\", not {raw[key]!r}.")
            if key == "every":
                declared.every_s = seconds
            else:
                declared.check_every_s = seconds
    if "on_data_growth" in raw:
        growth = raw["on_data_growth"]
        if not isinstance(growth, dict) or not growth:
            raise fault("on_data_growth", f"must be {{ samples = N }} or {{ percent = P }}, not {growth!r}.")
        for key, value in growth.items():
            if key not in GROWTH_KEYS:
                raise fault(key, f"is not a kind of data growth (samples = N new samples, or percent = P % "
                                 f"more){_close(key, GROWTH_KEYS)}")
            whole = key == "samples"
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) or value <= 0:
                raise fault(key, f"of on_data_growth must be {'a whole number' if whole else 'a number'} more "
                                 f"than 0, not {value!r}.")
        declared.growth_samples = growth.get("samples")
        declared.growth_percent = float(growth["percent"]) if "percent" in growth else None
    return declared


def watcher_wanted_on_open(settings: dict) -> bool:
    """Whether opening the project should start its trigger watcher: its parsed workbench.toml
    (``settings``) declares a trigger in ``[pipeline.triggers]`` and does not say
    ``start_with_workbench = false``. Cheap and lenient, for the hub: whether the triggers
    check out is the watcher's to say (in its log) when it starts."""
    pipeline = settings.get("pipeline") if isinstance(settings, dict) else None
    raw = pipeline.get("triggers") if isinstance(pipeline, dict) else None
    if not isinstance(raw, dict) or raw.get("start_with_workbench", True) is False:
        return False
    return any(key in raw for key in ("schedule", "every", "on_data_growth"))


def format_duration(seconds: float) -> str:
    for unit in ("d", "h", "m"):
        if seconds >= _UNIT_SECONDS[unit] and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{int(seconds // _UNIT_SECONDS[unit])}{unit}"
    return f"{seconds:g}s"


def next_daily(after: float, hour: int, minute: int) -> float:
    """The first moment strictly after ``after`` at ``hour:minute`` local time."""
    moment = datetime.fromtimestamp(after)
    candidate = moment.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate.timestamp() <= after:
        candidate += timedelta(days=1)
    return candidate.timestamp()


class TriggerClock:
    """When each declared trigger is next due. A periodic trigger counts from when it last
    fired (kept by the watcher across restarts), so a restart does not push it back; a daily one
    fires at its next time of day after the watcher started."""

    def __init__(self, triggers: TriggerDeclaration, now: float, last_fired: dict[str, float] | None = None):
        self.triggers = triggers
        self.due: dict[str, float] = {}
        last_fired = last_fired or {}
        if triggers.schedule is not None:
            self.due[SCHEDULE] = next_daily(now, *triggers.schedule)
        if triggers.every_s is not None:
            last = last_fired.get(EVERY)
            self.due[EVERY] = (last + triggers.every_s) if last else now + triggers.every_s
        if triggers.watches_data:
            self.due[DATA_GROWTH] = now

    def due_now(self, now: float) -> list[str]:
        return [name for name, moment in self.due.items() if moment <= now]

    def passed(self, name: str, now: float) -> None:
        """``name`` fired (or, for data growth, was looked at) at ``now``: when it is due next."""
        if name == SCHEDULE:
            self.due[name] = next_daily(now, *self.triggers.schedule)
        elif name == EVERY:
            self.due[name] = now + self.triggers.every_s
        else:
            self.due[name] = now + self.triggers.check_every_s

    def seconds_to_next(self, now: float) -> float | None:
        return min((moment - now for moment in self.due.values()), default=None)


class DataGrowthCheck:
    """Whether the data grew enough since the newest dataset version. A cheap look first: for a
    folder of files, a walk with ``stat`` only (count, bytes, newest change) and the newest
    version's number; only when that differs from the last look is ``pending()`` asked (which
    hashes what changed). Data a function of the project's code names is asked every time."""

    def __init__(self, datasets, triggers: TriggerDeclaration):
        self.datasets = datasets
        self.triggers = triggers
        self._last_look: tuple | None = None

    def check(self) -> str | None:
        """The reason to start an iteration, or None."""
        look = self._cheap_look()
        if look is not None and look == self._last_look:
            return None
        latest = self.datasets.latest()
        added = len(self.datasets.pending().added)
        self._last_look = look
        base = latest.samples if latest is not None else 0
        since = f"dataset version {latest.name}" if latest is not None else "no dataset version yet"
        grown = f"{100.0 * added / base:.1f} %" if base else "all new"
        if self.triggers.growth_samples is not None and added >= self.triggers.growth_samples:
            return (f"data growth: {added} new samples ({grown}) since {since} "
                    f"(trigger: {self.triggers.growth_samples} samples)")
        if self.triggers.growth_percent is not None and added and (
                base == 0 or 100.0 * added / base >= self.triggers.growth_percent):
            return (f"data growth: {added} new samples ({grown}) since {since} "
                    f"(trigger: {self.triggers.growth_percent:g} %)")
        return None

    def _cheap_look(self) -> tuple | None:
        source = self.datasets.settings.data
        if not source.train_folder:
            return None
        latest = self.datasets.latest()
        count = size = newest = 0
        pending = [Path(self.datasets.project_dir) / source.train_folder]
        while pending:
            try:
                entries = list(os.scandir(pending.pop()))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                info = entry.stat()
                count, size, newest = count + 1, size + info.st_size, max(newest, info.st_mtime_ns)
        return (latest.number if latest is not None else None, count, size, newest)


def _clock_time(value) -> tuple[int, int] | None:
    match = _CLOCK_TIME.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        return None
    return int(match.group(1)), int(match.group(2))


def _duration(value) -> float | None:
    match = _DURATION.match(value) if isinstance(value, str) else None
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else None


def _close(word: str, choices) -> str:
    match = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {match[0]}?" if match else "."


def _line_of(lines: list[str], key: str) -> int:
    """The line of ``key`` in the triggers table (or in an inline table under it), else of the
    table's header."""
    header = next((n for n, line in enumerate(lines) if re.match(r"^\s*\[\s*pipeline\s*\.\s*triggers\s*[\].]", line)),
                  None)
    if header is None:  # triggers = { ... } under [pipeline]
        header = next((n for n, line in enumerate(lines) if re.match(r"^\s*triggers\s*=", line)), 0)
    pattern = re.compile(rf"(^|[{{,]\s*)[\"']?{re.escape(key)}[\"']?\s*=")
    for number in range(header, len(lines)):
        if number > header and re.match(r"^\s*\[", lines[number]) and \
                not re.match(r"^\s*\[\s*pipeline\s*\.\s*triggers\s*\.", lines[number]):
            break
        if pattern.search(lines[number].strip()):
            return number + 1
    return header + 1
