"""What onnx, torch and their kin print, log and warn while a tool calls them, caught and made
short for the tool's log: the terminal stays clean, and a job's event stream (on a descriptor of
its own) is never interrupted by a C++ library writing to descriptor 1.

Shared by every tool that calls an exporter or a converter (Convert, Sparsify's export).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

# The most lines of the libraries' chatter passed on to the log (which a terminal shows); a
# failing dynamo export prints whole graphs.
MAX_LOG_LINES = 40


@dataclass
class Chatter:
    """What ``captured_output`` caught besides text: the warnings raised inside, for callers
    that look for one kind (the TorchScript exporter's TracerWarning)."""

    warnings: list = field(default_factory=list)


# What the exporters say that tells a user nothing, dropped where it is said. torch.onnx logs a
# warning for each torchvision operator it cannot register when torchvision is not installed
# (a model cannot use operators of a library that is not there); torch pickles its tree specs
# through a deprecated class of its own, and warns about it.
HARMLESS_LOG_MESSAGES = {
    "torch.onnx._internal.exporter._registration": ("torchvision is not installed",),
}
HARMLESS_WARNINGS = ((FutureWarning, r".*isinstance\(treespec, LeafSpec\)"),)


class _HarmlessMessages:
    """A logging filter dropping the records HARMLESS_LOG_MESSAGES names."""

    def __init__(self, fragments: tuple[str, ...]):
        self.fragments = fragments

    def filter(self, record) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.fragments)


@contextlib.contextmanager
def harmless_messages_dropped() -> Iterator[None]:
    """Drop the exporters' known harmless log records and warnings for a while (see
    HARMLESS_LOG_MESSAGES); every other message passes."""
    import logging
    import warnings

    filters = []
    for name, fragments in HARMLESS_LOG_MESSAGES.items():
        logger = logging.getLogger(name)
        dropping = _HarmlessMessages(fragments)
        logger.addFilter(dropping)
        filters.append((logger, dropping))
    try:
        with warnings.catch_warnings():
            for category, message in HARMLESS_WARNINGS:
                warnings.filterwarnings("ignore", message=message, category=category)
            yield
    finally:
        for logger, dropping in filters:
            logger.removeFilter(dropping)


class _Transcript(io.StringIO):
    """What Python code prints while captured; each complete line also goes to ``on_line``
    (which the dynamo exporter's step lines move the progress bar with)."""

    def __init__(self, on_line: Callable[[str], None] | None = None):
        super().__init__()
        self._on_line = on_line
        self._pending = ""

    def write(self, text: str) -> int:
        written = super().write(text)
        if self._on_line is not None:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._on_line(line)
        return written


@contextlib.contextmanager
def captured_output(log: Callable[[str], None], on_line: Callable[[str], None] | None = None):
    """Whatever the exporters print, log or warn inside goes to ``log``, not the terminal,
    short and without the messages known to be harmless (``harmless_messages_dropped``).

    Python's streams are swapped, so are the streams of logging handlers writing to them (torch
    and onnxscript log through their own handlers), and file descriptors 1 and 2 point at a
    temporary file for the time, for C++ code. ``on_line`` sees each line Python code prints,
    as it is printed. Whatever is emitted inside must not go to descriptors 1 and 2 (a job
    writes its events to a descriptor of its own)."""
    import warnings

    chatter = Chatter()
    python_text = _Transcript(on_line)
    handlers = _stream_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    sink = tempfile.TemporaryFile()
    saved: dict[int, int] = {}
    for fd in (1, 2):
        try:
            saved[fd] = os.dup(fd)
            os.dup2(sink.fileno(), fd)
        except OSError:
            saved.pop(fd, None)
    for handler, _ in handlers:
        handler.setStream(python_text)
    try:
        with warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(python_text), contextlib.redirect_stderr(python_text):
            warnings.simplefilter("always")
            try:
                with harmless_messages_dropped():
                    yield chatter
            finally:
                chatter.warnings = list(caught)
    finally:
        for handler, stream in handlers:
            handler.setStream(stream)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        sink.seek(0)
        fd_text = sink.read().decode("utf-8", errors="replace")
        sink.close()
        lines = [f"{Path(w.filename).name}:{w.lineno}: {w.category.__name__}: {w.message}"
                 for w in chatter.warnings]
        _log_lines(log, python_text.getvalue() + "\n" + fd_text + "\n" + "\n".join(lines))


def _stream_handlers() -> list:
    """The logging handlers writing to this process's stdout or stderr, with their streams."""
    import logging

    consoles = {id(s) for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) if s}
    loggers = [logging.getLogger()] + [logger for logger in logging.root.manager.loggerDict.values()
                                       if isinstance(logger, logging.Logger)]
    found = []
    for logger in loggers:
        for handler in logger.handlers:
            if (type(handler) is logging.StreamHandler and id(handler.stream) in consoles
                    and all(handler is not h for h, _ in found)):
                found.append((handler, handler.stream))
    return found


def _log_lines(log: Callable[[str], None], text: str) -> None:
    """Pass the chatter on, short: a terminal shows the log. Repeated lines, the glog-style
    prefixes of torch's log lines and the "step..." lines that a "step... ✅" line repeats go."""
    lines: list[str] = []
    for line in clean_text(text).splitlines():
        line = _GLOG_PREFIX.sub("", line.rstrip())
        if not line.strip() or line in lines[-1:]:
            continue
        if lines and line.startswith(lines[-1]) and line.endswith(("✅", "❌")):
            lines[-1] = line
        else:
            lines.append(line)
    if len(lines) > MAX_LOG_LINES:
        lines = lines[:MAX_LOG_LINES] + [f"… ({len(lines) - MAX_LOG_LINES} more lines)"]
    if lines:
        log("\n".join(lines))


# --- Text ----------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# "W1130 11:47:44.171000 31491 " before torch's own log lines.
_GLOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+ \d+ ")


def clean_text(text: str) -> str:
    """``text`` without terminal colour codes (torch colours some of its messages)."""
    return _ANSI.sub("", text)


def first_line(value: Any, limit: int | None = None) -> str:
    """The first non-blank line of a message (or an exception's), without colour codes, at most
    ``limit`` characters; an exception without a message gives its type's name."""
    text = clean_text(str(value)).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return type(value).__name__ if isinstance(value, BaseException) else ""
