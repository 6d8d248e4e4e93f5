"""``workbench dataset …`` and ``workbench registry …``: versions from a terminal.

Each command takes the project as a first word that is a project folder, or ``--project``, or
the project that holds the current folder; each has ``--json`` (stdout is then exactly one
JSON object or list). Errors are one line and exit status 1 (workbench.clikit).
"""

from __future__ import annotations

import functools
from pathlib import Path

import click

from workbench.clikit import HelpWhenBareGroup, emit, print_json, reports_errors

_JSON = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
_PROJECT = click.option("--project", "project", type=click.Path(path_type=Path), default=None,
                        help="The project folder (default: the one that holds the current folder).")


def _with_project(metavar: str, least: int, most: int):
    """``[PROJECT] WORDS…``: a first word that is a folder holding workbench.toml is the
    project; the rest (``least`` to ``most`` of them) go to the command as ``words``."""
    def decorate(function):
        @functools.wraps(function)
        def command(*args, words: tuple[str, ...] = (), project: Path | None = None, **kwargs):
            words = list(words)
            if words and (Path(words[0]).expanduser() / "workbench.toml").is_file():
                if project is not None:
                    raise click.UsageError(f"Two projects were given ({words[0]} and --project {project}): give one.")
                project = Path(words.pop(0))
            if not least <= len(words) <= most:
                raise click.UsageError(f"expected {metavar or 'no more words'} after the project, got "
                                       f"{' '.join(words) or 'nothing'}.")
            return function(*args, words=words, project=project, **kwargs)

        command = _PROJECT(command)
        return click.argument("words", nargs=-1, metavar=f"[PROJECT] {metavar}".strip())(command)
    return decorate


def _versions(project: Path | None):
    from workbench.registry import open_versions

    return open_versions(_project_root(project))


def _project_root(path: Path | None) -> Path:
    """The nearest folder at or above ``path`` (default: here) with a workbench.toml."""
    from workbench.project.project_file import enclosing_project

    start = (path or Path.cwd()).expanduser().absolute()
    if not start.exists():
        raise _failure(f"{start} does not exist. Give the folder of a project.")
    found = enclosing_project(start)
    if found is None:
        raise _failure(f"{start} is not in a Workbench project (no workbench.toml in it or above it). Give the "
                       "project's folder, or make one with `workbench init`.")
    return found


# ---------------------------------------------------------------------------------------------
# workbench dataset


@click.group("dataset", cls=HelpWhenBareGroup, no_args_is_help=True,
             context_settings={"help_option_names": ["-h", "--help"]})
def dataset_group() -> None:
    """Dataset versions: manifests train_NNNN.txt of the samples the data held when each was cut.

    Where the data is comes from workbench.toml's [data] table: train = "data/train" (a folder
    of sample files) or samples = "module:function" (a function of your code naming the
    samples it builds). Train on a version with `workbench train --dataset-version NNNN`.
    """


@dataset_group.command("version")
@_with_project("", 0, 0)
@click.option("--fraction", type=click.FloatRange(min=0.0, max=1.0, min_open=True), default=None,
              help="Take this part of the samples (0.5: half), the first in a fixed order, so "
                   "versions of 0.5, 0.6 … 1.0 of the same data nest.")
@click.option("--reason", default="", help="Why this version is cut (kept with it).")
@click.option("--new-val", is_flag=True, help="Replace val.txt with the validation samples the data holds now "
                                               "(recorded; otherwise val.txt stays as it was).")
@_JSON
@reports_errors
def dataset_version_command(words, project, fraction, reason, new_val, as_json) -> None:
    """Cut the next dataset version from what the data holds now."""
    from workbench.clikit import ProgressLine

    versions = _versions(project)
    latest = versions.datasets.latest()
    printer = None if as_json else ProgressLine()
    try:
        # One look at the data: the cut says what it holds that the version before did not.
        result = versions.datasets.cut(fraction=fraction, reason=reason, new_val=new_val, progress=printer)
    finally:
        if printer is not None:
            printer.close()
    if not as_json and latest is not None and result.changes.any:
        click.echo(_changes_text(result.changes, f"since {latest.name}"))
    version = result.version
    text = (f"Cut dataset version {version.name}: {version.samples:,} samples"
            + (f" ({fraction:.0%} of the data)" if fraction not in (None, 1.0) else "")
            + (f", {_size(version.bytes)}" if version.bytes is not None else "")
            + f" in {_shown(version.manifest, versions.project_dir)}.")
    if result.val_note:
        text += f"\nNote: {result.val_note}."
    emit({**version.to_json(), "changes": _counts(result.changes), "val_note": result.val_note,
          "hashed": result.hashed}, as_json, text)


@dataset_group.command("list")
@_with_project("", 0, 0)
@_JSON
@reports_errors
def dataset_list_command(words, project, as_json) -> None:
    """List the dataset versions, oldest first."""
    versions = _versions(project)
    found = versions.datasets.list()
    if as_json:
        print_json([version.to_json() for version in found])
        return
    if not found:
        click.echo("No dataset versions yet. Cut one with `workbench dataset version`.")
        return
    lines = [f"{'VERSION':<8} {'SAMPLES':>9} {'SIZE':>9} {'PART':>5} {'PARENT':<7} {'CHANGES':<16} {'CREATED':<25} REASON"]
    for version in found:
        changes = f"+{version.added} -{version.removed} ~{version.changed}"
        part = f"{version.fraction:.0%}" if version.fraction not in (None, 1.0) else "all"
        lines.append(f"{version.name:<8} {version.samples:>9,} {_size(version.bytes):>9} {part:>5} "
                     f"{(f'{version.parent:04d}' if version.parent is not None else '-'):<7} {changes:<16} "
                     f"{version.created:<25} {version.reason}")
    click.echo("\n".join(lines))


@dataset_group.command("show")
@_with_project("[NNNN]", 0, 1)
@_JSON
@reports_errors
def dataset_show_command(words, project, as_json) -> None:
    """Show a dataset version (default: the newest) and what the data holds now that it does not."""
    versions = _versions(project)
    version = versions.datasets.get(words[0]) if words else versions.datasets.latest()
    if version is None:
        raise _failure("there are no dataset versions yet; cut one with `workbench dataset version`.")
    pending = versions.datasets.pending() if not words or version == versions.datasets.latest() else None
    data = {**version.to_json(), "val_history": versions.datasets.val_history()}
    if pending is not None:
        data["pending"] = _counts(pending)
    lines = [f"Dataset version {version.name}: {version.samples:,} samples ({version.kind})"
             + (f", {_size(version.bytes)}" if version.bytes is not None else ""),
             f"  manifest   {_shown(version.manifest, versions.project_dir)} (sha256 {version.manifest_sha256[:12]}…)",
             f"  cut        {version.created} by {version.created_by}" + (f": {version.reason}" if version.reason else ""),
             f"  part       {version.fraction:.0%} of the data" if version.fraction not in (None, 1.0) else "  part       all of the data",
             f"  parent     {version.parent:04d} (+{version.added} -{version.removed} ~{version.changed})"
             if version.parent is not None else "  parent     none (the first version)"]
    if version.val_samples is not None:
        lines.append(f"  validation {version.val_samples:,} sample{'' if version.val_samples == 1 else 's'} in val.txt (sha256 {version.val_sha256[:12]}…)")
    if pending is not None:
        lines.append(_changes_text(pending, "not in it yet") if pending.any else "  The data holds nothing new since.")
    emit(data, as_json, "\n".join(lines))


@dataset_group.command("diff")
@_with_project("NNNN [NNNN]", 1, 2)
@_JSON
@reports_errors
def dataset_diff_command(words, project, as_json) -> None:
    """What the second version (default: the next one) holds that the first does not, and the reverse."""
    versions = _versions(project)
    changes = versions.datasets.diff(*words)
    emit(changes.to_json(), as_json, _changes_text(changes, f"from {int(words[0]):04d} to {int(words[1]):04d}" if len(words) > 1 else f"from {int(words[0]):04d} to the next",
                                                   limit=50) if changes.any else "The two versions hold the same samples.")


# ---------------------------------------------------------------------------------------------
# workbench registry


@click.group("registry", cls=HelpWhenBareGroup, no_args_is_help=True,
             context_settings={"help_option_names": ["-h", "--help"]})
def registry_group() -> None:
    """Model versions: every completed run's model as bestmodel_NNNN.* with its record.

    Retention keeps the newest [registry] version_max versions (default 5) of workbench.toml,
    and every pinned or aliased one. Aliases (production, staging, …) point to versions; each
    move is recorded with its time, reason and user.
    """


@registry_group.command("list")
@_with_project("", 0, 0)
@_JSON
@reports_errors
def registry_list_command(words, project, as_json) -> None:
    """List the model versions, oldest first."""
    versions = _versions(project)
    found = versions.models.list()
    if as_json:
        print_json([version.to_json() for version in found])
        return
    if not found:
        click.echo("No model versions yet: a completed training run registers its model.")
        return
    metric = versions.settings.metric or _headline_metric(found)
    lines = [f"{'VERSION':<8} {'DATASET':<8} {metric.upper():>10} {'SIZE':>9} {'PINNED':<7} {'ALIASES':<20} VERIFIED ON"]
    for version in found:
        value = version.metrics.get(metric)
        verified = sorted({str(v.get("device")) for v in version.info.get("verifications") or [] if v.get("passed")})
        lines.append(f"{version.name:<8} {str(version.info.get('dataset_version') or '-'):<8} "
                     f"{(f'{value:.4g}' if isinstance(value, (int, float)) else '-'):>10} {_size(version.size):>9} "
                     f"{'yes' if version.pinned else '':<7} {', '.join(version.aliases):<20} {', '.join(verified)}")
    click.echo("\n".join(lines))


@registry_group.command("show")
@_with_project("[NNNN|ALIAS]", 0, 1)
@_JSON
@reports_errors
def registry_show_command(words, project, as_json) -> None:
    """Show everything recorded about a model version (default: the newest)."""
    versions = _versions(project)
    found = versions.models.list()
    if not words and not found:
        raise _failure("there are no model versions yet: a completed training run registers its model.")
    version = versions.models.resolve(words[0]) if words else found[-1]
    problems = versions.models.problems(version)
    data = {**version.to_json(), "problems": problems}
    info = version.info
    training = info.get("training") or {}
    code = info.get("code") or {}
    lines = [f"Model version {version.name}" + (f" ({', '.join(version.aliases)})" if version.aliases else "")
             + (" pinned" if version.pinned else ""),
             f"  created    {info.get('created', '?')} by {info.get('created_by', '?')} from run "
             f"{(info.get('run') or {}).get('id', '?')}",
             f"  dataset    {info.get('dataset_version') or 'the data as the script read it (no version)'}",
             f"  parent     {info.get('parent_version') or 'none (trained from scratch)'}",
             f"  code       {code.get('commit') or 'not in Git'}" + (" with uncommitted changes" if code.get("dirty") else ""),
             f"  training   {training.get('epochs', '?')} epochs, {training.get('steps', '?')} steps, "
             f"{training.get('processes', 1)} process(es), {training.get('backend', '?')}"]
    if version.metrics:
        lines.append("  metrics    " + " ".join(f"{k}={_number(v)}" for k, v in version.metrics.items()))
    lines.append("  files")
    for item in version.files:
        lines.append(f"    {item.name:<32} {_size(item.size):>9}  {item.role}" + (" (shared)" if item.stored == "shared" else ""))
    for record in info.get("verifications") or []:
        lines.append(f"  verified   on {record.get('device', '?')} at {record.get('time', '?')}: "
                     + ("passed" if record.get("passed") else "FAILED"))
    lines += [f"  problem    {problem}" for problem in problems]
    emit(data, as_json, "\n".join(lines))


@registry_group.command("pin")
@_with_project("NNNN", 1, 1)
@_JSON
@reports_errors
def registry_pin_command(words, project, as_json) -> None:
    """Pin a version: retention never removes it."""
    version = _versions(project).models.pin(words[0], True)
    emit(version.to_json(), as_json, f"Pinned model version {version.name}.")


@registry_group.command("unpin")
@_with_project("NNNN", 1, 1)
@_JSON
@reports_errors
def registry_unpin_command(words, project, as_json) -> None:
    """Unpin a version: retention may remove it again."""
    version = _versions(project).models.pin(words[0], False)
    emit(version.to_json(), as_json, f"Unpinned model version {version.name}.")


@registry_group.command("alias")
@_with_project("NAME [NNNN]", 1, 2)
@click.option("--reason", default="", help="Why the alias moves (kept in its history).")
@_JSON
@reports_errors
def registry_alias_command(words, project, reason, as_json) -> None:
    """Point the alias NAME at version NNNN; without NNNN, show where NAME pointed and when."""
    versions = _versions(project)
    name = words[0]
    if len(words) == 1:
        moves = versions.models.aliases.history(name)
        if not moves:
            raise _failure(f"there is no alias {name!r}; set it with `workbench registry alias {name} NNNN`.")
        emit([move.to_json() for move in moves], as_json, "\n".join(_move_text(move) for move in moves))
        return
    move = versions.models.set_alias(name, words[1], reason)
    emit(move.to_json(), as_json, _move_text(move))


# `registry rollback` is workbench.device.deploy_cli's: it pushes to the devices too.


@registry_group.command("remove")
@_with_project("NNNN", 1, 1)
@_JSON
@reports_errors
def registry_remove_command(words, project, as_json) -> None:
    """Remove a model version (not a pinned or aliased one) and the files only it refers to."""
    report = _versions(project).models.remove(words[0])
    emit(_report_json(report), as_json, _report_text(report))


@registry_group.command("gc")
@_with_project("", 0, 0)
@click.option("--keep", type=click.IntRange(min=0), default=None,
              help="Versions to keep (default: [registry] version_max of workbench.toml).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, and remove nothing.")
@_JSON
@reports_errors
def registry_gc_command(words, project, keep, dry_run, as_json) -> None:
    """Apply retention now: keep the newest versions, and every pinned or aliased one."""
    report = _versions(project).models.gc(keep, dry_run)
    emit(_report_json(report), as_json, _report_text(report))


# ---------------------------------------------------------------------------------------------


def _failure(message: str):
    from workbench.registry import RegistryError

    return RegistryError(message)


def _report_json(report) -> dict:
    plan = report.plan
    return {"removed": [f"{n:04d}" for n in plan.remove], "kept": [f"{n:04d}" for n in plan.keep],
            "why_kept": {f"{n:04d}": why for n, why in plan.why_kept.items()}, "files_removed": plan.files_removed,
            "files_kept_shared": plan.files_kept_shared, "removed_bytes": report.removed_bytes,
            "freed_bytes": report.freed_bytes, "dry_run": report.dry_run}


def _report_text(report) -> str:
    plan = report.plan
    would = "Would remove" if report.dry_run else "Removed"
    if not plan.remove:
        text = "Nothing to remove"
    else:
        text = (f"{would} model version{'s' if len(plan.remove) > 1 else ''} "
                f"{', '.join(f'{n:04d}' for n in plan.remove)}: {len(plan.files_removed)} files, "
                f"{_size(report.removed_bytes)} ({_size(report.freed_bytes)} of disk space "
                f"{'would be ' if report.dry_run else ''}freed; the rest is still linked from run folders)")
    kept = [f"{n:04d} ({why})" for n, why in plan.why_kept.items()]
    if kept:
        text += f". Kept beyond the newest: {', '.join(kept)}"
    if plan.files_kept_shared:
        text += f". Kept because newer versions refer to them: {', '.join(plan.files_kept_shared)}"
    return text + "."


def _move_text(move) -> str:
    before = move.to_json()["from"] or "nothing"
    after = move.to_json()["to"] or "nothing"
    verb = {"rollback": "rolled back", "delete": "deleted"}.get(move.action, "moved")
    return (f"{move.time}  {move.alias} {verb}: {before} -> {after} by {move.user}"
            + (f" ({move.reason})" if move.reason else ""))


def _changes_text(changes, where: str, limit: int = 5) -> str:
    parts = [f"{len(changes.added):,} added", f"{len(changes.removed):,} removed", f"{len(changes.changed):,} changed"]
    lines = [f"Samples {where}: {', '.join(parts)}"]
    for sign, keys in (("+", changes.added), ("-", changes.removed), ("~", changes.changed)):
        lines += [f"  {sign} {key}" for key in keys[:limit]]
        if len(keys) > limit:
            lines.append(f"  {sign} … and {len(keys) - limit:,} more")
    return "\n".join(lines)


def _counts(changes) -> dict:
    return {"added": len(changes.added), "removed": len(changes.removed), "changed": len(changes.changed),
            "first_added": changes.added[:20]}


def _headline_metric(found) -> str:
    for name in ("val_acc", "test_acc", "val_loss", "acc", "loss"):
        if any(name in version.metrics for version in found):
            return name
    names = [name for version in found for name in version.metrics]
    return names[0] if names else "metric"


def _size(size: int | None) -> str:
    from workbench.platform.byte_sizes import format_size

    return "-" if size is None else format_size(size)


def _number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _shown(path: Path, project_dir: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(project_dir).resolve()))
    except ValueError:
        return str(path)
