"""The job process of a model tool: ``python -m workbench.modeltools.job``.

A tool window (and ``workbench model``) runs each tool in such a process, so that Cancel can end
it whatever it is doing and a crash of onnxruntime or MNN takes no window with it.

The protocol, both ways:

- stdin: one ``ToolInvocation.to_json()`` object, then end of file.
- stdout: events, one JSON object a line (EVENTS below):

  ``{"event": "stage", "name", "index", "count"}``  a named stage of the tool begins
  ``{"event": "progress", "fraction"}``             progress inside the stage, 0 to 1
  ``{"event": "log", "text"}``                      a line for the log
  ``{"event": "partial", "path"}``                  a temporary output file is about to be
                                                    written; whoever kills the job removes it
  ``{"event": "result", "report"}``                 ``ToolReport.to_json()``; exit status 0
  ``{"event": "error", "message", "cancelled"}``    exit status 1 for an error the user can act
                                                    on or a cancel, 2 for a bug in the tool

- stderr: the log: Workbench's loggers, warnings, anything a library prints, a bug's traceback.
- SIGTERM (or SIGINT): cancel. The tool stops at its next check and removes what it started to
  write; a tool inside a long C call is killed by the parent after a grace period.

The process lowers its own priority, ends itself (as a cancel) when nobody reads its events any
more, and ends at once after its last event, without the interpreter's slow teardown.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

EVENTS = ("stage", "progress", "log", "partial", "result", "error")

# Exit statuses.
SUCCEEDED, FAILED, CRASHED = 0, 1, 2


class EventStream:
    """Writes events as JSON lines to a file descriptor, whole lines only, from any thread.

    When the reader has gone (the window closed, the terminal died), ``on_lost`` is called once
    and later events are dropped."""

    def __init__(self, fd: int, on_lost=lambda: None):
        self._fd = fd
        self._lock = threading.Lock()
        self._on_lost = on_lost
        self.lost = False

    def emit(self, event: dict) -> None:
        data = (json.dumps(event, ensure_ascii=False, default=_plain) + "\n").encode("utf-8")
        with self._lock:
            if self.lost:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError:
                self.lost = True
        if self.lost:
            self._on_lost()


def _plain(value):
    """A value JSON cannot hold as it is: NumPy numbers and arrays as numbers and lists, the rest
    (paths) as text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _own_process_group() -> None:
    # Started by a QProcess, the job would share the window's process group; in one of its own,
    # a cancel can signal it together with every process the tool started (and nothing else).
    # Started with start_new_session it already leads one, and this fails harmlessly.
    with contextlib.suppress(OSError):
        os.setsid()


def _private_event_fd() -> int:
    """A duplicate of the original stdout for the events, with fd 1 pointed at stderr: C and C++
    libraries (onnxruntime, MNN's converter) print to fd 1 directly, and what they print must
    land in the log, never in the middle of the event stream. The duplicate is not inherited by
    the tool's own child processes."""
    sys.stdout.flush()
    events_fd = os.dup(1)
    os.dup2(2, 1)
    # print() of a tool now goes to the log too; line by line, so it interleaves with stderr.
    sys.stdout.reconfigure(line_buffering=True)
    return events_fd


def _lower_priority() -> None:
    # Tools keep a core busy for seconds to minutes. The machines Workbench runs on may have two
    # cores, and several jobs at once would take the time the windows need to repaint; at a lower
    # priority the windows stay smooth and the jobs still get every cycle nobody else wants.
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("workbench")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logging.captureWarnings(True)


def _read_invocation():
    from workbench.modeltools.params import ToolInvocation

    data = json.loads(sys.stdin.buffer.read() or b"null")
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    return ToolInvocation.from_json(data)


def run_job(events: EventStream, context) -> int:
    """Read the invocation, run it, report the outcome as the last event; the exit status."""
    from workbench.modeltools import outputs
    from workbench.modeltools.errors import ModelToolError, ToolCancelled
    from workbench.modeltools.running import run_tool

    try:
        invocation = _read_invocation()
    except (ValueError, KeyError, TypeError) as exc:
        events.emit({"event": "error", "cancelled": False,
                     "message": f"the tool job got no tool invocation on its input ({exc})"})
        return CRASHED

    partials: list[Path] = []

    def announce(path: Path) -> None:
        partials.append(Path(path).absolute())
        events.emit({"event": "partial", "path": str(partials[-1])})

    outputs.partial_observers.append(announce)
    try:
        report = run_tool(invocation, events.emit, context)
        events.emit({"event": "result", "report": report.to_json()})
        return SUCCEEDED
    except ModelToolError as exc:
        events.emit({"event": "error", "message": str(exc), "cancelled": isinstance(exc, ToolCancelled)})
        return FAILED
    except BaseException as exc:  # a bug (or SystemExit from a library): the log gets the traceback
        traceback.print_exc()
        events.emit({"event": "error", "cancelled": False,
                     "message": f"the {invocation.tool} tool failed unexpectedly: {type(exc).__name__}: "
                                f"{exc}; the log has the details"})
        return CRASHED
    finally:
        outputs.partial_observers.remove(announce)
        # atomic_output removes its temporary file itself; this catches one a tool left behind
        # some other way, so no job that ends by itself leaves a .partial file.
        for path in partials:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def main() -> int:
    _own_process_group()
    events_fd = _private_event_fd()
    _lower_priority()
    _log_to_stderr()
    from workbench.modeltools.context import ToolContext

    context = ToolContext()
    # Cancel sets the flag the tool checks between steps. A tool inside a long C call sees it
    # only when the call returns; the parent kills the process group if that takes too long.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, frame: context.cancel())
    events = EventStream(events_fd, on_lost=context.cancel)
    status = run_job(events, context)
    sys.stderr.flush()
    return status


def exit_at_once(status: int) -> None:
    """End the process with ``status`` without the interpreter's teardown. The outcome has been
    sent and every output is in place; with torch and onnxruntime loaded the teardown takes
    seconds, which the window or the terminal would spend waiting at 100 %."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_at_once(main())
