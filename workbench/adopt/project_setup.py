"""The ``workbench.toml`` that adopts a folder: worked out (:func:`plan_adoption`) so it can be
shown, then written (:func:`write_project_file`). Nothing else in the folder is touched: no
``.gitignore`` edit, no commit, no ``.workbench`` folder."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from workbench.adopt.entry_points import EntryPoint, clear_choice, entry_point_of, find_entry_points
from workbench.adopt.errors import AdoptError
from workbench.adopt.parameters import ParameterReading, own_interpreter, read_parameters
from workbench.platform.atomic_files import write_text_atomically

PROJECT_FILE = "workbench.toml"
LISTED_CHOICES = 12


class SeveralEntryPoints(AdoptError):
    """More than one script is equally likely to be the training entry point; ``candidates``
    lists them, most likely first."""

    def __init__(self, folder: Path, candidates: list[EntryPoint]):
        self.candidates = candidates
        shown = ", ".join(c.script for c in candidates[:LISTED_CHOICES])
        more = f" and {len(candidates) - LISTED_CHOICES} more" if len(candidates) > LISTED_CHOICES else ""
        super().__init__(f"{folder} has {len(candidates)} scripts that could be the training entry point "
                         f"({shown}{more}): choose one with --script PATH.")


@dataclass
class Adoption:
    """What adopting ``folder`` with ``entry`` writes, and what was found on the way."""

    folder: Path
    entry: EntryPoint
    reading: ParameterReading
    python: str = ""                  # project-relative interpreter, "" for Workbench's own
    notes: list[str] = field(default_factory=list)

    @property
    def project_file(self) -> Path:
        return self.folder / PROJECT_FILE

    def required_message(self) -> str:
        """What the user must still give (the required flags), or ""."""
        required = self.reading.required
        if not required:
            return ""
        names = ", ".join(p.flag or p.name for p in required)
        example = required[0]
        value = "PATH" if any(w in example.name.lower() for w in ("dir", "path", "data", "file")) else "VALUE"
        return (f"{self.entry.script} needs {names}: set it with --set {example.name}={value} or in the Train "
                "dialog" if len(required) == 1 else
                f"{self.entry.script} needs {names}: set them with --set {example.name}={value} … or in the Train "
                "dialog")

    def toml_text(self) -> str:
        return project_file_text(self)


def plan_adoption(folder: Path, script: str | Path | None = None,
                  entry_points: list[EntryPoint] | None = None, help_timeout_s: float | None = None) -> Adoption:
    """The adoption of ``folder`` (with ``script`` when given, else the clear entry point).

    AdoptError when the folder already has a workbench.toml or no entry point; SeveralEntryPoints
    when several are equally likely and ``script`` was not given.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise AdoptError(f"{folder} is not a folder. Give the folder of the training code.")
    folder = folder.resolve()
    existing = folder / PROJECT_FILE
    if existing.is_file():
        raise AdoptError(f"{existing} already exists: this folder is set up. Edit its [training] table "
                         "(script, parameters) to change what trains, or delete it and run `workbench init` again.")
    if script is not None:
        entry = entry_point_of(folder, script)
    else:
        found = find_entry_points(folder) if entry_points is None else entry_points
        if not found:
            raise AdoptError(f"No training script found in {folder}: no train*.py, no __main__ with an "
                             "ArgumentParser, no [project.scripts] entry, no @hydra.main. Name it with --script PATH.")
        entry = clear_choice(found)
        if entry is None:
            tied = [c for c in found if c.score == found[0].score]
            raise SeveralEntryPoints(folder, tied + [c for c in found if c.score != found[0].score])
    python = own_interpreter(folder)
    settings = _settings(entry, python)
    options = {} if help_timeout_s is None else {"help_timeout_s": help_timeout_s}
    reading = read_parameters(folder, settings, **options)
    notes = list(entry.problems)
    if entry.parameters == "hydra" and not entry.config:
        notes.append(f"{entry.script} is a Hydra app whose primary config was not found: set [training] config")
    return Adoption(folder, entry, reading, python, notes)


def write_project_file(adoption: Adoption) -> Path:
    """Write the adoption's workbench.toml (atomically); AdoptError when one appeared meanwhile or
    the folder cannot be written."""
    target = adoption.project_file
    if target.exists():
        raise AdoptError(f"{target} already exists: Workbench left it as it is.")
    try:
        write_text_atomically(target, adoption.toml_text())
    except OSError as exc:
        raise AdoptError(f"Cannot write {target}: {exc.strerror or exc}. Check that the folder is writable.") from None
    return target


def _settings(entry: EntryPoint, python: str) -> dict:
    settings = {"script": entry.script, "parameters": entry.parameters}
    if entry.config:
        settings["config"] = entry.config
    if python:
        settings["python"] = python
    return settings


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def project_file_text(adoption: Adoption) -> str:
    """The commented workbench.toml of an adoption."""
    entry, reading = adoption.entry, adoption.reading
    lines = [
        "# Workbench's project file, written by `workbench init`. Your code never reads it; Workbench",
        "# uses it to train the project. Edit it freely; delete it to undo the set-up.",
        "",
        "[project]",
        f"name = {_string(adoption.folder.name)}",
        "# The file a new window opens first.",
        f"main = {_string(entry.script)}",
        "",
        "[training]",
        f"# The entry point (project-relative): {', '.join(entry.reasons)}.",
        f"script = {_string(entry.script)}",
        "# How the script takes its hyper-parameters:",
        '#   "argparse": each flag of the script\'s ArgumentParser is a hyper-parameter; a run passes the ones set as --flag value',
        '#   "hydra":    the Hydra/OmegaConf config\'s keys; a run passes key=value overrides',
        '#   "hparams":  a FastNN .hparams file, passed as --hparams FILE',
        f"parameters = {_string(entry.parameters)}",
    ]
    if entry.parameters == "hydra":
        lines.append(f"config = {_string(entry.config)}  # the primary config file" if entry.config
                     else '# config = "conf/config.yaml"  # the primary config file: set it')
    if adoption.python:
        lines.append(f"python = {_string(adoption.python)}  # the project's own interpreter")
    else:
        lines.append('# python = ".venv/bin/python"  # the project\'s own interpreter (default: Workbench\'s)')
    lines.append("# metric_patterns = ['val acc (?P<val_acc>[0-9.]+)']   # extra log-line patterns (named groups "
                 "are metrics)")
    lines.append("")
    lines += _parameter_comments(adoption)
    return "\n".join(lines).rstrip() + "\n"


def _parameter_comments(adoption: Adoption) -> list[str]:
    reading = adoption.reading
    how = {"code": "read from its code", "--help": "read from its --help", "config": "read from the config",
           "hparams file": "read from the .hparams file"}.get(reading.source, "found")
    if reading.problem:
        return [f"# The script's hyper-parameters could not be read: {reading.problem}"]
    if not reading.parameters:
        return [f"# The script takes no hyper-parameters ({how})."]
    lines = [f"# Its hyper-parameters ({how}); change them for one run with --set NAME=VALUE or in the",
             "# Train dialog:"]
    lines += [f"#   {p.name}: {p.describe()}"[:200] for p in reading.parameters]
    required = adoption.required_message()
    if required:
        lines += ["#", f"# Required, and not guessed: {required}."]
    for note in adoption.notes:
        lines.append(f"# Note: {note}.")
    return lines
