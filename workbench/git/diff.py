"""The diff model: one file's changes as hunks of numbered lines, with the changed characters of
paired lines marked.

``diff_file`` reads a file's worktree-vs-index or index-vs-HEAD diff, ``diff_commits`` the
diff between two commits; both run ``git diff`` with fixed options (no colour, no external diff
tool, three lines of context, fixed a/ b/ prefixes whatever the user's config) and parse its
unified output with ``parse_diff``, which needs no git and is tested on fixture text.

Binary files and files too large to show (``MAX_FILE_BYTES``, ``MAX_DIFF_LINES``) come back with
``is_binary`` / ``is_too_large`` and a ``summary`` of their sizes instead of hunks. Line text
keeps a trailing ``\\r`` of CRLF files, so a patch rebuilt from the model applies exactly.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workbench.git.errors import GitError
from workbench.git.repository import Repository
from workbench.git.status import repo_relative
from workbench.tasks import CancelToken

WORKTREE_VS_INDEX = "worktree-vs-index"
INDEX_VS_HEAD = "index-vs-head"
COMMITS = "commits"

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_DIFF_LINES = 20_000
# Longer lines are shown without intra-line marks: matching them costs more than it shows.
MAX_INTRALINE_CHARS = 1_000

ADDED, DELETED, MODIFIED, RENAMED, COPIED, UNCHANGED = (
    "added", "deleted", "modified", "renamed", "copied", "unchanged")

_DIFF_OPTIONS = ["--no-color", "--no-ext-diff", "--no-textconv", "-U3", "--src-prefix=a/", "--dst-prefix=b/"]
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
# Words, runs of blanks, single punctuation: changes are marked on these, not on loose letters.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(slots=True)
class DiffLine:
    """A context (``' '``), added (``'+'``) or removed (``'-'``) line.

    ``intraline`` lists the ``(start, end)`` character ranges of ``text`` that differ from the
    paired line on the other side (empty when there is no pair or nothing in common);
    ``no_newline`` is true for a last line without a newline ("\\ No newline at end of file").
    """

    kind: str
    text: str
    old_no: int | None
    new_no: int | None
    intraline: list[tuple[int, int]] = field(default_factory=list)
    no_newline: bool = False


@dataclass(slots=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    header: str
    lines: list[DiffLine] = field(default_factory=list)

    @property
    def section(self) -> str:
        """The function or heading git printed after the ``@@ … @@`` (may be empty)."""
        return self.header.split("@@", 2)[2] if self.header.count("@@") >= 2 else ""


@dataclass(slots=True)
class FileDiff:
    """The changes of one file. ``old_path`` is None for an added file and differs from ``path``
    for a rename or copy. Binary and too-large files have no hunks but a ``summary``."""

    path: str
    old_path: str | None
    is_binary: bool = False
    is_too_large: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    status: str = MODIFIED
    old_mode: str | None = None
    new_mode: str | None = None
    old_size: int | None = None
    new_size: int | None = None
    summary: str = ""
    source: str | None = None

    @property
    def is_new(self) -> bool:
        return self.status == ADDED

    @property
    def is_deleted(self) -> bool:
        return self.status == DELETED

    @property
    def line_count(self) -> int:
        return sum(len(hunk.lines) for hunk in self.hunks)


def diff_file(repo: Repository, path: str | Path, source: str = WORKTREE_VS_INDEX, *,
              cancel: CancelToken | None = None) -> FileDiff:
    """The diff of one file: ``WORKTREE_VS_INDEX`` (unstaged changes; an untracked file diffs as
    all added) or ``INDEX_VS_HEAD`` (staged changes)."""
    rel = repo_relative(repo, path)
    if source == WORKTREE_VS_INDEX:
        (index_size,) = blob_sizes(repo, [":" + rel])
        worktree = repo.root / rel
        worktree_size = worktree.stat().st_size if worktree.is_file() else None
        if index_size is None and not _is_tracked(repo, rel):
            return _untracked_diff(repo, rel, worktree_size, cancel)
        old_size, new_size = index_size, worktree_size
        args = ["diff", *_DIFF_OPTIONS, "--"]
    elif source == INDEX_VS_HEAD:
        old_size, new_size = blob_sizes(repo, ["HEAD:" + rel, ":" + rel])
        args = ["diff", "--cached", *_DIFF_OPTIONS, "--"]
    else:
        raise GitError(f"Unknown diff source {source!r}: use WORKTREE_VS_INDEX or INDEX_VS_HEAD, "
                       "or diff_commits for two commits.")
    if max(old_size or 0, new_size or 0) > MAX_FILE_BYTES:
        return _too_large(FileDiff(rel, rel, source=source), old_size, new_size)
    result = repo.run([*args, rel], cancel=cancel, env=_LITERAL)
    text = _decode(result.stdout)
    if source == WORKTREE_VS_INDEX and text.startswith("diff --cc "):
        # A conflicted file: show it against our side (stage 2), a plain two-way diff.
        text = _decode(repo.run(["diff", "-2", *_DIFF_OPTIONS, "--", rel], cancel=cancel, env=_LITERAL).stdout)
    return _single(parse_diff(text), rel, source, old_size, new_size)


def diff_commits(repo: Repository, a: str, b: str, path: str | Path | None = None, *,
                 cancel: CancelToken | None = None) -> list[FileDiff]:
    """The diffs between commits ``a`` and ``b`` (renames detected), or only of ``path``."""
    pathspec = [] if path is None else [repo_relative(repo, path)]
    raw = repo.run(["diff", "--raw", "-z", "-M", "--no-abbrev", "--no-relative", a, b, "--", *pathspec],
                   cancel=cancel, env=_LITERAL)
    entries = _parse_raw(_decode(raw.stdout))
    if not entries:
        return []
    oids = sorted({oid for entry in entries for oid in entry[1:3] if oid.strip("0")})
    sizes = dict(zip(oids, blob_sizes(repo, oids)))
    too_large: dict[str, FileDiff] = {}
    for status, old_oid, new_oid, old_path, new_path in entries:
        old_size, new_size = sizes.get(old_oid), sizes.get(new_oid)
        if max(old_size or 0, new_size or 0) > MAX_FILE_BYTES:
            too_large[new_path] = _too_large(FileDiff(new_path, old_path, status=status, source=COMMITS),
                                             old_size, new_size)
    parsed: dict[str, FileDiff] = {}
    if len(too_large) < len(entries):
        # Big files are left out of the text diff so git never prints them.
        specs = [f":(literal){p}" for p in pathspec] + [f":(exclude,literal){p}" for p in too_large]
        for f in too_large.values():
            if f.old_path and f.old_path != f.path:
                specs.append(f":(exclude,literal){f.old_path}")
        result = repo.run(["diff", *_DIFF_OPTIONS, "-M", "--no-relative", a, b, "--", *specs], cancel=cancel)
        parsed = {f.path: f for f in parse_diff(_decode(result.stdout))}
    diffs = []
    for status, old_oid, new_oid, old_path, new_path in entries:
        found = too_large.get(new_path) or parsed.get(new_path) or FileDiff(new_path, old_path, status=status)
        found.source = COMMITS
        found.old_size, found.new_size = sizes.get(old_oid), sizes.get(new_oid)
        if found.is_binary and not found.summary:
            found.summary = _size_summary("Binary file", found.old_size, found.new_size)
        diffs.append(found)
    return diffs


def empty_tree(repo: Repository) -> str:
    """The id of the empty tree in this repository's hash (what a root commit is compared with)."""
    return repo.run(["hash-object", "-t", "tree", "--stdin"], input=b"").text.strip()


def blob_sizes(repo: Repository, objects: list[str]) -> list[int | None]:
    """The size in bytes of each object name (``:path``, ``HEAD:path``, an id); None for a
    missing object or one that is not a blob (a submodule commit)."""
    if not objects:
        return []
    result = repo.run(["cat-file", "--batch-check"], input="".join(o + "\n" for o in objects).encode(
        "utf-8", errors="surrogateescape"))
    sizes: list[int | None] = []
    for line in _decode(result.stdout).splitlines():
        parts = line.split(" ")
        sizes.append(int(parts[2]) if len(parts) == 3 and parts[1] == "blob" else None)
    return sizes


def parse_diff(text: str) -> list[FileDiff]:
    """Parse the output of ``git diff`` (unified, with a/ b/ prefixes) into FileDiffs."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk: Hunk | None = None
    old_left = new_left = 0
    old_no = new_no = 0
    line_count = 0
    last: DiffLine | None = None
    for line in text.split("\n"):
        if hunk is not None and (old_left > 0 or new_left > 0):
            kind = line[:1]
            if kind == " ":
                last = DiffLine(" ", line[1:], old_no, new_no)
                old_no += 1
                new_no += 1
                old_left -= 1
                new_left -= 1
            elif kind == "-":
                last = DiffLine("-", line[1:], old_no, None)
                old_no += 1
                old_left -= 1
            elif kind == "+":
                last = DiffLine("+", line[1:], None, new_no)
                new_no += 1
                new_left -= 1
            elif kind == "\\":
                if last is not None:
                    last.no_newline = True
                continue
            else:
                # A truncated hunk: stop reading it rather than misread what follows.
                hunk = None
                continue
            line_count += 1
            if line_count > MAX_DIFF_LINES:
                current.is_too_large = True
            if not current.is_too_large:
                hunk.lines.append(last)
            continue
        if line.startswith("\\") and last is not None:
            last.no_newline = True
            continue
        if line.startswith("diff --git "):
            if current is not None:
                _finish(current, line_count)
            current = FileDiff(*_git_header_paths(line[len("diff --git "):]))
            files.append(current)
            hunk, last, line_count = None, None, 0
            continue
        if current is None:
            continue
        if line.startswith("@@ "):
            match = _HUNK_HEADER.match(line)
            if match is None:
                continue
            old_start, old_count, new_start, new_count = (
                int(match.group(1)), int(match.group(2) or 1), int(match.group(3)), int(match.group(4) or 1))
            hunk = Hunk(old_start, old_count, new_start, new_count, line)
            current.hunks.append(hunk)
            old_left, new_left = old_count, new_count
            old_no, new_no = old_start, new_start
            last = None
        elif hunk is None:
            _read_extended_header(current, line)
    if current is not None:
        _finish(current, line_count)
    return files


def _read_extended_header(diff: FileDiff, line: str) -> None:
    if line.startswith("--- "):
        name = _unquote(line[4:])
        if name == "/dev/null":
            diff.old_path, diff.status = None, ADDED
        elif name.startswith("a/"):
            diff.old_path = name[2:]
    elif line.startswith("+++ "):
        name = _unquote(line[4:])
        if name == "/dev/null":
            diff.status = DELETED
        elif name.startswith("b/"):
            diff.path = name[2:]
    elif line.startswith("new file mode "):
        diff.status, diff.new_mode, diff.old_path = ADDED, line[14:], None
    elif line.startswith("deleted file mode "):
        diff.status, diff.old_mode = DELETED, line[18:]
    elif line.startswith("old mode "):
        diff.old_mode = line[9:]
    elif line.startswith("new mode "):
        diff.new_mode = line[9:]
    elif line.startswith("rename from "):
        diff.status, diff.old_path = RENAMED, _unquote(line[12:])
    elif line.startswith("rename to "):
        diff.path = _unquote(line[10:])
    elif line.startswith("copy from "):
        diff.status, diff.old_path = COPIED, _unquote(line[10:])
    elif line.startswith("copy to "):
        diff.path = _unquote(line[8:])
    elif line.startswith("index "):
        # "index abc..def 100644": the mode of an unchanged-mode file.
        mode = line.rpartition(" ")[2]
        if mode.isdigit() and diff.new_mode is None:
            diff.old_mode = diff.old_mode or mode
            diff.new_mode = mode
    elif line.startswith("Binary files ") or line == "GIT binary patch":
        diff.is_binary = True
        if diff.status == MODIFIED:
            if " /dev/null and " in line:
                diff.status, diff.old_path = ADDED, None
            elif line.endswith(" and /dev/null differ"):
                diff.status = DELETED


def _finish(diff: FileDiff, line_count: int) -> None:
    if line_count > MAX_DIFF_LINES:
        diff.is_too_large = True
    if diff.is_too_large:
        diff.hunks = []
        diff.summary = f"The diff has {line_count:,} lines, more than the {MAX_DIFF_LINES:,} shown."
        return
    for hunk in diff.hunks:
        mark_intraline(hunk.lines)


def change_blocks(lines: list[DiffLine]) -> Iterator[tuple[int, int, int]]:
    """Each block of changed lines of a hunk as ``(start, middle, end)``: the removed lines
    ``lines[start:middle]`` and the added lines ``lines[middle:end]`` that follow them (either
    part may be empty). Removed and added lines are paired in order: ``start + k`` with
    ``middle + k``."""
    i, count = 0, len(lines)
    while i < count:
        if lines[i].kind not in ("-", "+"):
            i += 1
            continue
        start = i
        while i < count and lines[i].kind == "-":
            i += 1
        middle = i
        while i < count and lines[i].kind == "+":
            i += 1
        yield start, middle, i


def mark_intraline(lines: list[DiffLine]) -> None:
    """Pair each block of removed lines with the added lines that follow it, in order, and mark
    the characters that changed within each pair."""
    for start, middle, end in change_blocks(lines):
        for old, new in zip(lines[start:middle], lines[middle:end]):
            old.intraline, new.intraline = changed_ranges(old.text, new.text)


def changed_ranges(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The changed ``(start, end)`` character ranges of ``old`` and of ``new``, matched word by
    word; empty for lines over MAX_INTRALINE_CHARS or with nothing in common."""
    if len(old) > MAX_INTRALINE_CHARS or len(new) > MAX_INTRALINE_CHARS:
        return [], []
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    opcodes = matcher.get_opcodes()
    if not any(tag == "equal" and not (a[i1:i2] and "".join(a[i1:i2]).isspace())
               for tag, i1, i2, _, _ in opcodes):
        return [], []
    a_at, b_at = _offsets(a), _offsets(b)
    old_ranges: list[tuple[int, int]] = []
    new_ranges: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        if i2 > i1:
            old_ranges.append((a_at[i1], a_at[i2]))
        if j2 > j1:
            new_ranges.append((b_at[j1], b_at[j2]))
    return old_ranges, new_ranges


def _offsets(tokens: list[str]) -> list[int]:
    offsets = [0]
    for token in tokens:
        offsets.append(offsets[-1] + len(token))
    return offsets


def _untracked_diff(repo: Repository, rel: str, size: int | None, cancel: CancelToken | None) -> FileDiff:
    if size is None:
        raise GitError(f"{rel} is neither tracked nor a file in the worktree; refresh the status.")
    if size > MAX_FILE_BYTES:
        return _too_large(FileDiff(rel, None, status=ADDED, source=WORKTREE_VS_INDEX), None, size)
    # --no-index exits 1 when the files differ, which is the point here.
    result = repo.run(["diff", "--no-index", *_DIFF_OPTIONS, "--", os.devnull, rel], check=False, cancel=cancel)
    if result.returncode not in (0, 1):
        raise GitError(f"Could not show the new file {rel}: {result.stderr.strip() or 'git diff failed'}",
                       details=result.stderr)
    return _single(parse_diff(_decode(result.stdout)), rel, WORKTREE_VS_INDEX, None, size, ADDED)


def _single(files: list[FileDiff], rel: str, source: str, old_size: int | None, new_size: int | None,
            status: str | None = None) -> FileDiff:
    diff = files[0] if files else FileDiff(rel, rel, status=UNCHANGED)
    diff.path = rel
    diff.source, diff.old_size, diff.new_size = source, old_size, new_size
    if status:
        diff.status, diff.old_path = status, None
    if diff.is_binary:
        diff.summary = _size_summary("Binary file", old_size, new_size)
    return diff


def _too_large(diff: FileDiff, old_size: int | None, new_size: int | None) -> FileDiff:
    diff.is_too_large, diff.old_size, diff.new_size = True, old_size, new_size
    diff.summary = _size_summary(f"Too large to show (over {_human(MAX_FILE_BYTES)})", old_size, new_size)
    return diff


def _size_summary(what: str, old_size: int | None, new_size: int | None) -> str:
    old = "absent" if old_size is None else _human(old_size)
    new = "absent" if new_size is None else _human(new_size)
    return f"{what}: {old} → {new}"


def _human(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _is_tracked(repo: Repository, rel: str) -> bool:
    # An unmerged path has no stage-0 entry (":path" is missing) but is tracked.
    return bool(repo.run(["ls-files", "-z", "--", rel], env=_LITERAL).stdout)


def _parse_raw(text: str) -> list[tuple[str, str, str, str | None, str]]:
    """``git diff --raw -z`` → (status, old_oid, new_oid, old_path, new_path)."""
    records = text.split("\0")
    entries = []
    i = 0
    while i < len(records):
        record = records[i]
        i += 1
        if not record.startswith(":"):
            continue
        _, _, old_oid, new_oid, letter = record[1:].split(" ")
        first = records[i]
        i += 1
        if letter[0] in "RC":
            second = records[i]
            i += 1
            entries.append((RENAMED if letter[0] == "R" else COPIED, old_oid, new_oid, first, second))
        else:
            status = {"A": ADDED, "D": DELETED}.get(letter[0], MODIFIED)
            entries.append((status, old_oid, new_oid, None if status == ADDED else first, first))
    return entries


def _git_header_paths(rest: str) -> tuple[str, str | None]:
    """(path, old_path) from what follows ``diff --git ``; the ---/+++ and rename lines that come
    next override it when the names are ambiguous (names with " b/" in them)."""
    if rest.startswith('"'):
        old, _, tail = _split_quoted(rest)
        new = _unquote(tail.lstrip(" "))
        return new[2:], old[2:]
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return _unquote(rest[start + 1:])[2:], rest[:start][2:]
    # "a/P b/P": the same name twice.
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half:half + 3] == " b/" and rest[2:half] == rest[half + 3:]:
        return rest[2:half], rest[2:half]
    old, _, new = rest.partition(" b/")
    return new, old[2:]


def _split_quoted(text: str) -> tuple[str, int, str]:
    i = 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return _unquote(text[:i + 1]), i, text[i + 1:]
        i += 1
    return _unquote(text), len(text), ""


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(name: str) -> str:
    """A name as git prints it: C-quoted when it has special characters; a tab after names with
    spaces."""
    if name.endswith("\t"):
        name = name[:-1]
    if not (name.startswith('"') and name.endswith('"') and len(name) >= 2):
        return name
    body = name[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8", errors="surrogateescape")
            i += 1
            continue
        following = body[i + 1:i + 2]
        if following in _ESCAPES:
            out.append(_ESCAPES[following])
            i += 2
        elif following.isdigit():
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            out += following.encode()
            i += 2
    return out.decode("utf-8", errors="surrogateescape")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
