"""The progress line every ``workbench`` command shows on stderr.

On a terminal: one line redrawn in place (the stage, a bar and the percentage when it is
known), the log printed above it, and the line cleared at the end so what follows starts clean.
Elsewhere (a pipe, a file, CI): one line as each stage begins, and the log; a stage whose text
counts its way (``12 MB of 80 MB``) prints a line more as it passes each quarter, or when
PROGRESS_EVERY_S went by since its last line, so a long upload says how far it is without a
line for every megabyte.
"""

from __future__ import annotations

import sys
import time

from workbench.clikit.terminal import is_terminal, line_width

# Off a terminal, a stage's changing text is printed at most this often (and at each quarter).
PROGRESS_EVERY_S = 5.0
BAR_WIDTH = 20


class ProgressLine:
    """Shows progress on ``stream`` (default: stderr), as the module says.

    It is a service's progress callback (``ProgressLine(...)(Progress(...))``). A report of
    declared stages (``steps``) names its stage; any other's stage is its text before its
    counts (``Syncing data`` of ``Syncing data: 3 of 9 files``), prefixed with the report's
    ``stage`` attribute when it has one (a cluster start's)."""

    def __init__(self, stream=None, interactive: bool | None = None, clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = is_terminal(self.stream) if interactive is None else interactive
        self._clock = clock
        self._text = ""
        self._index = -1
        self._count = 0
        self._fraction: float | None = None
        self._step: tuple[str, str] | None = None
        self._drawn = ""          # on a terminal: the line drawn, without its newline
        self._printed = ""        # elsewhere: the last line printed
        self._printed_at = 0.0
        self._quarters = 0        # quarters of the stage passed when its last line was printed

    # --- what is reported

    def __call__(self, report) -> None:
        """A service's report (a ``workbench.tasks.Progress``)."""
        steps = getattr(report, "steps", None)
        if steps:  # work of declared stages: the message is the stage's name
            index = getattr(report, "step", None)
            step = (str(index), report.message)
            if step != self._step:
                self.begin(report.message, -1 if index is None else index, steps, report.fraction)
                self._step = step
            else:
                self.update(report.fraction)
            return
        stage = getattr(report, "stage", "")
        text = f"{stage}: {report.message}" if stage else report.message
        step = (stage, stage_name(report.message))
        if step != self._step:
            self.begin(text, fraction=report.fraction)
            self._step = step
        else:
            self.update(report.fraction, text)

    def begin(self, name: str, index: int = -1, count: int = 0, fraction: float | None = None) -> None:
        """A stage begins: ``name``, and with ``count`` stages, it is the ``index``-th (from 0)."""
        self._text, self._index, self._count = name, index if index is not None else -1, count or 0
        self._step = None
        self._fraction = 0.0 if fraction is None and self._staged() else fraction
        self._quarters = quarters(self._fraction)
        if self.interactive:
            self._draw()
        else:
            self._print(self._label())

    def update(self, fraction: float | None, text: str | None = None) -> None:
        """How far the stage is (``fraction`` of it; None: unknown), and its new text if any."""
        if text is not None:
            self._text = text
        self._fraction = fraction
        if self.interactive:
            self._draw()
            return
        label = self._label()
        passed = quarters(fraction)
        if label != self._printed and (passed > self._quarters
                                       or self._clock() - self._printed_at >= PROGRESS_EVERY_S):
            self._quarters = max(self._quarters, passed)
            self._print(label)

    def log(self, text: str) -> None:
        """A line of the work's log: above the progress line on a terminal."""
        if self.interactive and self._drawn:
            self._write("\r\x1b[K" + text + "\n" + self._drawn)
        else:
            self._write(text + "\n")

    def close(self) -> None:
        """Clear the progress line, so what follows (the report, an error) starts on a clean line."""
        if self.interactive and self._drawn:
            self._write("\r\x1b[K")
            self._drawn = ""

    # --- how it looks

    def _staged(self) -> bool:
        return self._index >= 0 and self._count > 0

    def _label(self) -> str:
        if self._staged():
            return f"[{self._index + 1}/{self._count}] {self._text}"
        return self._text

    def _percent(self) -> float | None:
        if self._staged():
            return 100.0 * (self._index + (self._fraction or 0.0)) / self._count
        return None if self._fraction is None else 100.0 * self._fraction

    def _draw(self) -> None:
        line = self._label()
        percent = self._percent()
        if percent is not None:
            filled = round(BAR_WIDTH * percent / 100)
            line += f" [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {percent:3.0f}%"
        drawn = "\r" + line[:line_width()] + "\x1b[K"
        if drawn != self._drawn:
            self._drawn = drawn
            self._write(drawn)

    def _print(self, line: str) -> None:
        self._printed, self._printed_at = line, self._clock()
        self._write(line + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def stage_name(message: str) -> str:
    """The stage a report's message belongs to: its text before the counts (`` (…)``, ``: …``)."""
    return message.split(" (")[0].split(": ")[0]


def quarters(fraction: float | None) -> int:
    """How many quarters of the way ``fraction`` is: 0 to 4."""
    if fraction is None:
        return 0
    return max(0, min(4, int(fraction * 4 + 1e-9)))
