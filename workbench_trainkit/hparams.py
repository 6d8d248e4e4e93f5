"""Hyper-parameter files: one ``key=value`` a line, ``#`` comments, values checked by type.

    # learning rate
    learning_rate=0.002
    optimizer=adam          # a comment after whitespace is allowed
    train_files=a.rec, b.rec

Every key must be declared: FastNN's keys (schema.py) plus the project's own, declared in its
``workbench.toml``::

    [training.keys]
    seed = { type = "int", default = 0, min = 0, help = "fixes the split and the weights" }
    backbone = { type = "str", default = "small", choices = ["small", "large"] }

An unknown key, a value of the wrong type or out of range is reported with the file, the line,
the key and the closest known key, so a typo never trains silently with a default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from workbench_trainkit.schema import FASTNN_SCHEMA, KINDS, HParamKey, HParamSchema

PROJECT_FILE = "workbench.toml"
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a hyper-parameter file; columns are 0-based, ``end`` exclusive."""

    path: str
    line: int
    start: int
    end: int
    key: str
    message: str
    suggestion: str | None = None
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        return f"{where}: {self.message}" if where else self.message


class HParamsError(ValueError):
    """A hyper-parameter file (or an override) that cannot be used; lists every problem."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
        text = "; ".join(str(d) for d in errors[:3])
        if len(errors) > 3:
            text += f" (and {len(errors) - 3} more)"
        super().__init__(text)


class HParams(dict):
    """Resolved hyper-parameters: defaults, then the file, then overrides.

    Read them as ``hp["learning_rate"]`` or ``hp.learning_rate``. ``source`` is the file they
    came from and ``explicit`` the keys the file or an override set.
    """

    source: str = ""
    warnings: tuple = ()  # the Diagnostics of severity "warning" of the file and overrides
    explicit: frozenset = frozenset()
    overridden: frozenset = frozenset()  # the keys an override (--set) set last

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no hyper-parameter {name!r}") from None


def check_hparams_text(text: str, schema: HParamSchema, path: str = "") -> tuple[dict, list[Diagnostic]]:
    """The typed values ``text`` sets (lines with problems left out) and every problem found."""
    values: dict = {}
    first_line: dict[str, int] = {}
    diagnostics: list[Diagnostic] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _without_comment(raw)
        if not line.strip():
            continue
        if "=" not in line:
            start = len(line) - len(line.lstrip())
            diagnostics.append(Diagnostic(
                path, number, start, len(line.rstrip()), "",
                f"this line has no '=': write key=value, or start it with # to make it a comment"))
            continue
        key_part, _, value_part = line.partition("=")
        key = key_part.strip()
        key_start = len(key_part) - len(key_part.lstrip())
        value = value_part.strip()
        value_start = len(key_part) + 1 + (len(value_part) - len(value_part.lstrip()))
        if not key:
            diagnostics.append(Diagnostic(path, number, 0, max(1, len(line.rstrip())), "",
                                          "this line has a value but no key before the '='"))
            continue
        problem = _check_one(schema, key, value)
        if problem is not None:
            message, suggestion, on_key = problem
            span = (key_start, key_start + len(key)) if on_key else (
                value_start, value_start + max(1, len(value)))
            diagnostics.append(Diagnostic(path, number, span[0], span[1], key, message, suggestion))
            continue
        if schema[key].no_effect:
            diagnostics.append(_no_effect_warning(path, number, key_start, schema[key]))
        if key in first_line:
            diagnostics.append(Diagnostic(
                path, number, key_start, key_start + len(key), key,
                f"{key} is set again (first on line {first_line[key]}); this later value wins",
                severity="warning"))
        first_line[key] = number
        values[key] = _convert(schema[key], value)
    return values, diagnostics


def _no_effect_warning(path: str, line: int, start: int, spec: HParamKey) -> Diagnostic:
    return Diagnostic(path, line, start, start + len(spec.name), spec.name,
                      f"{spec.name} has no effect here: {spec.no_effect}", severity="warning")


def parse_override(text: str) -> tuple[str, str]:
    """Split a ``key=value`` override; ValueError says how to write one."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"{text!r} is not an override: write key=value, e.g. learning_rate=0.01")
    return key.strip(), value.strip()


def load_hparams(path: str | Path | None = None, overrides: Iterable[str] = (),
                 schema: HParamSchema | None = None,
                 project_dir: str | Path | None = None) -> HParams:
    """Defaults, then the file at ``path``, then ``overrides`` ("key=value" strings).

    Without ``schema`` the project's schema is used: FastNN's keys plus the ``[training.keys]``
    of the ``workbench.toml`` in ``project_dir`` (or the nearest folder above ``path`` that has
    one). Raises HParamsError naming the file, line and key of every problem.
    """
    if schema is None:
        if project_dir is None and path is not None:
            project_dir = find_project_dir(Path(path).resolve().parent)
        schema = project_schema(project_dir)
    values = dict(schema.defaults())
    explicit: set[str] = set()
    overridden: set[str] = set()
    diagnostics: list[Diagnostic] = []
    source = ""
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise HParamsError([Diagnostic(source, 0, 0, 0, "", (
                "this hyper-parameter file does not exist; check the path, or the [training] "
                "hparams setting of workbench.toml"))]) from None
        except UnicodeDecodeError:
            raise HParamsError([Diagnostic(source, 0, 0, 0, "", (
                "this is not a UTF-8 text file; hyper-parameter files are plain text"))]) from None
        except OSError as exc:
            raise HParamsError([Diagnostic(source, 0, 0, 0, "", (
                f"cannot be read ({exc.strerror or exc})"))]) from None
        file_values, diagnostics = check_hparams_text(text, schema, source)
        values.update(file_values)
        explicit.update(file_values)
    for override in overrides:
        try:
            key, raw = parse_override(override)
        except ValueError as exc:
            diagnostics.append(Diagnostic("--set", 0, 0, 0, "", str(exc)))
            continue
        problem = _check_one(schema, key, raw)
        if problem is not None:
            message, suggestion, _ = problem
            diagnostics.append(Diagnostic(f"--set {override}", 0, 0, 0, key, message, suggestion))
            continue
        if schema[key].no_effect:
            diagnostics.append(_no_effect_warning(f"--set {override}", 0, 0, schema[key]))
        values[key] = _convert(schema[key], raw)
        explicit.add(key)
        overridden.add(key)
    if any(d.severity == "error" for d in diagnostics):
        raise HParamsError(diagnostics)
    hparams = HParams(values)
    hparams.source = source
    hparams.warnings = tuple(d for d in diagnostics if d.severity == "warning")
    hparams.explicit = frozenset(explicit)
    hparams.overridden = frozenset(overridden)
    return hparams


def check_data_paths(hparams: dict, base_dir: str | Path, source: str = "") -> list[Diagnostic]:
    """Problems with the data the hyper-parameters point at: a ``dataset_dir`` that is not a
    folder, ``train_files`` that are missing (relative paths are taken from ``base_dir``, the
    folder the script runs in, and ``train_files`` from ``dataset_dir`` when it is set)."""
    base = Path(base_dir)
    problems: list[Diagnostic] = []
    dataset_dir = str(hparams.get("dataset_dir") or "")
    data_root = base
    if dataset_dir:
        data_root = base / Path(dataset_dir).expanduser()
        if not data_root.is_dir():
            what = "is a file, not a folder" if data_root.exists() else "does not exist"
            problems.append(_diagnostic_at(hparams, source, "dataset_dir", (
                f"dataset_dir {dataset_dir} {what} (looked in {data_root}); point it at the "
                "folder that holds the dataset, or copy the data there first")))
            return problems
    missing = [name for name in hparams.get("train_files") or ()
               if not (data_root / Path(str(name)).expanduser()).exists()]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        problems.append(_diagnostic_at(hparams, source, "train_files", (
            f"train_files lists files that do not exist in {data_root}: {shown}")))
    return problems


def _diagnostic_at(hparams: dict, source: str, key: str, message: str) -> Diagnostic:
    """A diagnostic on the override or the line of ``source`` that set ``key``."""
    if key in getattr(hparams, "overridden", ()):
        return Diagnostic(f"--set {key}={format_value(hparams[key])}", 0, 0, 0, key, message)
    line, start, end = 0, 0, 0
    if source:
        try:
            text = Path(source).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            text = ""
        for number, raw in enumerate(text.splitlines(), start=1):
            body = _without_comment(raw)
            name, sep, value = body.partition("=")
            if sep and name.strip() == key:
                line, start, end = number, len(name) + 1, len(body.rstrip())
    return Diagnostic(source or "--set", line, start, max(end, start + 1), key, message)


def find_project_dir(start: str | Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a ``workbench.toml``."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / PROJECT_FILE).is_file():
            return candidate
    return None


def read_project_training_settings(project_dir: str | Path | None) -> dict:
    """The ``[training]`` table of the project's ``workbench.toml`` ({} when there is none)."""
    return _project_table(project_dir, "training", "declare training keys")


def read_project_registry_settings(project_dir: str | Path | None) -> dict:
    """The ``[registry]`` table of the project's ``workbench.toml`` ({} when there is none):
    ``metric`` and ``mode`` choose the best model a run keeps (see best_model.py)."""
    return _project_table(project_dir, "registry", "choose the metric of the best model")


def project_hparams_file(project_dir: str | Path | None) -> Path | None:
    """The hyper-parameter file the project's ``workbench.toml`` names (``[training] hparams``)."""
    if project_dir is None:
        return None
    name = read_project_training_settings(project_dir).get("hparams")
    return Path(project_dir) / name if name else None


def _project_table(project_dir: str | Path | None, table: str, purpose: str) -> dict:
    if project_dir is None:
        return {}
    path = Path(project_dir) / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    import tomllib  # stdlib from Python 3.11

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HParamsError([Diagnostic(str(path), 0, 0, 0, "", (
            f"is not valid TOML ({exc}); fix it to {purpose}"))]) from None
    found = data.get(table, {})
    return found if isinstance(found, dict) else {}


def project_schema(project_dir: str | Path | None) -> HParamSchema:
    """FastNN's keys plus those the project declares under ``[training.keys]``."""
    declared = read_project_training_settings(project_dir).get("keys", {})
    if not declared:
        return FASTNN_SCHEMA
    where = str(Path(project_dir) / PROJECT_FILE)
    if not isinstance(declared, dict):
        raise HParamsError([Diagnostic(where, 0, 0, 0, "", (
            "[training.keys] must be a table of key = { type = ..., default = ... }"))])
    keys, diagnostics = [], []
    for name, spec in declared.items():
        try:
            keys.append(_declared_key(name, spec))
        except ValueError as exc:
            diagnostics.append(Diagnostic(where, 0, 0, 0, name, f"[training.keys] {name}: {exc}"))
    if diagnostics:
        raise HParamsError(diagnostics)
    return FASTNN_SCHEMA.extended(keys)


def format_hparams(values: dict, schema: HParamSchema | None = None) -> str:
    """``values`` as a hyper-parameter file, grouped as the schema groups them."""
    schema = schema or FASTNN_SCHEMA
    lines: list[str] = []
    written: set[str] = set()
    for group, keys in schema.groups().items():
        present = [key.name for key in keys if key.name in values]
        if not present:
            continue
        lines.append(f"# {group}")
        lines.extend(f"{name}={format_value(values[name])}" for name in present)
        lines.append("")
        written.update(present)
    rest = [name for name in values if name not in written]
    if rest:
        lines.append("# other")
        lines.extend(f"{name}={format_value(values[name])}" for name in rest)
        lines.append("")
    return "\n".join(lines)


def format_value(value) -> str:
    """One value as it is written in a file: true/false, numbers, comma-joined lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(item) for item in value)
    return str(value)


def _without_comment(line: str) -> str:
    """The line without a ``#`` comment (a whole-line one, or one after whitespace)."""
    if line.lstrip().startswith("#"):
        return ""
    for index, char in enumerate(line):
        if char == "#" and index > 0 and line[index - 1] in " \t":
            return line[:index]
    return line


def _check_one(schema: HParamSchema, key: str, raw: str) -> tuple[str, str | None, bool] | None:
    """What is wrong with ``key=raw`` as (message, suggestion, on_key), or None."""
    if key not in schema:
        suggestion = schema.closest(key)
        hint = (f"did you mean {suggestion}?" if suggestion else
                "declare it under [training.keys] in workbench.toml to add your own key")
        return f"unknown hyper-parameter {key}: {hint}", suggestion, True
    spec = schema[key]
    try:
        _convert(spec, raw)
    except ValueError as exc:
        suggestion = None
        if spec.choices and spec.kind == "str":
            import difflib

            close = difflib.get_close_matches(raw.strip().lower(),
                                              [str(c) for c in spec.choices], n=1)
            suggestion = close[0] if close else None
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        return f"{key} must be {spec.describe()}, not {raw!r}{hint}", suggestion, False
    return None


def _convert(spec: HParamKey, raw: str):
    """``raw`` as a value of ``spec``'s type; ValueError when it is not one."""
    if spec.kind == "list":
        items = [item.strip() for item in raw.split(",") if item.strip()]
        return [_convert_scalar(spec, spec.item_kind, item) for item in items]
    return _convert_scalar(spec, spec.kind, raw)


def _convert_scalar(spec: HParamKey, kind: str, raw: str):
    text = raw.strip()
    if kind == "str":
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        value = text
    elif kind == "bool":
        word = text.lower()
        if word in TRUE_WORDS:
            value = True
        elif word in FALSE_WORDS:
            value = False
        else:
            raise ValueError("not a bool")
    elif kind == "int":
        value = int(text.replace("_", ""), 10)
    else:
        value = float(text)
        if math.isnan(value):
            raise ValueError("nan")
    if spec.choices and value not in spec.choices:
        raise ValueError("not a choice")
    if kind in ("int", "float"):
        if spec.minimum is not None and value < spec.minimum:
            raise ValueError("too small")
        if spec.maximum is not None and value > spec.maximum:
            raise ValueError("too large")
    return value


def _declared_key(name: str, spec) -> HParamKey:
    """A project's ``[training.keys]`` entry as an HParamKey; ValueError says what is wrong."""
    if not isinstance(spec, dict):
        raise ValueError('write it as { type = "int", default = 0 }')
    unknown = set(spec) - {"type", "default", "help", "choices", "min", "max", "item_type",
                           "group"}
    if unknown:
        raise ValueError(f"unknown field {sorted(unknown)[0]!r}; use type, default, help, "
                         "choices, min, max, item_type or group")
    kind = spec.get("type")
    if kind not in KINDS:
        raise ValueError(f"type must be one of {', '.join(KINDS)}")
    zero = {"bool": False, "int": 0, "float": 0.0, "str": "", "list": ()}[kind]
    choices = spec.get("choices")
    key = HParamKey(
        name=name, kind=kind, default=spec.get("default", zero),
        group=str(spec.get("group", "project")), help=str(spec.get("help", "")),
        choices=tuple(choices) if choices else None,
        minimum=spec.get("min"), maximum=spec.get("max"),
        item_kind=spec.get("item_type", "str"))
    default = key.default
    if kind == "float" and isinstance(default, int) and not isinstance(default, bool):
        key = HParamKey(**{**key.__dict__, "default": float(default)})
    try:
        if key.default != () and not (kind == "str" and key.default == "" and not choices):
            _convert(key, format_value(key.default))
    except ValueError:
        raise ValueError(f"its default {key.default!r} is not {key.describe()}") from None
    return key


__all__ = [
    "Diagnostic", "HParamKey", "HParamSchema", "HParams", "HParamsError", "FASTNN_SCHEMA",
    "check_hparams_text", "check_data_paths", "parse_override", "load_hparams", "find_project_dir",
    "read_project_training_settings", "read_project_registry_settings", "project_hparams_file",
    "project_schema", "format_hparams", "format_value",
]
