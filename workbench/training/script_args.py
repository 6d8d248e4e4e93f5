"""The arguments of a run of a script of the user's own (an adopted project: ``[training]
parameters`` is "argparse" or "hydra"): the ``key=value`` overrides checked against the script's
parameters, typed, and passed as the script takes them — ``--lr 0.01`` to an argparse script,
``optimizer.lr=0.01`` to a Hydra app. A run records every value it ran with (the script's
defaults and the overrides), so runs compare on them.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from workbench.training.errors import TrainingError

ADOPTED_STYLES = ("argparse", "hydra")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


@dataclass
class ScriptArguments:
    """What a run of an adopted script passes and records."""

    values: dict            # every parameter with a value: the defaults, then the overrides
    explicit: list[str]     # the names set for this run (a resumed run's, then the overrides), in order
    argv: list[str]         # the script's arguments


def is_adopted(settings: dict) -> bool:
    """Whether the ``[training]`` table ``settings`` is that of a script taking its own
    arguments (not a ``.hparams`` file)."""
    return settings.get("parameters") in ADOPTED_STYLES


def script_arguments(project_dir: Path, settings: dict, overrides=(), earlier: dict | None = None
                     ) -> ScriptArguments:
    """The arguments for ``overrides`` (``key=value``; ``earlier``: the values a run being
    resumed ran with, set again); TrainingError naming the key and what to do when an override
    is unknown or of the wrong type, or a required parameter has no value."""
    from workbench.adopt import AdoptError, script_parameters

    try:
        parameters = script_parameters(Path(project_dir), settings)
    except AdoptError as exc:
        raise TrainingError(f"Not started: {exc}") from None
    script = str(settings.get("script") or "the script")
    by_name = {p.name: p for p in parameters}
    by_name.update({p.flag.lstrip("-").replace("-", "_"): p for p in parameters if p.flag and p.flag.startswith("--")})
    values = {p.name: p.default for p in parameters if p.default is not None}
    chosen: dict[str, object] = {}
    for name, value in (earlier or {}).items():
        if name in by_name:
            chosen[by_name[name].name] = value
    for override in overrides:
        key, sep, text = str(override).partition("=")
        key = key.strip()
        if not sep or not key:
            raise TrainingError(f"Not started: {override!r} is not key=value (e.g. lr=0.01).")
        parameter = by_name.get(key) or by_name.get(key.replace("-", "_"))
        if parameter is None:
            raise TrainingError(f"Not started: {script} has no hyper-parameter {key!r}{_did_you_mean(key, by_name)}. "
                                f"Its hyper-parameters: {_names(parameters)}.")
        chosen[parameter.name] = _typed(parameter, text.strip(), script)
    values.update(chosen)
    missing = [p for p in parameters if p.required and p.name not in chosen]
    if missing:
        first = missing[0]
        raise TrainingError(f"Not started: {script} needs {first.flag or first.name}: set it with "
                            f"--set {first.name}=VALUE or in the Train dialog"
                            + (f" (and {len(missing) - 1} more: {_names(missing[1:])})" if len(missing) > 1 else "")
                            + ".")
    style = settings.get("parameters")
    argv = (_argparse_argv(parameters, chosen) if style == "argparse" else
            [f"{name}={_hydra_value(value)}" for name, value in chosen.items()])
    return ScriptArguments(values=values, explicit=list(chosen), argv=argv)


def _typed(parameter, text: str, script: str):
    kind = parameter.type
    try:
        if kind == "bool":
            lowered = text.lower()
            if lowered in _TRUE:
                value = True
            elif lowered in _FALSE:
                value = False
            else:
                raise ValueError
        elif kind == "int":
            value = int(text)
        elif kind == "float":
            value = float(text)
            if not math.isfinite(value):
                raise ValueError
        elif kind == "list":
            value = json.loads(text) if text.startswith("[") else [item.strip() for item in text.split(",") if item.strip()]
            if not isinstance(value, list):
                raise ValueError
            # The items take the type the default's items have (nargs="+" with type=int).
            example = parameter.default[0] if isinstance(parameter.default, (list, tuple)) and parameter.default else None
            if isinstance(example, (int, float)) and not isinstance(example, bool):
                value = [type(example)(item) for item in value]
        else:
            value = text
    except ValueError:
        words = {"bool": "true or false", "int": "a whole number", "float": "a number",
                 "list": "a comma-separated list"}.get(kind, "text")
        raise TrainingError(f"Not started: {parameter.name}={text!r}: {script}'s {parameter.flag or parameter.name} "
                            f"takes {words}.") from None
    if parameter.choices and value not in parameter.choices and str(value) not in [str(c) for c in parameter.choices]:
        raise TrainingError(f"Not started: {parameter.name}={text!r} is not one of "
                            f"{', '.join(str(c) for c in parameter.choices)}.")
    return value


def _argparse_argv(parameters, chosen: dict) -> list[str]:
    """``--flag value`` for each chosen option (a switch alone, when it turns its default
    around), then the positional arguments in their order."""
    argv: list[str] = []
    positional: list[str] = []
    for parameter in parameters:
        if parameter.name not in chosen:
            continue
        value = chosen[parameter.name]
        if parameter.positional:
            positional += [str(v) for v in value] if isinstance(value, list) else [str(value)]
        elif parameter.action in ("store_true", "store_false"):
            if value == (parameter.action == "store_true"):
                argv.append(parameter.flag)
        elif parameter.type == "bool" and parameter.action == "":
            argv += [parameter.flag, "true" if value else "false"]
        elif isinstance(value, list):
            argv += [parameter.flag, *(str(v) for v in value)]
        else:
            argv += [parameter.flag, str(value)]
    return argv + positional


def _hydra_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ",".join(_hydra_value(v) for v in value) + "]"
    text = str(value)
    # Hydra's override grammar reads these characters itself: quoted, the text stays as it is.
    return json.dumps(text) if any(c in text for c in " ,[]{}()='\"\\:") else text


def _did_you_mean(key: str, names) -> str:
    close = difflib.get_close_matches(key, list(names), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _names(parameters) -> str:
    shown = ", ".join(p.name for p in parameters[:12])
    return shown + (f" and {len(parameters) - 12} more" if len(parameters) > 12 else "") if parameters else "none found"
