"""What a run will execute, worked out and checked before anything is created on disk.

The script and the default hyper-parameter file come from ``[training]`` in workbench.toml::

    [training]
    script = "train.py"
    hparams = "hparams/digits.hparams"
    python = ".venv/bin/python"      # optional: the project's own interpreter
    args = ["--config", "{hparams}", "--out", "{run_dir}"]   # optional: the script's arguments

The script gets ``--hparams FILE`` (the hyper-parameters as used, in the run folder) when the
project has a hyper-parameter file or the run has overrides, and no arguments otherwise. A
script that takes its arguments another way names them in ``args``: ``{hparams}`` becomes the
path of that file and ``{run_dir}`` the run folder's, both relative to the project folder (where
the script runs).

The hyper-parameters are checked with the project's schema (workbench_trainkit.hparams), so a
typo is refused with its file, line and key before a run folder exists.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.training.errors import TrainingError
from workbench.training.log_patterns import user_patterns
from workbench.training.script_args import is_adopted, script_arguments

DEFAULT_SCRIPT = "train.py"
HPARAMS_SUFFIX = ".hparams"
PROJECT_FILE = "workbench.toml"


@dataclass
class RunSpec:
    project_dir: Path
    script: str                      # as given in workbench.toml (project-relative)
    python: str
    hparams_file: str                # the source, project-relative or absolute; "" for none
    overrides: list[str]
    nproc: int
    hparams: dict                    # every resolved value
    hparams_text: str                # the file the trainer reads (file values plus overrides)
    hparams_name: str                # its name in the run folder
    explicit: list[str] = field(default_factory=list)
    pass_hparams: bool = True        # whether the script gets --hparams FILE
    args: list[str] | None = None    # [training] args, when the project names them
    warnings: list[str] = field(default_factory=list)   # "file:line: message", file project-relative
    hparams_path: Path | None = None  # the source file itself (absolute); None for none

    def command(self, run_dir: str) -> list[str]:
        """The trainer's argv for the run folder ``run_dir`` (relative to the project)."""
        hparams_path = str(Path(run_dir) / self.hparams_name)
        return trainer_command(self.python, self.script, hparams_path, self.nproc, self.pass_hparams, self.args,
                               run_dir)


def prepare_run(project_dir: Path, hparams_file: Path | str | None = None, overrides=(),
                nproc: int = 1, check_data: bool = True) -> RunSpec:
    """The run that ``start`` would launch; TrainingError when it cannot (no script, a bad
    hyper-parameter file or override, a bad process count). ``check_data=False`` leaves the data
    paths unchecked (a run elsewhere checks them with ``check_data_paths`` against what will be
    there)."""
    if not isinstance(nproc, int) or nproc < 1:
        raise TrainingError(f"The number of processes must be 1 or more, not {nproc!r}.")
    project_dir = Path(project_dir)
    settings = training_settings(project_dir)
    user_patterns(settings, project_dir / PROJECT_FILE)  # a bad one is refused now, not mid-run
    script = _script(settings, project_dir)
    if is_adopted(settings):
        return _adopted_run(project_dir, settings, script, hparams_file, list(overrides), nproc)
    args = _args(settings, project_dir)
    source = _hparams_source(project_dir, hparams_file, _setting(settings, "hparams", project_dir))
    overrides = list(overrides)
    _check_overrides_reach_the_script(overrides, args, project_dir)
    hparams = hparams_module()
    try:
        schema = hparams.project_schema(project_dir)
        values = hparams.load_hparams(source, overrides, schema=schema)
    except hparams.HParamsError as exc:
        raise TrainingError(diagnostics_message(exc.diagnostics, project_dir), exc.diagnostics) from None
    explicit = [name for name in values if name in values.explicit]
    text = hparams.format_hparams({name: values[name] for name in explicit}, schema)
    spec = RunSpec(
        project_dir=project_dir,
        script=script,
        python=_python(settings, project_dir),
        hparams_file=_relative(source, project_dir) if source else "",
        overrides=overrides,
        nproc=nproc,
        hparams=dict(values),
        hparams_text=text,
        hparams_name=(Path(source).stem if source else "run") + HPARAMS_SUFFIX,
        explicit=explicit,
        pass_hparams=bool(source or overrides),
        args=args,
        warnings=[format_diagnostic(d, project_dir) for d in _file_warnings(source, schema)],
        hparams_path=Path(source) if source else None,
    )
    if check_data:
        check_data_paths(spec)
    return spec


def _adopted_run(project_dir: Path, settings: dict, script: str, hparams_file, overrides: list[str], nproc: int,
                 earlier: dict | None = None) -> RunSpec:
    """The run of a script that takes its own arguments: the overrides become them (see
    script_args), and the run records every value it runs with."""
    if hparams_file:
        raise TrainingError(f"Not started: {script} takes its hyper-parameters as {settings['parameters']} "
                            "arguments, not from a .hparams file; give values with --set key=value.")
    arguments = script_arguments(project_dir, settings, overrides, earlier)
    extra = _args(settings, project_dir) or []
    text = "".join(f"{name}={json.dumps(arguments.values[name])}\n" for name in arguments.explicit)
    return RunSpec(project_dir=project_dir, script=script, python=_python(settings, project_dir), hparams_file="",
                   overrides=overrides, nproc=nproc, hparams=dict(arguments.values), hparams_text=text,
                   hparams_name="arguments" + HPARAMS_SUFFIX, explicit=arguments.explicit, pass_hparams=False,
                   args=[*extra, *arguments.argv])


def check_data_paths(spec: RunSpec, elsewhere: Callable[[str], bool] | None = None) -> None:
    """TrainingError (with ``diagnostics``) when the data paths of ``spec``'s hyper-parameters
    are not there. The trainer runs in the project folder, so relative paths are checked from
    there. ``elsewhere(dataset_dir)`` says whether the data is where the run trains though not
    here (on a cluster): then nothing is refused."""
    problems = hparams_module().check_data_paths(spec.hparams, spec.project_dir, str(spec.hparams_path or ""))
    if problems and not (elsewhere is not None and elsewhere(str(spec.hparams.get("dataset_dir") or ""))):
        raise TrainingError(diagnostics_message(problems, spec.project_dir), problems)


def more_epochs(info) -> int:
    """A number of epochs to suggest for training the completed run ``info`` further."""
    epochs = info.hparams.get("num_epochs")
    return 2 * epochs if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0 else 20


def prepare_resume(project_dir: Path, script: str, nproc: int, base_file: Path, hparams_file: str,
                   earlier_values: dict, earlier_overrides=(), overrides=()) -> RunSpec:
    """A new run that goes on from another run's checkpoint: its ``script`` and ``nproc``, the
    hyper-parameters it used (the file ``base_file``, resolved as ``earlier_values``) with
    ``overrides`` on top, and the project's current Python and arguments. TrainingError when an
    override does not check out."""
    project_dir = Path(project_dir)
    settings = training_settings(project_dir)
    if is_adopted(settings):
        # The script is started again with the values the run had, and the changes on top.
        return _adopted_run(project_dir, settings, script, "", [*earlier_overrides, *overrides], nproc,
                            earlier=earlier_values)
    args = _args(settings, project_dir)
    overrides = list(overrides)
    _check_overrides_reach_the_script(overrides, args, project_dir)
    values, explicit = dict(earlier_values), []
    if overrides:
        hparams = hparams_module()
        try:
            schema = hparams.project_schema(project_dir)
            loaded = hparams.load_hparams(base_file, overrides, schema=schema)
        except hparams.HParamsError as exc:
            raise TrainingError(diagnostics_message(exc.diagnostics, project_dir), exc.diagnostics) from None
        values, explicit = dict(loaded), [name for name in loaded if name in loaded.explicit]
        text = hparams.format_hparams({name: loaded[name] for name in explicit}, schema)
    else:
        text = base_file.read_text(encoding="utf-8")  # as it was, byte for byte
    all_overrides = [*earlier_overrides, *overrides]
    return RunSpec(
        project_dir=project_dir, script=script, python=_python(settings, project_dir), hparams_file=hparams_file,
        overrides=all_overrides, nproc=nproc, hparams=values, hparams_text=text, hparams_name=base_file.name,
        explicit=explicit, pass_hparams=bool(hparams_file or all_overrides), args=args)


def trainer_command(python: str, script: str, hparams_path: str, nproc: int, pass_hparams: bool = True,
                    args: list[str] | None = None, run_dir: str = "") -> list[str]:
    """``python script --hparams FILE`` (``--hparams FILE`` only with ``pass_hparams``), or
    ``python script ARGS`` with ``{hparams}`` and ``{run_dir}`` filled in when the project names
    its ``args``; under torchrun when there is more than one process."""
    if args is not None:
        script_args = [arg.replace("{hparams}", hparams_path).replace("{run_dir}", run_dir) for arg in args]
    else:
        script_args = ["--hparams", hparams_path] if pass_hparams else []
    if nproc > 1:
        return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                script, *script_args]
    return [python, script, *script_args]


def training_settings(project_dir: Path) -> dict:
    """The ``[training]`` table of the project's workbench.toml ({} when it has none)."""
    from workbench.project import load_project

    settings = load_project(project_dir).settings.get("training", {})
    if not isinstance(settings, dict):
        raise TrainingError(f"[training] in {project_dir / PROJECT_FILE} must be a table.")
    return settings


def trainer_environment(run_dir: Path, run_id: str, resume_from: str | None = None) -> dict[str, str]:
    """The variables a trainer gets on top of Workbench's own environment."""
    env = {
        # The training helpers import even in a project interpreter without Workbench installed.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(trainkit_root()), os.environ.get("PYTHONPATH", "")])),
        "PYTHONUNBUFFERED": "1",
        "WORKBENCH_RUN_DIR": str(run_dir),
        "WORKBENCH_RUN_ID": run_id,
    }
    if resume_from:
        env["WORKBENCH_RESUME_FROM"] = str(resume_from)
    return env


def trainkit_root() -> Path:
    """The folder that holds the ``workbench_trainkit`` package (and ``workbench``)."""
    import importlib.util

    found = importlib.util.find_spec("workbench_trainkit")
    if found is not None and found.submodule_search_locations:
        return Path(list(found.submodule_search_locations)[0]).resolve().parent
    return Path(__file__).resolve().parents[2]


def hparams_module():
    """``workbench_trainkit.hparams``, the one parser of hyper-parameter files; TrainingError
    when the training helpers cannot be imported."""
    try:
        from workbench_trainkit import hparams
    except ImportError as exc:
        raise TrainingError(f"The training helpers (workbench_trainkit) cannot be imported: {exc}. "
                            "Reinstall Workbench.") from None
    return hparams


def format_diagnostic(diagnostic, project_dir: Path) -> str:
    """``file:line: message`` with the file named relative to the project."""
    import dataclasses

    if Path(diagnostic.path).is_absolute():
        diagnostic = dataclasses.replace(diagnostic, path=_relative(Path(diagnostic.path), project_dir))
    return str(diagnostic)


def _file_warnings(source: Path | None, schema) -> list:
    """The warnings of the hyper-parameter file (a key set twice); load_hparams keeps only errors."""
    if source is None:
        return []
    try:
        text = Path(source).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return []
    _, diagnostics = hparams_module().check_hparams_text(text, schema, str(source))
    return [d for d in diagnostics if d.severity == "warning"]


def diagnostics_message(diagnostics: list, project_dir: Path) -> str:
    """The first error, its file named relative to the project, and how many more there are."""
    errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"] or diagnostics
    if errors:
        text = format_diagnostic(errors[0], project_dir)
    else:
        text = "the hyper-parameters are not valid"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return f"Not started: {text}"


def _script(settings: dict, project_dir: Path) -> str:
    script = _setting(settings, "script", project_dir)
    if script:
        if not (project_dir / script).is_file():
            raise TrainingError(f"The training script {script} named by [training] script in "
                                f"{project_dir / PROJECT_FILE} does not exist. Create it, or name the script to run.")
        return script
    if (project_dir / DEFAULT_SCRIPT).is_file():
        return DEFAULT_SCRIPT
    if not (project_dir / PROJECT_FILE).is_file():
        raise TrainingError(not_a_project_message(project_dir))
    raise TrainingError(f"{project_dir / PROJECT_FILE} names no training script (there is no [training] script), "
                        f"and there is no {DEFAULT_SCRIPT}. Add a [training] table with script = \"train.py\" "
                        "(the script to run) to workbench.toml.")


def not_a_project_message(folder: Path) -> str:
    return (f"{folder} is not a Workbench project (there is no {PROJECT_FILE} here or above). Set up your own "
            "training code here with `workbench init`, create a project with `workbench new FOLDER`, or give the "
            "project folder (`workbench train PROJECT`, `workbench runs list --project PROJECT`).")


def _args(settings: dict, project_dir: Path) -> list[str] | None:
    args = settings.get("args")
    if args is None:
        return None
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise TrainingError(f"[training] args in {project_dir / PROJECT_FILE} must be a list of strings, "
                            'e.g. args = ["--config", "{hparams}", "--out", "{run_dir}"].')
    return list(args)


def _check_overrides_reach_the_script(overrides: list[str], args: list[str] | None, project_dir: Path) -> None:
    if overrides and args is not None and not any("{hparams}" in arg for arg in args):
        raise TrainingError(f"Not started: the overrides ({' '.join(overrides)}) cannot reach the script, since "
                            f"[training] args in {project_dir / PROJECT_FILE} has no {{hparams}}. Add it where "
                            "the script takes its hyper-parameter file, or change the file instead.")


def _setting(settings: dict, key: str, project_dir: Path) -> str:
    value = settings.get(key, "")
    if not isinstance(value, str):
        raise TrainingError(f"[training] {key} in {project_dir / 'workbench.toml'} must be a string "
                            "(a path relative to the project folder).")
    return value.strip()


def _hparams_source(project_dir: Path, given: Path | str | None, default: str) -> Path | None:
    if given is not None and str(given) != "":
        path = Path(given).expanduser()
        path = path if path.is_absolute() else project_dir / path
        if not path.is_file():
            raise TrainingError(f"Not started: the hyper-parameter file {given} does not exist.")
        return path
    if default:
        path = project_dir / default
        if not path.is_file():
            raise TrainingError(f"Not started: the hyper-parameter file {default} named by [training] hparams "
                                f"in {project_dir / 'workbench.toml'} does not exist.")
        return path
    return None


def _python(settings: dict, project_dir: Path) -> str:
    python = _setting(settings, "python", project_dir)
    if not python:
        return sys.executable
    candidate = Path(python).expanduser()
    if not candidate.is_absolute() and (os.sep in python or (project_dir / candidate).exists()):
        candidate = project_dir / candidate
    if candidate.is_absolute():
        if not os.access(candidate, os.X_OK):
            raise TrainingError(f"The Python of [training] python, {candidate}, does not exist or cannot be run.")
        return str(candidate)
    found = shutil.which(python)
    if found is None:
        raise TrainingError(f"The Python of [training] python, {python}, is not on the PATH.")
    return found


def _relative(path: Path, project_dir: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(project_dir.resolve()))
    except ValueError:
        return str(path)
