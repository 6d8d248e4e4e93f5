"""Find in Files: ripgrep over the project, its ``--json`` output read as it comes.

The ``ripgrep`` Python package puts the ``rg`` binary beside the interpreter, so no system package
is needed. rg respects ``.gitignore`` (also outside a Git repository: ``--no-require-git``),
skips hidden and binary files, and takes include and exclude globs. Results reach the caller a
file at a time, in batches, so a panel shows the first files while rg still walks the rest.
Qt-free.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.tasks import CancelToken, Cancelled

# VS Code stops at 20,000 results too: more is not something a person reads, and the panel
# would only grow slower.
MAX_MATCHES = 20_000
# Batches go to the caller at most this often (the first file goes at once), so a search with
# thousands of files costs the panel a few updates, not thousands: each repaints the list, and
# at 50 ms the repaints took a quarter of the time rg took (benchmarks/find.py).
BATCH_SECONDS = 0.15
# Workbench's own state (autosave, caches) is never something the user searches for.
ALWAYS_EXCLUDED = (".workbench/",)


class SearchError(Exception):
    """The search could not run: a pattern rg cannot read, a bad glob, no rg. The message says
    what is wrong."""


@dataclass(frozen=True)
class SearchQuery:
    """What to look for. ``include`` / ``exclude`` are globs as .gitignore writes them
    (``*.py``, ``tests/**``); a file must match one include (when any) and no exclude."""

    pattern: str
    regex: bool = False
    case_sensitive: bool = False
    whole_word: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Submatch:
    """One match inside a line: ``start`` / ``end`` are character offsets in ``LineMatch.text``,
    ``byte_start`` / ``byte_end`` byte offsets in the file."""

    start: int
    end: int
    byte_start: int
    byte_end: int
    text: str


@dataclass(frozen=True)
class LineMatch:
    """A line with at least one match; ``text`` without its line ending."""

    line: int
    text: str
    submatches: tuple[Submatch, ...]


@dataclass
class FileMatches:
    """Every match in one file; ``path`` is relative to the searched folder. ``is_utf8`` is
    False when rg had to show the file's bytes (its text is then only a preview)."""

    path: str
    lines: list[LineMatch] = field(default_factory=list)
    is_utf8: bool = True

    @property
    def match_count(self) -> int:
        return sum(len(line.submatches) for line in self.lines)


@dataclass(frozen=True)
class SearchSummary:
    """How a search ended."""

    files: int
    matches: int
    limit_hit: bool
    seconds: float


def ripgrep_binary() -> str:
    """The path of ``rg``: the one the ``ripgrep`` package installed beside this interpreter,
    else one on PATH. Raises SearchError when there is none."""
    name = "rg.exe" if os.name == "nt" else "rg"
    for folder in (Path(sys.executable).parent, Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin")):
        candidate = folder / name
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("rg")
    if found:
        return found
    raise SearchError("ripgrep (rg) is not installed: run `pip install ripgrep==14.1.0` in Workbench's "
                      "environment.")


def ripgrep_arguments(query: SearchQuery) -> list[str]:
    """The command line for ``query`` (after the binary), searching the current folder."""
    arguments = ["--json", "--no-config", "--no-require-git",
                 "--case-sensitive" if query.case_sensitive else "--ignore-case"]
    if not query.regex:
        arguments.append("--fixed-strings")
    if query.whole_word:
        arguments.append("--word-regexp")
    for glob in query.include:
        arguments += ["--glob", glob]
    for glob in (*query.exclude, *ALWAYS_EXCLUDED):
        arguments += ["--glob", "!" + glob]
    # -e keeps a pattern that starts with "-" a pattern; "." makes rg search the tree, never stdin.
    return arguments + ["-e", query.pattern, "--", "."]


def split_globs(text: str) -> tuple[str, ...]:
    """Globs typed in one field, separated by commas (``*.py, docs/**``)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _text_of(value: dict) -> tuple[str, bool]:
    """rg's ``{"text": ...}`` or ``{"bytes": base64}``, as text and whether it was UTF-8."""
    if "text" in value:
        return value["text"], True
    return base64.b64decode(value["bytes"]).decode("utf-8", errors="replace"), False


class JsonResultReader:
    """Turns rg's ``--json`` lines into ``FileMatches``, a file when its "end" message comes."""

    def __init__(self) -> None:
        import orjson  # fast enough that reading rg's output never outlasts rg

        self._loads = orjson.loads
        self._current: FileMatches | None = None
        self.matches = 0

    def feed(self, raw_line: bytes) -> FileMatches | None:
        """Read one line of output; returns the file it finishes, if it finishes one."""
        message = self._loads(raw_line)
        kind, data = message["type"], message["data"]
        if kind == "match":
            if self._current is None:
                self._current = FileMatches(_relative(_text_of(data["path"])[0]))
            self._current.lines.append(self._line(data))
            self.matches += len(data["submatches"])
        elif kind == "end":
            done, self._current = self._current, None
            return done
        return None

    def take_unfinished(self) -> FileMatches | None:
        """The file whose matches are being read, before its end (a search cut short)."""
        unfinished, self._current = self._current, None
        return unfinished

    def _line(self, data: dict) -> LineMatch:
        text, is_utf8 = _text_of(data["lines"])
        if not is_utf8:
            self._current.is_utf8 = False
        offset = data["absolute_offset"]
        encoded = text.encode("utf-8") if is_utf8 and not text.isascii() else None
        submatches = []
        for sub in data["submatches"]:
            start, end = sub["start"], sub["end"]
            if encoded is None:  # ASCII (or a preview): bytes and characters agree
                char_start, char_end = start, end
            else:
                char_start = len(encoded[:start].decode("utf-8", errors="replace"))
                char_end = char_start + len(encoded[start:end].decode("utf-8", errors="replace"))
            submatches.append(Submatch(char_start, char_end, offset + start, offset + end,
                                       _text_of(sub["match"])[0]))
        return LineMatch(data["line_number"], text.rstrip("\r\n"), tuple(submatches))


def _relative(path: str) -> str:
    return path[2:] if path.startswith("./") or path.startswith(".\\") else path


def search_files(root: Path | str, query: SearchQuery, on_files: Callable[[list[FileMatches]], None],
                 cancel: CancelToken | None = None, max_matches: int = MAX_MATCHES) -> SearchSummary:
    """Search the files under ``root`` for ``query``, calling ``on_files(batch)`` with files as
    rg finds them (from this thread). Stops after ``max_matches`` matches (``limit_hit``).
    Raises SearchError with rg's own words for a pattern or glob it cannot read, and Cancelled
    when ``cancel`` is set."""
    if not query.pattern:
        raise SearchError("Type the text to find.")
    started = time.monotonic()
    process = subprocess.Popen([ripgrep_binary(), *ripgrep_arguments(query)], cwd=str(root),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr_chunks: list[bytes] = []
    stderr_reader = threading.Thread(target=lambda: stderr_chunks.append(process.stderr.read()), daemon=True)
    stderr_reader.start()
    stop = threading.Event()
    if cancel is not None:
        threading.Thread(target=_terminate_on_cancel, args=(process, cancel, stop), daemon=True).start()
    reader = JsonResultReader()
    batch: list[FileMatches] = []
    files = 0
    last_sent = 0.0
    limit_hit = False
    try:
        for raw_line in process.stdout:
            if cancel is not None and cancel.cancelled:
                break
            done = reader.feed(raw_line)
            if done is None and reader.matches >= max_matches:
                limit_hit = True
                done = reader.take_unfinished()  # the file the limit cut short
            if done is None:
                continue
            batch.append(done)
            files += 1
            now = time.monotonic()
            if files == 1 or now - last_sent >= BATCH_SECONDS:
                on_files(batch)
                batch, last_sent = [], now
            if limit_hit:
                break
        if batch:
            on_files(batch)
    finally:
        stop.set()
        if process.poll() is None:
            process.terminate()
        process.stdout.close()
        status = process.wait()
        stderr_reader.join()
        process.stderr.close()
    if cancel is not None and cancel.cancelled:
        raise Cancelled()
    # 1 is "no match"; 2 with output means some files could not be read, which is no failure
    # of the search. 2 with nothing found and an error is a pattern or glob rg refused.
    if status == 2 and not limit_hit and files == 0:
        message = b"".join(stderr_chunks).decode("utf-8", errors="replace").strip()
        if message:
            raise SearchError(_readable_error(message))
    return SearchSummary(files, reader.matches, limit_hit, time.monotonic() - started)


def _readable_error(message: str) -> str:
    """rg's error as a line that says what is wrong and what to do, then rg's own words (the
    pattern as rg read it, a caret under the fault) after a blank line."""
    lines = [line[4:] if line.startswith("rg: ") else line for line in message.splitlines()]
    details = "\n".join(lines)
    if lines and lines[0].startswith("regex parse error"):
        fault = next((line[len("error:"):].strip() for line in lines if line.startswith("error:")), "")
        headline = (f"Not a valid regular expression{': ' + fault if fault else ''}. Fix the pattern, "
                    f"or turn off .* to find the text as typed.")
        return f"{headline}\n\n{details}"
    if lines and lines[0].startswith("error parsing glob"):
        return f"A file glob cannot be read: {details[len('error parsing glob '):]}. Fix it in the files to include or exclude."
    return details


def _terminate_on_cancel(process: subprocess.Popen, cancel: CancelToken, stop: threading.Event) -> None:
    # rg may walk for a long while without printing anything: the reader cannot notice a cancel
    # between lines then, so this watches for it and ends rg, which ends the reader's loop.
    while not stop.wait(0.05):
        if cancel.cancelled:
            if process.poll() is None:
                process.terminate()
            return
