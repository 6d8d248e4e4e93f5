"""Replace in Files: a plan that shows every change before it is made, the replacement, and its
undo.

The plan is made from what the search found and the files as they are then; each change is
checked against the file's bytes (the matched text must still be where rg saw it), and each file
is written only if it is still exactly what the plan was made from. A file changed in between is
left alone and named, never rewritten blindly. Undo puts back each file's bytes, again only where
nobody changed the file since. Qt-free.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from workbench.platform.atomic_files import write_atomically
from workbench.search.ripgrep import FileMatches, SearchQuery
from workbench.tasks import CancelToken

_TEMPLATE_PIECE = re.compile(r"\$\$|\$&|\$\{([^}]*)\}|\$(\d+)")


class ReplaceError(Exception):
    """The replacement cannot be planned as asked; the message says why and what to do."""


@dataclass(frozen=True)
class PlannedEdit:
    """One match and what replaces it. ``start`` / ``end`` are character offsets in
    ``line_text`` (for the preview); ``byte_start`` / ``byte_end`` say where it is in the file."""

    line: int
    line_text: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    old_text: str
    new_text: str

    @property
    def line_after(self) -> str:
        return self.line_text[:self.start] + self.new_text + self.line_text[self.end:]


@dataclass
class FileChange:
    """The planned edits of one file. ``problem`` says why the file will not be changed (it
    changed since the search, it is not UTF-8 text); its edits are then only shown."""

    path: str
    sha256: str
    edits: list[PlannedEdit] = field(default_factory=list)
    problem: str = ""


@dataclass
class ReplacePlan:
    root: Path
    files: list[FileChange]

    @property
    def edit_count(self) -> int:
        return sum(len(change.edits) for change in self.files if not change.problem)


@dataclass(frozen=True)
class FileUndo:
    path: str
    original: bytes
    written_sha256: str


@dataclass
class ReplaceOutcome:
    """What a replacement did: ``replaced`` edits in ``files`` files; ``skipped`` names each
    file left alone and why; ``undo`` undoes it."""

    files: int
    replaced: int
    skipped: list[tuple[str, str]]
    undo: list[FileUndo]


@dataclass
class UndoOutcome:
    restored: list[str]
    skipped: list[tuple[str, str]]


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def expand_template(template: str, match: re.Match) -> str:
    """``template`` with references to the match filled in as VS Code fills them: ``$0`` or
    ``$&`` the whole match, ``$1`` a group (``$1_x`` is group 1, then "_x"), ``${name}`` a named
    group, ``$$`` a dollar sign. A group that took no part, or does not exist, is empty."""

    def piece(found: re.Match) -> str:
        if found.group(0) == "$$":
            return "$"
        if found.group(0) == "$&":
            return match.group(0)
        name = found.group(1) if found.group(1) is not None else found.group(2)
        key: int | str = int(name) if name.isdigit() else name
        try:
            return match.group(key) or ""
        except IndexError:  # no such group
            return ""

    return _TEMPLATE_PIECE.sub(piece, template)


def python_pattern(query: SearchQuery) -> re.Pattern:
    """The regular expression that finds what rg found for ``query``, for filling in ``$1``.
    Raises ReplaceError for a pattern Python's regular expressions cannot read."""
    pattern = query.pattern if query.regex else re.escape(query.pattern)
    if query.whole_word:
        pattern = rf"(?<!\w)(?:{pattern})(?!\w)"
    try:
        return re.compile(pattern, 0 if query.case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise ReplaceError(f"The pattern finds matches, but its groups cannot be filled in here "
                           f"({exc}); write the replacement without $ references, or simplify "
                           f"the pattern.") from None


def plan_replacement(root: Path | str, query: SearchQuery, replacement: str, results: list[FileMatches],
                     cancel: CancelToken | None = None) -> ReplacePlan:
    """Every change replacing the matches in ``results`` with ``replacement`` would make, checked
    against the files as they are now (reads files: call it off the GUI thread)."""
    root = Path(root)
    # Only a template with references needs the match again; plain text replaces as it is.
    pattern = python_pattern(query) if query.regex and "$" in replacement else None
    plan = ReplacePlan(root, [])
    for found in results:
        if cancel is not None:
            cancel.raise_if_cancelled()
        plan.files.append(_plan_file(root, found, replacement, pattern))
    return plan


def _plan_file(root: Path, found: FileMatches, replacement: str, pattern: re.Pattern | None) -> FileChange:
    try:
        data = (root / found.path).read_bytes()
    except OSError as exc:
        return FileChange(found.path, "", [], f"cannot be read ({exc.strerror or exc}); search again")
    change = FileChange(found.path, sha256_of(data))
    if not found.is_utf8:
        change.problem = "is not UTF-8 text, so it is not changed"
    for line in found.lines:
        for sub in line.submatches:
            new_text = replacement
            if pattern is not None:
                match = pattern.match(line.text, sub.start)
                if match is None or match.end() != sub.end:
                    change.problem = change.problem or (
                        f"line {line.line}: the match cannot be filled in the same way here; "
                        f"it is not changed")
                else:
                    new_text = expand_template(replacement, match)
            change.edits.append(PlannedEdit(line.line, line.text, sub.start, sub.end, sub.byte_start,
                                            sub.byte_end, sub.text, new_text))
            if not change.problem and data[sub.byte_start:sub.byte_end] != sub.text.encode("utf-8"):
                change.problem = "changed since the search; search again to replace in it"
    return change


def apply_replacement(plan: ReplacePlan, chosen: set[tuple[str, int]] | None = None,
                      skip: dict[str, str] | None = None, cancel: CancelToken | None = None) -> ReplaceOutcome:
    """Make the planned edits (only those ``(path, index)`` in ``chosen`` when given), file by
    file; a file with a problem, named in ``skip`` (path to reason), or changed since the plan
    was made is left as it is and reported."""
    skip = skip or {}
    outcome = ReplaceOutcome(0, 0, [], [])
    for change in plan.files:
        if cancel is not None and cancel.cancelled:
            break
        if change.problem:  # named whether or not its edits were ticked: the preview showed why
            outcome.skipped.append((change.path, change.problem))
            continue
        edits = [edit for index, edit in enumerate(change.edits)
                 if chosen is None or (change.path, index) in chosen]
        if not edits:
            continue
        if change.path in skip:
            outcome.skipped.append((change.path, skip[change.path]))
            continue
        path = plan.root / change.path
        try:
            data = path.read_bytes()
        except OSError as exc:
            outcome.skipped.append((change.path, f"cannot be read ({exc.strerror or exc})"))
            continue
        if sha256_of(data) != change.sha256:
            outcome.skipped.append((change.path, "changed since the preview; search again to replace in it"))
            continue
        written = _spliced(data, edits)
        try:
            write_atomically(path, written)
        except OSError as exc:
            outcome.skipped.append((change.path, f"cannot be written ({exc.strerror or exc})"))
            continue
        outcome.undo.append(FileUndo(change.path, data, sha256_of(written)))
        outcome.files += 1
        outcome.replaced += len(edits)
    return outcome


def _spliced(data: bytes, edits: list[PlannedEdit]) -> bytes:
    pieces, position = [], 0
    for edit in sorted(edits, key=lambda e: e.byte_start):
        if edit.byte_start < position:
            continue  # overlapping matches cannot both be replaced; the first one wins
        pieces += [data[position:edit.byte_start], edit.new_text.encode("utf-8")]
        position = edit.byte_end
    pieces.append(data[position:])
    return b"".join(pieces)


def undo_replacement(root: Path | str, undo: list[FileUndo]) -> UndoOutcome:
    """Put back what a replacement changed, in each file still as the replacement left it."""
    outcome = UndoOutcome([], [])
    for entry in undo:
        path = Path(root) / entry.path
        try:
            current = path.read_bytes()
        except OSError as exc:
            outcome.skipped.append((entry.path, f"cannot be read ({exc.strerror or exc})"))
            continue
        if sha256_of(current) != entry.written_sha256:
            outcome.skipped.append((entry.path, "changed since the replacement, so it is left as it is"))
            continue
        write_atomically(path, entry.original)
        outcome.restored.append(entry.path)
    return outcome
