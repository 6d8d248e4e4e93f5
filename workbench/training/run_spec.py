"""What a run will execute, worked out and checked before anything is created on disk.

The script and the default hyper-parameter file come from ``[training]`` in workbench.toml::

    [training]
    script = "train.py"
    hparams = "hparams/digits.hparams"
    python = ".venv/bin/python"      # optional: the project's own interpreter

The hyper-parameters are checked with the project's schema (workbench_trainkit.hparams), so a
typo is refused with its file, line and key before a run folder exists.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from workbench.training.errors import TrainingError

DEFAULT_SCRIPT = "train.py"
HPARAMS_SUFFIX = ".hparams"


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


def prepare_run(project_dir: Path, hparams_file: Path | str | None = None, overrides=(),
                nproc: int = 1) -> RunSpec:
    """The run that ``start`` would launch; TrainingError when it cannot (no script, a bad
    hyper-parameter file or override, a bad process count)."""
    from workbench.project import load_project

    if not isinstance(nproc, int) or nproc < 1:
        raise TrainingError(f"The number of processes must be 1 or more, not {nproc!r}.")
    project_dir = Path(project_dir)
    settings = load_project(project_dir).settings.get("training", {})
    if not isinstance(settings, dict):
        raise TrainingError(f"[training] in {project_dir / 'workbench.toml'} must be a table.")
    script = _setting(settings, "script", project_dir) or DEFAULT_SCRIPT
    if not (project_dir / script).is_file():
        raise TrainingError(f"The training script {script} does not exist in {project_dir}. Create it, or name "
                            "the script to run as [training] script in workbench.toml.")
    source = _hparams_source(project_dir, hparams_file, _setting(settings, "hparams", project_dir))
    hparams_module = _hparams_module()
    try:
        schema = hparams_module.project_schema(project_dir)
        values = hparams_module.load_hparams(source, list(overrides), schema=schema)
    except hparams_module.HParamsError as exc:
        raise TrainingError(_diagnostics_message(exc.diagnostics, project_dir), exc.diagnostics) from None
    # The trainer runs in the project folder, so relative data paths are checked from there.
    data_problems = hparams_module.check_data_paths(values, project_dir, str(source or ""))
    if data_problems:
        raise TrainingError(_diagnostics_message(data_problems, project_dir), data_problems)
    explicit = [name for name in values if name in values.explicit]
    text = hparams_module.format_hparams({name: values[name] for name in explicit}, schema)
    return RunSpec(
        project_dir=project_dir,
        script=script,
        python=_python(settings, project_dir),
        hparams_file=_relative(source, project_dir) if source else "",
        overrides=list(overrides),
        nproc=nproc,
        hparams=dict(values),
        hparams_text=text,
        hparams_name=(Path(source).stem if source else "run") + HPARAMS_SUFFIX,
        explicit=explicit,
    )


def trainer_command(python: str, script: str, hparams_path: str, nproc: int) -> list[str]:
    """``python script --hparams FILE``, under torchrun when there is more than one process."""
    if nproc > 1:
        return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                script, "--hparams", hparams_path]
    return [python, script, "--hparams", hparams_path]


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


def _hparams_module():
    try:
        from workbench_trainkit import hparams
    except ImportError as exc:
        raise TrainingError(f"The training helpers (workbench_trainkit) cannot be imported: {exc}. "
                            "Reinstall Workbench.") from None
    return hparams


def _diagnostics_message(diagnostics: list, project_dir: Path) -> str:
    """The first error, its file named relative to the project, and how many more there are."""
    import dataclasses

    errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"] or diagnostics
    if errors:
        first = errors[0]
        if Path(first.path).is_absolute():
            first = dataclasses.replace(first, path=_relative(Path(first.path), project_dir))
        text = str(first)
    else:
        text = "the hyper-parameters are not valid"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return f"Not started: {text}"


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
