"""The hyper-parameters of a project's training script, as its ``[training]`` table says the
script takes them (``parameters`` = "argparse", "hydra" or "hparams").

Training calls :func:`script_parameters` when the Train dialog opens and when a run starts;
``workbench init`` and the Set Up Training dialog call :func:`read_parameters` to show what
they found. Scripts are read, not run, except an argparse script whose code does not say its
flags for certain: that one is asked ``--help`` in the project's interpreter, with a time-out,
and the answer is kept for as long as the script and the interpreter stay the same.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from workbench.adopt.argparse_help import HELP_TIMEOUT_S, parse_help, run_help
from workbench.adopt.argparse_static import read_argparse
from workbench.adopt.errors import AdoptError
from workbench.adopt.parameter import ScriptParameter

PARAMETER_STYLES = ("argparse", "hydra", "hparams")
DEFAULT_SCRIPT = "train.py"


@dataclass
class ParameterReading:
    """What was found: the parameters, how they were read ("code", "--help", "config",
    "hparams file"), and a problem that kept them from being known (then ``parameters`` is
    empty and runs take their values only from ``--set``)."""

    parameters: list[ScriptParameter] = field(default_factory=list)
    source: str = ""
    problem: str = ""

    @property
    def required(self) -> list[ScriptParameter]:
        return [p for p in self.parameters if p.required]


_help_answers: dict[tuple, list[ScriptParameter]] = {}
_help_lock = threading.Lock()


def script_parameters(project_dir: Path, settings: dict) -> list[ScriptParameter]:
    """The script's parameters for the project's ``[training]`` table ``settings``; AdoptError
    with a message to show when they cannot be known."""
    reading = read_parameters(project_dir, settings)
    if reading.problem:
        raise AdoptError(reading.problem)
    return reading.parameters


def read_parameters(project_dir: Path, settings: dict, help_timeout_s: float = HELP_TIMEOUT_S) -> ParameterReading:
    """Like :func:`script_parameters`, but a script that cannot be read gives a reading with
    its problem instead of an error."""
    project_dir = Path(project_dir)
    style = settings.get("parameters") or "hparams"
    if style not in PARAMETER_STYLES:
        raise AdoptError(f"[training] parameters in {project_dir / 'workbench.toml'} is {style!r}; it must be one "
                         f"of {', '.join(PARAMETER_STYLES)}.")
    script = str(settings.get("script") or DEFAULT_SCRIPT)
    if style == "hydra":
        from workbench.adopt.hydra_config import read_hydra_config

        config = settings.get("config")
        if not config:
            return ParameterReading([], "config", "[training] config is not set: name the Hydra app's primary "
                                                  "config (e.g. conf/config.yaml) in workbench.toml.")
        return ParameterReading(read_hydra_config(project_dir / str(config)), "config")
    if style == "hparams":
        return _hparams_reading(project_dir, settings)
    path = project_dir / script
    if not path.is_file():
        raise AdoptError(f"The training script {script} does not exist in {project_dir}. Set [training] script "
                         "in workbench.toml to the script that trains.")
    found = read_argparse(path)
    if found is not None:
        return ParameterReading(found, "code")
    python = project_python(project_dir, settings)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, python)
    with _help_lock:
        known = _help_answers.get(key)
    if known is not None:
        return ParameterReading(list(known), "--help")
    try:
        text = run_help(python, script, project_dir, help_timeout_s)
    except AdoptError as exc:
        return ParameterReading([], "--help", str(exc))
    parameters = parse_help(text)
    with _help_lock:
        _help_answers[key] = parameters
    return ParameterReading(list(parameters), "--help")


def project_python(project_dir: Path, settings: dict) -> str:
    """The interpreter that runs the project: ``[training] python``, else the project's own
    ``.venv`` / ``venv``, else Workbench's."""
    project_dir = Path(project_dir)
    python = settings.get("python")
    if python:
        candidate = Path(str(python)).expanduser()
        if not candidate.is_absolute() and (os.sep in str(python) or (project_dir / candidate).exists()):
            candidate = project_dir / candidate
        if candidate.is_absolute():
            return str(candidate)
        return shutil.which(str(python)) or str(python)
    own = own_interpreter(project_dir)
    return str(project_dir / own) if own else sys.executable


def own_interpreter(project_dir: Path) -> str:
    """The project-relative path of a virtual environment's Python in the folder, or ""."""
    for folder in (".venv", "venv"):
        for name in ("bin/python", "Scripts/python.exe"):
            if (Path(project_dir) / folder / name).is_file():
                return f"{folder}/{name}"
    return ""


def _hparams_reading(project_dir: Path, settings: dict) -> ParameterReading:
    """The keys of the project's default ``.hparams`` file (and those it declares), with the
    file's values: what a run of a template project starts from."""
    try:
        from workbench_trainkit.hparams import HParamsError, load_hparams, project_schema
    except ImportError as exc:
        return ParameterReading([], "hparams file", f"The training helpers (workbench_trainkit) cannot be imported: "
                                                    f"{exc}. Reinstall Workbench.")
    try:
        schema = project_schema(project_dir)
        source = settings.get("hparams")
        values = load_hparams(project_dir / str(source) if source else None, project_dir=project_dir, schema=schema)
    except HParamsError as exc:
        return ParameterReading([], "hparams file", str(exc))
    declared = set((settings.get("keys") or {}) if isinstance(settings.get("keys"), dict) else {})
    parameters = []
    for name in sorted(set(values.explicit) | declared):
        spec = schema[name]
        parameters.append(ScriptParameter(name=name, type=spec.kind if spec.kind in ("bool", "int", "float", "str")
                                          else "list" if spec.kind == "list" else "str",
                                          default=values.get(name), help=spec.help,
                                          choices=tuple(spec.choices) if spec.choices else None))
    return ParameterReading(parameters, "hparams file")
