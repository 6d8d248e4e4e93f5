"""Printed training output → metric records: the one table of line formats Workbench reads.

A script that does not write ``metrics.jsonl`` still prints its progress; the run's supervisor
feeds what it prints (stdout and stderr) to :class:`PrintedOutput`, which tries each pattern of
:data:`PATTERNS` (after the project's own, from ``[training] metric_patterns``) on each line and
gives the records for metrics.jsonl.

Rules every pattern keeps:

- A progress bar redraws its line with ``\\r``: only the last state of each step counts, so a
  bar that redraws a hundred times at one step gives one record, not a hundred.
- A value that is not a finite number (``loss: nan``) is left out; a line left with no metric
  gives no record. A line that only almost matches gives nothing, never an error.
- Patterns are specific on purpose: prose such as ``Using 4 GPUs: 0.5`` or ``Seed: 42`` is not
  a metric. ``name: value`` lines and printed dicts need a name that reads as a metric (loss,
  acc, lr, f1, ...); ``name=value`` lines, Keras lines and progress bars are specific by form.
- Step: the one the line gives (``step``/``iter``/``global_step``, ``Epoch e/n`` with the
  batch, a bar's position); else the step of the line before, when that line gave one
  (:class:`~workbench.training.metrics.PrintedMetrics`); else the next after the last, so a
  script that prints one ``Epoch 1/3 - loss: 0.69`` line an epoch is drawn 1, 2, 3. Evaluation
  records (every name ``val_``, ``eval_``, ``test_``) belong to the step before.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.training.errors import TrainingError
from workbench.training.metrics import POSITION_NAMES, parse_metric_line

PROJECT_FILE = "workbench.toml"

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf|infinity)"
# A number that ends where the value ends: "0.5.1" and "0.5abc" are not numbers.
_VALUE = rf"(?P<value>{_NUMBER})(?![\w.])"
_TOKEN = r"[A-Za-z_][\w./-]*"
# Words that make a name read as a metric (for the formats a sentence could take by chance).
_METRIC_WORD = re.compile(
    r"loss|acc|err|perplex|ppl|f1|auc|precision|recall|mse|mae|iou|dice|bleu|rouge|score|reward|top-?\d"
    r"|(?:^|[_\s./-])(?:lr|learning.?rate)(?:$|[_\s./-])", re.IGNORECASE)
_EXCEPTION_NAME = re.compile(r"^[A-Z]\w*(?:Error|Exception|Warning)$")
_EVALUATION = re.compile(r"^(?:val|valid|validation|eval|test)[_/.]", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class LogState:
    """What earlier lines said that a later line needs: the epoch of Keras' ``Epoch 3/10``
    header (its batch lines carry only ``5/50``), and whether a results table is open."""

    epoch: int | None = None
    epochs: int | None = None
    in_results_table: bool = False
    first_epoch: int | None = None  # the epoch of the first "Train Epoch: 1 [0/60000 (0%)]" line
    pattern: str = ""   # the name of the pattern that read the last line


@dataclass(frozen=True)
class LinePattern:
    """One line format: its name, an example of what it recognises, and ``read(line, state)``,
    which gives the parsed values (``step`` and ``epoch`` included when the line has them) or
    None when the line is not of this format."""

    name: str
    recognises: str
    read: Callable[[str, LogState], dict | None]


def _number(text: str) -> float:
    return float(text)


def _reads_as_metric(name: str) -> bool:
    return bool(_METRIC_WORD.search(name)) and not _EXCEPTION_NAME.match(name)


# --- key=value -------------------------------------------------------------------------------

def _read_equals_pairs(line: str, state: LogState) -> dict | None:
    return parse_metric_line(line)


# --- key: value, after an optional position ("Epoch [1/5], Step [100/600], Loss: 0.22") -------

_POSITION = re.compile(
    r"\s*(?:(?P<word>epoch|step|global[_ ]step|iter(?:ation)?|it|batch)\s*\[?\s*(?P<n>\d+)\s*(?:/\s*(?P<of>\d+))?\s*\]?"
    r"|\[\s*(?P<pair_epoch>\d+)\s*,\s*(?P<pair_batch>\d+)\s*\])\s*[:,|;-]?", re.IGNORECASE)
_NAMED_VALUE = re.compile(
    rf"(?P<name>{_TOKEN}|[A-Za-z]+(?: [A-Za-z]+){{1,2}})\s*(?::|=)\s*{_VALUE}(?:\s?%)?", re.IGNORECASE)
_PAIR_GAP = re.compile(r"(?:\s*[,;|]\s*|\s+-\s+|\s*)")


def _read_colon_pairs(line: str, state: LogState) -> dict | None:
    if ":" not in line and "=" not in line:
        return None
    record: dict = {}
    position = 0
    while True:  # the position words first: epoch, step, batch
        found = _POSITION.match(line, position)
        if found is None or found.end() == position:
            break
        _place(record, found)
        position = found.end()
    position = _PAIR_GAP.match(line, position).end() if position < len(line) else position
    names = []
    while position < len(line):
        pair = _NAMED_VALUE.match(line, position)
        if pair is None:
            return None
        name = pair.group("name")
        if " " in name and not _reads_as_metric(name):
            return None  # "Using GPUs: 4" is a sentence, not a metric
        key = re.sub(r"\s+", "_", name).lower()
        names.append(name)
        if key in ("step", "global_step", "iter", "iteration"):
            record["step"] = pair.group("value")
        elif key == "epoch":
            record["epoch"] = pair.group("value")
        else:
            record[key] = _number(pair.group("value"))
        gap = _PAIR_GAP.match(line, pair.end())
        position = gap.end() if gap else pair.end()
    if not any(_reads_as_metric(name) for name in names):
        return None
    return _with_whole_positions(record)


def _place(record: dict, found: re.Match) -> None:
    if found.group("pair_epoch") is not None:  # "[1,  2000] loss: 2.18", PyTorch's tutorial
        record["epoch"] = int(found.group("pair_epoch"))
        return
    word, n, of = found.group("word").lower().replace(" ", "_"), int(found.group("n")), found.group("of")
    if word == "epoch":
        record["epoch"], record["_epoch_counted_from_1"] = n, of is not None
    elif word == "batch" or (word == "step" and of is not None and "epoch" in record):
        record["_batch"], record["_batches"] = n, int(of) if of else None
    else:
        record["step"] = n


def _with_whole_positions(record: dict) -> dict | None:
    """``record`` with step and epoch as ints (a step from the epoch and the batch when the line
    gave both), or None when a step is not a whole number."""
    batch, batches = record.pop("_batch", None), record.pop("_batches", None)
    from_1 = record.pop("_epoch_counted_from_1", True)
    for name in ("step", "epoch"):
        if isinstance(record.get(name), str):
            value = float(record[name])
            if not value.is_integer():
                return None
            record[name] = int(value)
    if "step" not in record and batch is not None and batches and "epoch" in record:
        record["step"] = (record["epoch"] - (1 if from_1 else 0)) * batches + batch
    return record


# --- PyTorch's examples: "Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.29" and "Test set: ..." ------

_SAMPLES_LINE = re.compile(
    r"^(?:Train(?:ing)?\s+)?Epoch:?\s*(?P<epoch>\d+)\s*\[\s*(?P<seen>\d+)\s*/\s*(?P<total>\d+)\s*"
    r"(?:\(\s*\d+(?:\.\d+)?\s*%\s*\))?\s*\]\s*[:,|-]?\s*(?P<rest>.+)$", re.IGNORECASE)
_SET_LINE = re.compile(r"^(?P<set>test|val|valid|validation|eval|evaluation)\s+set\s*:\s*(?P<rest>.+)$",
                       re.IGNORECASE)
# "Accuracy: 9826/10000 (98%)": the count gives the fraction more exactly than the rounded percent.
_SET_ITEM = re.compile(
    rf"^(?P<name>[A-Za-z][\w ]*?)\s*:\s*(?:(?P<hits>\d+)\s*/\s*(?P<of>\d+)(?:\s*\(\s*{_NUMBER}\s*%\s*\))?"
    rf"|{_VALUE}\s*%?)$", re.IGNORECASE)
_SET_PREFIX = {"test": "test_", "val": "val_", "valid": "val_", "validation": "val_", "eval": "eval_",
               "evaluation": "eval_"}


def _read_samples_line(line: str, state: LogState) -> dict | None:
    found = _SAMPLES_LINE.match(line)
    if found is None:
        return None
    values = _read_colon_pairs(found.group("rest"), state)
    if not values or "step" in values or "epoch" in values:
        return None
    epoch, seen, total = int(found.group("epoch")), int(found.group("seen")), int(found.group("total"))
    if state.first_epoch is None:
        state.first_epoch = epoch  # range(1, epochs + 1) in the examples; some scripts count from 0
    # The step is the samples seen since the start, so epochs of any length line up.
    return {"step": (epoch - state.first_epoch) * total + seen, "epoch": epoch, **values}


def _read_set_line(line: str, state: LogState) -> dict | None:
    found = _SET_LINE.match(line)
    if found is None:
        return None
    prefix = _SET_PREFIX[found.group("set").lower()]
    record: dict = {}
    for item in re.split(r"\s*[,;|]\s*", found.group("rest").strip()):
        pair = _SET_ITEM.match(item)
        if pair is None or not _reads_as_metric(pair.group("name")):
            return None
        name = prefix + re.sub(r"\s+", "_", pair.group("name").strip()).lower()
        if pair.group("hits") is not None:
            if int(pair.group("of")) == 0:
                return None
            record[name] = int(pair.group("hits")) / int(pair.group("of"))
        else:
            record[name] = _number(pair.group("value"))
    return record or None


# --- Keras: "Epoch 3/10" then "50/50 [====] - 1s 2ms/step - loss: 0.12 - acc: 0.95" -----------

_KERAS_HEADER = re.compile(r"^\s*Epoch\s+(?P<epoch>\d+)/(?P<epochs>\d+)\s*$")
_KERAS_LINE = re.compile(
    r"^\s*(?:Epoch\s+(?P<epoch>\d+)/(?P<epochs>\d+)\s+)?(?P<batch>\d+)/(?P<batches>\d+)\s*"
    r"(?:\[[=>.]*\]|[━─]+)?\s*(?P<rest>.*)$")
_KERAS_ITEM = re.compile(rf"^(?P<name>{_TOKEN}):\s*{_VALUE}$")
# What Keras prints between its metrics: the time left, the time taken, the time per step.
_KERAS_TIMING = re.compile(r"^(?:ETA: .*|\d+(?:\.\d+)?(?:s|ms|us)(?:\s+\d+(?:\.\d+)?(?:s|ms|us)/(?:step|epoch|sample))?"
                           r"|\d+(?:\.\d+)?(?:s|ms|us)/(?:step|epoch|sample))$")


def _read_keras(line: str, state: LogState) -> dict | None:
    header = _KERAS_HEADER.match(line)
    if header:  # no record, but the batch lines that follow belong to this epoch
        state.epoch, state.epochs = int(header.group("epoch")), int(header.group("epochs"))
        return None
    found = _KERAS_LINE.match(line)
    if found is None:
        return None
    rest = found.group("rest").strip()
    items = [item.strip() for item in re.split(r"(?:^|\s)-\s", rest) if item.strip()]
    record: dict = {}
    for item in items:
        pair = _KERAS_ITEM.match(item)
        if pair:
            record[pair.group("name")] = _number(pair.group("value"))
        elif not _KERAS_TIMING.match(item):
            return None
    if not record:
        return None
    if found.group("epoch"):
        state.epoch, state.epochs = int(found.group("epoch")), int(found.group("epochs"))
    batch, batches = int(found.group("batch")), int(found.group("batches"))
    if state.epoch is not None:
        record = {"step": (state.epoch - 1) * batches + batch, "epoch": state.epoch, **record}
    return record


# --- tqdm bars: "Epoch 1:  50%|█████     | 25/50 [00:01<00:01, 40.1it/s, loss=0.123]" ----------

_TQDM = re.compile(
    r"^(?P<desc>.*?):?\s*(?:(?P<percent>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+|\?)|(?P<count>\d+)it)\s*"
    r"\[(?P<info>[^\]]*)\]\s*$")
_TQDM_DESC_EPOCH = re.compile(r"\bEpoch\s*\[?\s*(?P<epoch>\d+)\s*(?:/\s*(?P<epochs>\d+))?", re.IGNORECASE)
_TQDM_POSTFIX = re.compile(rf"^\s*(?P<name>{_TOKEN})\s*=\s*{_VALUE}\s*$")
# Postfix entries that are not metrics: Lightning's logger version.
_NOT_BAR_METRICS = frozenset({"v_num"})


def _read_tqdm(line: str, state: LogState) -> dict | None:
    found = _TQDM.match(line)
    if found is None:
        return None
    record: dict = {}
    for item in found.group("info").split(",")[2:]:  # after the times and the rate
        pair = _TQDM_POSTFIX.match(item)
        if pair and pair.group("name") not in _NOT_BAR_METRICS:
            record[pair.group("name")] = _number(pair.group("value"))
    n = int(found.group("n") if found.group("n") is not None else found.group("count"))
    if not record or n == 0:
        return None  # a bar at 0 still shows the values of the epoch before
    total = found.group("total")
    epoch = _TQDM_DESC_EPOCH.search(found.group("desc"))
    if epoch is None:
        return {"step": n, **record}
    number = int(epoch.group("epoch"))
    if total is None or total == "?":
        return {"epoch": number, **record}
    # "Epoch 3/10" counts from 1 (Keras' habit); "Epoch 0" as Lightning and range() count, from 0.
    index = number - 1 if epoch.group("epochs") else number
    return {"step": index * int(total) + n, "epoch": number, **record}


# --- printed dicts: Hugging Face Trainer's "{'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 0.5}"

_DICT = re.compile(r"""^\{\s*(?:'[^']+'|"[^"]+")\s*:.*\}$""")
# numpy 2 and torch scalars print as np.float64(0.5) and tensor(0.5): the number inside counts.
# How long and how fast, which the Trainer prints beside its metrics: not curves to follow.
_TIMING_NAME = re.compile(r"(?:_runtime|_per_second|total_flos)$")
_WRAPPED_NUMBER = re.compile(r"\b(?:np|numpy)\.(?:float|int)\d*\(([^()]*)\)|\btensor\(([^(),]*)\)")


def _read_printed_dict(line: str, state: LogState) -> dict | None:
    if not _DICT.match(line):
        return None
    import ast  # here: most runs print no dict

    text = _WRAPPED_NUMBER.sub(lambda m: m.group(1) or m.group(2), line)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or not value:
        return None
    record: dict = {}
    for name, number in value.items():
        if not isinstance(name, str) or isinstance(number, bool) or not isinstance(number, (int, float)):
            return None  # a dict with text in it is a configuration, not metrics
        if not _TIMING_NAME.search(name):
            record[name] = number
    if not any(_reads_as_metric(name) for name in record if name not in POSITION_NAMES):
        return None
    for name in ("step", "global_step"):
        if name in record:
            step = record.pop(name)
            if float(step).is_integer():
                record["step"] = int(step)
    return record


# --- Lightning's results table after trainer.test/validate --------------------------------------

_TABLE_HEADER = re.compile(r"^[\s┃│|]*(?:Test|Validate|Validation|Predict) metric[\s┃│|]+DataLoader \d+[\s┃│|]*$")
_TABLE_BORDER = re.compile(r"^[\s─━┏┓┗┛┡┩└┘┌┐┳┻╇┴┬┼┃│|]*$")
_TABLE_ROW = re.compile(rf"^[\s┃│|]*(?P<name>{_TOKEN})[\s┃│|]+{_VALUE}[\s┃│|]*$")


def _read_results_table(line: str, state: LogState) -> dict | None:
    if _TABLE_HEADER.match(line):
        state.in_results_table = True
        return None
    if not state.in_results_table:
        return None
    row = _TABLE_ROW.match(line)
    if row:
        return {row.group("name"): _number(row.group("value"))}
    if not _TABLE_BORDER.match(line):
        state.in_results_table = False
    return None


TQDM_BAR = "tqdm bar with values"

PATTERNS: tuple[LinePattern, ...] = (
    LinePattern("name=value pairs", "step=10 loss=0.52 acc=0.91", _read_equals_pairs),
    LinePattern("Keras progress", "Epoch 3/10 then 50/50 [====] - 1s 2ms/step - loss: 0.12 - acc: 0.95",
                _read_keras),
    LinePattern(TQDM_BAR, "Epoch 1: 100%|████| 50/50 [00:01<00:00, 40.1it/s, loss=0.123]",
                _read_tqdm),
    LinePattern("printed dict (Hugging Face Trainer)", "{'loss': 0.6931, 'learning_rate': 5e-05, 'epoch': 0.5}",
                _read_printed_dict),
    LinePattern("results table (Lightning test/validate)", "│  test_loss  │  0.587  │", _read_results_table),
    LinePattern("PyTorch examples' train line", "Train Epoch: 1 [640/60000 (1%)]\tLoss: 0.294", _read_samples_line),
    LinePattern("PyTorch examples' test line", "Test set: Average loss: 0.0520, Accuracy: 9826/10000 (98%)",
                _read_set_line),
    LinePattern("name: value pairs", "Epoch [1/5], Step [100/600], Loss: 0.2235 | acc: 0.91", _read_colon_pairs),
)


# --- the project's own patterns -----------------------------------------------------------------

def user_patterns(settings: dict, project_file: Path | str) -> list[LinePattern]:
    """The patterns of ``[training] metric_patterns`` (``settings`` is the [training] table);
    TrainingError naming ``project_file`` and the pattern when one is not usable."""
    raw = settings.get("metric_patterns", [])
    example = "metric_patterns = ['val acc (?P<val_acc>[0-9.]+)']"
    if not isinstance(raw, list) or not all(isinstance(text, str) for text in raw):
        raise TrainingError(f"[training] metric_patterns in {project_file} must be a list of regular "
                            f"expressions, e.g. {example}.")
    patterns = []
    for text in raw:
        try:
            compiled = re.compile(text)
        except re.error as exc:
            raise TrainingError(f"[training] metric_patterns in {project_file}: {text!r} is not a valid regular "
                                f"expression ({exc}). Fix it or remove it.") from None
        if not set(compiled.groupindex) - POSITION_NAMES:
            raise TrainingError(f"[training] metric_patterns in {project_file}: {text!r} names no metric. Name each "
                                f"value with a group, e.g. {example}.")
        patterns.append(LinePattern(f"metric_patterns: {text}", text, _user_reader(compiled)))
    return patterns


def project_patterns(project_dir: Path | str) -> list[LinePattern]:
    """The patterns of the project's workbench.toml ([] without one); TrainingError when the
    file or a pattern is not usable."""
    file = Path(project_dir) / PROJECT_FILE
    try:
        settings = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TrainingError(f"{file} could not be read for its metric patterns: {exc}") from None
    training = settings.get("training", {})
    return user_patterns(training if isinstance(training, dict) else {}, file)


def _user_reader(compiled: re.Pattern) -> Callable[[str, LogState], dict | None]:
    def read(line: str, state: LogState) -> dict | None:
        found = compiled.search(line)
        if found is None:
            return None
        record: dict = {}
        for name, text in found.groupdict().items():
            if text is None:
                continue
            try:
                value = float(text)
            except ValueError:
                return None
            if name in ("step", "epoch"):
                if not value.is_integer():
                    return None
                value = int(value)
            record[name] = value
        return record

    return read


# --- reading output as it comes -----------------------------------------------------------------

def read_line(line: str, patterns=PATTERNS, state: LogState | None = None) -> dict | None:
    """The values of one printed line (one state of it: no ``\\r``) by the first pattern that
    reads it, non-finite values left out; None when no pattern does or nothing is left."""
    state = state if state is not None else LogState()
    line = line.strip()
    if not line:
        return None
    for pattern in patterns:
        record = pattern.read(line, state)
        if record is None:
            continue
        state.pattern = pattern.name
        record = {name: value for name, value in record.items()
                  if not (isinstance(value, float) and not math.isfinite(value))}
        if any(name not in POSITION_NAMES for name in record):
            return record
        return None
    return None


class PrintedOutput:
    """Turns what a trainer prints, as it arrives, into the values of metrics.jsonl records:
    each with its step (then its epoch) first; :class:`PrintedMetrics` stamps them.

    Each stream (stdout, stderr) keeps its own unfinished line; the step and what earlier lines
    said are shared, as the script's progress is one. ``previous_step`` is the last step already
    in metrics.jsonl (a resumed run)."""

    def __init__(self, patterns=(), previous_step=None):
        self.patterns = (*patterns, *PATTERNS)
        self.state = LogState()
        self.previous_step = previous_step
        self._numbering = True  # until a line gives its step, lines are numbered 1, 2, 3
        self._pending: dict[str, str] = {}
        self._last: dict = {}         # the values last recorded, for one step
        self._bar_values: dict = {}   # the values bars showed last
        # A bar moved to a new step still showing the last step's values (Lightning redraws
        # the count before the postfix): held until the redraw, or the next step, gives them.
        self._held_bar: dict | None = None
        self._bar_step_values: tuple = (None, {})  # the last bar step recorded and its values

    def feed(self, text: str, stream: str = "stdout", final: bool = False) -> list[dict]:
        """The records of the states completed by ``text`` (all of them when ``final``)."""
        data = self._pending.get(stream, "") + text
        lines = data.split("\n")
        pending = "" if final else lines.pop()
        records = []
        for line in lines:
            records += self._states(line.split("\r"))
        # A bar redraws one line: the states before its last "\r" are complete already.
        if "\r" in pending:
            done, pending = pending.rsplit("\r", 1)
            records += self._states(done.split("\r"))
            pending = "\r" + pending
        self._pending[stream] = pending
        if final:
            records += self._release_held_bar()
        return records

    def _states(self, states: list[str]) -> list[dict]:
        read = []
        for text in states:
            text = _ANSI.sub("", text.replace("\b", "")).strip()
            if text:
                values = read_line(text, self.patterns, self.state)
                if values is not None:
                    read.append((values, self.state.pattern == TQDM_BAR))
        records = []
        for index, (values, from_bar) in enumerate(read):
            later = read[index + 1][0] if index + 1 < len(read) else None
            if later is not None and "step" in values and later.get("step") == values["step"]:
                continue  # the bar redrew this step: its last state counts
            if self._held_bar is not None and (not from_bar or self._held_bar["step"] != values.get("step")):
                records += self._release_held_bar()
            if from_bar and "step" in values:
                shown = {name: value for name, value in values.items() if name not in POSITION_NAMES}
                last_step, last_shown = self._bar_step_values
                if values["step"] != last_step and shown == last_shown:
                    self._held_bar = values
                    continue
                self._held_bar = None
                self._bar_step_values = (values["step"], shown)
            record = self._record(values, from_bar)
            if record is not None:
                records.append(record)
        return records

    def _release_held_bar(self) -> list[dict]:
        """The record of the held bar state: its values did not change after all."""
        values, self._held_bar = self._held_bar, None
        if values is None:
            return []
        self._bar_step_values = (values["step"], {k: v for k, v in values.items() if k not in POSITION_NAMES})
        record = self._record(values, True)
        return [record] if record is not None else []

    def _record(self, values: dict, from_bar: bool) -> dict | None:
        if from_bar:
            # A bar keeps showing an evaluation's value until the next one: only a new one counts.
            shown, values = values, {name: value for name, value in values.items()
                                     if not (_EVALUATION.match(name) and self._bar_values.get(name) == value)}
            self._bar_values.update(shown)
        if "step" in values and self._last.get("step") == values["step"]:
            values = {name: value for name, value in values.items()
                      if name in POSITION_NAMES or self._last.get(name) != value}
        if not any(name not in POSITION_NAMES for name in values):
            return None
        if "step" in values:
            self._numbering = False
        else:
            evaluation = all(_EVALUATION.match(name) for name in values if name not in POSITION_NAMES)
            if self.previous_step is None or (self._numbering and not evaluation):
                step = (self.previous_step or 0) + 1
            else:
                step = self.previous_step  # it belongs to the step of the line before
            values = {"step": step, **values}
        self.previous_step = values["step"]
        record = {name: values.pop(name) for name in ("step", "epoch") if name in values}
        record.update(values)
        same_step = self._last.get("step") == record.get("step")
        self._last = {**(self._last if same_step else {}), **record}
        return record


def patterns_of_run(project_dir: Path | str | None) -> list[LinePattern]:
    """The project's own patterns for a run's supervisor: a file that changed since the run was
    checked and no longer reads is reported (in the supervisor's log) and the table used alone."""
    if not project_dir:
        return []
    try:
        return project_patterns(project_dir)
    except TrainingError as exc:
        import sys

        print(f"workbench: {exc} The built-in patterns are used.", file=sys.stderr)
        return []


def patterns_of_run_folder(folder) -> list[LinePattern]:
    """:func:`patterns_of_run` for the project of the run folder ``folder`` (a RunFolder); []
    when its run.json does not say (a folder being set up)."""
    try:
        project_dir = folder.read_info().project_dir
    except TrainingError:
        return []
    return patterns_of_run(project_dir)


class GrowingLog:
    """The text a log file gained since the last read, from ``offset`` on; a character cut
    between two reads waits for the next."""

    def __init__(self, path: Path | str, offset: int):
        import codecs
        import os

        self._fd: int | None = os.open(path, os.O_RDONLY)
        os.lseek(self._fd, offset, os.SEEK_SET)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read(self, final: bool = False) -> str:
        import os

        chunks = []
        while self._fd is not None:
            chunk = os.read(self._fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return self._decoder.decode(b"".join(chunks), final)

    def close(self) -> None:
        import os

        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
