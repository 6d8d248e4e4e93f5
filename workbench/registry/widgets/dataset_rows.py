"""What the Registry panel shows of each dataset version, as plain text: its row in the table,
its details, the changes between two states of the data and what a cut says when it is done.
No Qt, so the wording reads (and is tested) on its own; it follows ``workbench dataset …``."""

from __future__ import annotations

from pathlib import Path

from workbench.registry.datasets import CutResult, DataChanges, DatasetVersion
from workbench.registry.settings import RegistrySettings
from workbench.registry.store import format_number
from workbench.registry.widgets.version_rows import format_created, format_size

DATASET_COLUMNS = ("Version", "Samples", "Size", "Part", "Parent", "Changes", "Created", "By", "Reason")
CHANGES_SHOWN = 500
"""Sample keys listed of each comparison; the rest are counted (100,000 lines help nobody)."""

NO_DATA_TEXT = (
    "No dataset versions yet, and workbench.toml does not say where the data is.\n\n"
    "Add a [data] table to workbench.toml, either a folder whose files are the samples:\n\n"
    "    [data]\n    train = \"data/train\"\n    val = \"data/val\"        # optional\n\n"
    "or a function of your code that names the samples it builds:\n\n"
    "    [data]\n    samples = \"module:function\"   # returns {\"train\": [ids], \"val\": [ids]}\n\n"
    "then cut the first version with Cut Version… (or `workbench dataset version`).")


def empty_text(settings: RegistrySettings | None) -> str:
    """What the dataset view says while there is no version: how to declare the data, or,
    when it is declared, how to cut the first version."""
    data = settings.data if settings is not None else None
    if data is None or not data.declared:
        return NO_DATA_TEXT
    where = (f"the files under {data.train_folder}" if data.train_folder
             else f"the samples {data.samples_function} names")
    return (f"No dataset versions yet.\n\nThe data is {where} ([data] in workbench.toml). Cut the first "
            "version with Cut Version… (or `workbench dataset version`): a manifest of the samples the data "
            "holds now, which a run trains on with Run ▸ Train with Hyper-parameters… ▸ Dataset version.")


def part_text(version: DatasetVersion) -> str:
    """``all`` or ``50 %``: how much of the data the version took."""
    return "all" if version.fraction in (None, 1.0) else f"{version.fraction:.0%}".replace("%", " %")


def _samples(count: int) -> str:
    return f"{count:,} sample" + ("s" if count != 1 else "")


def counts_text(added: int, removed: int, changed: int) -> str:
    return f"+{added:,} −{removed:,} ~{changed:,}"


def version_cells(version: DatasetVersion) -> list[tuple[str, object, str]]:
    """(text, sort key, tooltip) of each column of ``DATASET_COLUMNS`` for ``version``."""
    parent = format_number(version.parent) if version.parent is not None else ""
    return [
        (version.name, version.number, f"{version.manifest.name} ({version.kind})"),
        (f"{version.samples:,}", version.samples, f"{_samples(version.samples)} ({version.kind})"),
        (format_size(version.bytes) if version.bytes is not None else "", version.bytes,
         f"{version.bytes:,} bytes" if version.bytes is not None else "samples your code builds: no files"),
        (part_text(version), version.fraction if version.fraction is not None else 1.0,
         "the first part of the samples in a fixed order" if part_text(version) != "all" else "all of the data"),
        (parent, version.parent, "the version before it" if parent else "the first version"),
        (counts_text(version.added, version.removed, version.changed) if parent else "",
         version.added + version.removed + version.changed if parent else None,
         f"since {parent}: {version.added:,} added, {version.removed:,} removed, {version.changed:,} changed"
         if parent else ""),
        (format_created(version.created), version.created or None, version.created),
        (version.created_by, version.created_by or None, ""),
        (version.reason, version.reason or None, version.reason),
    ]


def shown_path(path: Path, project_dir: Path) -> str:
    """``path`` from the project folder when it is inside it."""
    try:
        return Path(path).relative_to(project_dir).as_posix()
    except ValueError:
        return str(path)


def detail_rows(version: DatasetVersion, project_dir: Path) -> list[tuple[str, str]]:
    """(label, text) pairs of what ``workbench dataset show`` says of ``version``."""
    rows = [
        ("Samples", f"{version.samples:,} ({'files' if version.kind == 'files' else 'ids your code names'})"
         + (f", {format_size(version.bytes)}" if version.bytes is not None else "")),
        ("Manifest", shown_path(version.manifest, project_dir)),
        ("sha256", version.manifest_sha256),
        ("Cut", f"{format_created(version.created)} by {version.created_by or 'someone'}"
         + (f": {version.reason}" if version.reason else "")),
        ("Part", "all of the data" if part_text(version) == "all" else f"{part_text(version)} of the data"),
        ("Parent", f"{format_number(version.parent)} ({counts_text(version.added, version.removed, version.changed)})"
         if version.parent is not None else "none (the first version)"),
    ]
    if version.val_samples is not None:
        rows.append(("Validation", f"{_samples(version.val_samples)} in val.txt (sha256 {version.val_sha256[:12]}…)"))
    else:
        rows.append(("Validation", "none ([data] declares no validation split)"))
    return rows


def change_lines(changes: DataChanges, limit: int = CHANGES_SHOWN) -> list[str]:
    """``+ key``, ``− key`` and ``~ key`` lines, at most ``limit`` of each kind, then how many
    more there are."""
    lines = []
    for sign, keys in (("+", changes.added), ("−", changes.removed), ("~", changes.changed)):
        lines += [f"{sign} {key}" for key in keys[:limit]]
        if len(keys) > limit:
            lines.append(f"{sign} … and {len(keys) - limit:,} more")
    return lines


def pending_summary(changes: DataChanges, latest: DatasetVersion | None) -> str:
    """What the data holds that the newest version does not, in one sentence."""
    if latest is None:
        count = len(changes.added)
        return (f"The data holds {count:,} sample{'s' * (count != 1)}; the first version takes "
                + ("them" if count != 1 else "it") + " (or the part you choose below).")
    if not changes.any:
        return (f"The data holds nothing new since version {latest.name}: a version cut now holds the same "
                "samples" + (" (the same part of them)." if part_text(latest) != "all" else "."))
    return (f"Since version {latest.name} the data holds "
            f"{len(changes.added):,} new, {len(changes.removed):,} removed and {len(changes.changed):,} changed "
            "sample" + ("s" if len(changes.added) + len(changes.removed) + len(changes.changed) != 1 else "") + ":")


def cut_text(result: CutResult, project_dir: Path) -> str:
    """The status line after a cut, as ``workbench dataset version`` says it."""
    version = result.version
    text = (f"Cut dataset version {version.name}: {_samples(version.samples)}"
            + (f" ({version.fraction:.0%} of the data)" if version.fraction not in (None, 1.0) else "")
            + (f", {format_size(version.bytes)}" if version.bytes is not None else "")
            + f" in {shown_path(version.manifest, project_dir)}.")
    if result.val_note:
        text += f" Note: {result.val_note}."
    return text


def val_history_cells(entry: dict) -> list[str]:
    """One row of val.txt's history: when, samples, hash, why, who."""
    samples = entry.get("samples")
    return [format_created(str(entry.get("time", ""))),
            f"{samples:,}" if isinstance(samples, int) else str(samples or ""),
            str(entry.get("sha256", ""))[:12], str(entry.get("reason", "")), str(entry.get("user", ""))]
