"""One declaration per tool: its parameters, from which the CLI flags and the window's form are
both generated, and the values checked the same way for both."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.modeltools.errors import ModelToolError

# What a parameter holds. "path" is a file or folder, "paths" several; "choice" one of
# ``choices``; "strings" a comma-separated list (node names, shapes).
PARAM_TYPES = ("str", "int", "float", "bool", "choice", "path", "paths", "strings")
MODEL_CLASSES = "model_classes"


@dataclass(frozen=True)
class Param:
    """One parameter of a tool.

    ``name`` is a Python identifier (``calibration_method``); the CLI spells it
    ``--calibration-method`` and the form labels it ``label`` (or the name with spaces).
    ``positional`` parameters are the CLI's arguments (the input model); ``required`` ones must
    be given. ``minimum``/``maximum`` bound numbers; on a list of paths, ``minimum`` is how
    many files the form asks for (the tool itself checks the count, which may include
    others). ``group`` sorts the form into sections; ``advanced`` ones start folded. ``suffixes`` are the file kinds a path parameter takes.
    ``short`` is a one-letter CLI alias (``o`` for the output).
    """

    name: str
    type: str
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    required: bool = False
    positional: bool = False
    minimum: float | None = None
    maximum: float | None = None
    label: str = ""
    group: str = ""
    advanced: bool = False
    suffixes: tuple[str, ...] = ()
    short: str = ""
    is_output: bool = False
    one_of: str = ""
    """For a path: the list-of-paths parameter it names one of (the form offers those files)."""
    suggests: str = ""
    """For text: what a tool window offers to pick from, found once it is open (MODEL_CLASSES:
    the classes of the project's code that may build the model's weights)."""

    def __post_init__(self):
        if self.type not in PARAM_TYPES:
            raise ValueError(f"parameter {self.name}: unknown type {self.type!r}")
        if self.type == "choice" and not self.choices:
            raise ValueError(f"parameter {self.name}: a choice needs choices")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    def parse(self, value: Any) -> Any:
        """``value`` (text from a command line or a form, or already typed) as this parameter's
        type; ModelToolError saying what is wrong and what is allowed."""
        if value is None or (isinstance(value, str) and value.strip() == "" and self.type != "str"):
            return None if self.type not in ("paths", "strings") else []
        try:
            typed = self._convert(value)
        except (TypeError, ValueError):
            raise ModelToolError(
                f"{self.flag}: {value!r} is not {_TYPE_WORDS[self.type]}") from None
        self._check_bounds(typed)
        return typed

    def _convert(self, value: Any) -> Any:
        if self.type == "int":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if self.type == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if self.type == "choice":
            text = str(value).strip()
            if text not in self.choices:
                close = difflib.get_close_matches(text, self.choices, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ModelToolError(
                    f"{self.flag}: {text!r} is not one of {', '.join(self.choices)}{hint}")
            return text
        if self.type == "path":
            return Path(str(value)).expanduser()
        if self.type == "paths":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            return [Path(str(v).strip()).expanduser() for v in items if str(v).strip()]
        if self.type == "strings":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            return [str(v).strip() for v in items if str(v).strip()]
        return str(value)

    def _check_bounds(self, value: Any) -> None:
        if self.type not in ("int", "float") or value is None:
            return
        if self.minimum is not None and value < self.minimum:
            raise ModelToolError(f"{self.flag}: {value} is below the minimum {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ModelToolError(f"{self.flag}: {value} is above the maximum {self.maximum:g}")

    def to_json(self) -> dict:
        return {"name": self.name, "type": self.type, "help": self.help,
                "default": _jsonable(self.default), "choices": list(self.choices),
                "required": self.required, "positional": self.positional,
                "minimum": self.minimum, "maximum": self.maximum, "label": self.title,
                "group": self.group, "advanced": self.advanced,
                "suffixes": list(self.suffixes), "is_output": self.is_output}


_TYPE_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false",
               "choice": "one of the choices", "path": "a path", "paths": "a list of paths",
               "strings": "a comma-separated list", "str": "text"}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class ToolSpec:
    """A model tool, declared once.

    ``name`` is the CLI subcommand (``workbench model quantize``) and the tool window's id;
    ``stages`` are the names the progress bar shows, in order; ``applies_to`` are the model file
    suffixes whose right-click menu offers the tool. ``run`` is ``"module:function"``, imported
    only when the tool runs (it may import torch or onnxruntime); the function takes
    ``(values: dict, context: ToolContext)`` and returns a ``ToolReport``.

    ``variant_role`` is ``"module:function"`` for a tool that makes a model from a model: when
    its input is a file of a model version in the project's registry, each file it wrote to the
    registry's models folder is recorded under that version with the role the function gives
    (``(values, report, path) -> str``, e.g. "int8 quantized (dynamic)"). Empty for a tool that
    makes no model.
    """

    name: str
    title: str
    summary: str
    params: tuple[Param, ...]
    run: str
    stages: tuple[str, ...] = ()
    applies_to: tuple[str, ...] = ()
    plugin: str = ""
    variant_role: str = ""

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        raise KeyError(name)

    def resolve(self, given: dict[str, Any]) -> dict[str, Any]:
        """Every parameter typed and checked, defaults filled in. ModelToolError for an unknown
        parameter, a bad value or a missing required one."""
        known = {p.name for p in self.params}
        unknown = sorted(set(given) - known)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ModelToolError(f"{self.name}: unknown parameter {unknown[0]!r}{hint}")
        values = {}
        for param in self.params:
            raw = given.get(param.name)
            value = param.parse(raw) if raw is not None else param.parse(param.default)
            if param.required and value in (None, []):
                how = "as an argument" if param.positional else f"with {param.flag}"
                raise ModelToolError(f"{self.name}: {param.title.lower()} is required; give it {how}")
            values[param.name] = value
        return values

    def load_runner(self) -> Callable:
        import importlib

        module_name, _, function_name = self.run.partition(":")
        return getattr(importlib.import_module(module_name), function_name)

    def load_variant_role(self) -> Callable | None:
        """The function naming the role of a model this tool made (see ``variant_role``)."""
        if not self.variant_role:
            return None
        import importlib

        module_name, _, function_name = self.variant_role.partition(":")
        return getattr(importlib.import_module(module_name), function_name)

    def to_json(self) -> dict:
        return {"name": self.name, "title": self.title, "summary": self.summary,
                "params": [p.to_json() for p in self.params], "stages": list(self.stages),
                "applies_to": list(self.applies_to), "plugin": self.plugin}


_FLAG = re.compile(r"(?<![\w-])(?:--(no-)?([a-z][a-z0-9-]*)|-([a-zA-Z])(?![\w-]))")


def in_window_words(text: str, spec: "ToolSpec") -> str:
    """``text`` (a parameter's help, an error) as a tool window says it: each ``--flag`` or
    ``-x`` of ``spec`` becomes its field's name in quotes ("--input-shape" → "“Input shape”",
    "--no-simplify" → "“Simplify” off", "-o" → "“Output”"); a flag the tool does not have is
    left as it is."""
    titles = {param.flag[2:]: param.title for param in spec.params}
    short_titles = {param.short: param.title for param in spec.params if param.short}

    def field(match: re.Match) -> str:
        negated, name, short = match.group(1), match.group(2), match.group(3)
        title = short_titles.get(short) if short else titles.get(name)
        if title is None:
            return match.group(0)
        return f"“{title}” off" if negated else f"“{title}”"

    return _FLAG.sub(field, text)


def parse_input_shape(items: list[str] | None, flag: str = "--input-shape") -> tuple[int, ...] | None:
    """The shape an ``input_shape`` parameter holds (batch first), or None when it is empty.
    ModelToolError quoting the shape as the user typed it unless it is two or more positive
    whole numbers separated by commas. Cheap: tools call it before importing torch."""
    if not items:
        return None
    typed = ",".join(str(item).strip() for item in items)
    shape = []
    for item in items:
        text = str(item).strip()
        if not (text.isascii() and text.isdigit()) or int(text) < 1:
            other = re.fullmatch(r"\d+\s*([x×*;/ ])\s*\d+(\s*\1\s*\d+)*", text)
            hint = (f" (separate the sizes with commas, not {other.group(1)!r})" if other
                    else "")
            raise ModelToolError(
                f"{flag} {typed}: {text!r} is not a positive whole number{hint}; give the "
                f"input's sizes with the batch first, separated by commas, e.g. {flag} 1,3,224,224")
        shape.append(int(text))
    if len(shape) < 2:
        raise ModelToolError(
            f"{flag} {typed}: give the batch and at least one more size, separated by commas, "
            f"e.g. {flag} 1,3,224,224")
    return tuple(shape)


def shape_text(shape) -> str:
    """A shape as the user types it: ``1,1,8,8``."""
    return ",".join(str(size) for size in shape)


def values_to_json(values: dict[str, Any]) -> dict[str, Any]:
    """Resolved values in a form JSON carries (paths as text)."""
    return {name: _jsonable(value) for name, value in values.items()}


@dataclass
class ToolInvocation:
    """What a tool window or the CLI asks a job to do: which tool, with what values, for which
    project (None outside any project)."""

    tool: str
    values: dict[str, Any] = field(default_factory=dict)
    project: str | None = None

    def to_json(self) -> dict:
        return {"tool": self.tool, "values": values_to_json(self.values), "project": self.project}

    @classmethod
    def from_json(cls, data: dict) -> "ToolInvocation":
        return cls(tool=data["tool"], values=dict(data.get("values") or {}),
                   project=data.get("project"))
