"""``workbench init [FOLDER]``: adopt a folder of one's own training code by writing its
``workbench.toml``. Nothing else in the folder changes (no .gitignore edit, no commit).

The service modules are imported inside the command: ``--help`` needs none of them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from workbench.clikit import emit, reports_errors
from workbench.clikit.terminal import is_terminal


@click.command("init")
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option("--script", "script", type=click.Path(path_type=Path), default=None,
              help="The training script, relative to FOLDER (needed when several are equally likely).")
@click.option("--yes", "-y", is_flag=True, help="Write workbench.toml without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@reports_errors
def init_command(folder: Path | None, script: Path | None, yes: bool, as_json: bool) -> None:
    """Set up FOLDER (default: the current folder) for training: find its training script and
    the script's hyper-parameters, and write a commented workbench.toml."""
    from workbench.adopt.project_setup import SeveralEntryPoints, plan_adoption, write_project_file

    folder = (folder or Path.cwd()).expanduser().absolute()
    interactive = not as_json and is_terminal(sys.stdin) and is_terminal(sys.stdout)
    try:
        adoption = plan_adoption(folder, script)
    except SeveralEntryPoints as several:
        if not interactive:
            raise
        adoption = plan_adoption(folder, _ask_which(several.candidates))
    if interactive and not yes:
        click.echo(_summary(adoption))
        click.confirm(f"Write {adoption.project_file}?", default=True, abort=True)
    written = write_project_file(adoption)
    required = adoption.required_message()
    problem = adoption.reading.problem
    data = {"project_file": str(written), "script": adoption.entry.script, "parameters": adoption.entry.parameters,
            "config": adoption.entry.config or None, "python": adoption.python or None,
            "hyperparameters": [p.name for p in adoption.reading.parameters],
            "required": [p.name for p in adoption.reading.required], "problem": problem or None}
    lines = [f"Wrote {written}: training runs {adoption.entry.script} "
             f"({len(adoption.reading.parameters)} hyper-parameters, {adoption.entry.parameters})."]
    if problem:
        lines.append(problem)
    if required:
        lines.append(required + ".")
    lines.append("Nothing else in the folder was changed. Train with `workbench train` or from the window's Run menu.")
    emit(data, as_json, "\n".join(lines))


def _ask_which(candidates) -> str:
    click.echo("Several scripts could be the training entry point:")
    for number, entry in enumerate(candidates, 1):
        click.echo(f"  {number:>3}. {entry.describe()}")
    number = click.prompt("Which one trains? (number)", type=click.IntRange(1, len(candidates)))
    return candidates[number - 1].script


def _summary(adoption) -> str:
    entry, reading = adoption.entry, adoption.reading
    lines = [f"Entry point: {entry.describe()}", f"Hyper-parameters ({entry.parameters}):"]
    lines += [f"  {p.describe()}" for p in reading.parameters] or ["  (none found)"]
    if reading.problem:
        lines.append(reading.problem)
    return "\n".join(lines)
