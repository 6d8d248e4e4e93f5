"""Problems found in a file, shown in its editor as underlines with a tooltip.

Another capability registers a *provider* for the file names it understands (``.hparams``, say);
the editor calls it with the buffer's text a moment after the user stops typing, in a worker
thread, and draws what it returns. Qt-free: a provider is a plain function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.editor.providers import FileProviders

log = logging.getLogger(__name__)

SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class EditorDiagnostic:
    """One problem: on 1-based ``line``, columns [``start``, ``end``) (0-based) of that line.

    An empty span (``start == end``) marks the whole line. ``source`` names the checker
    ("pyflakes"), for lists of problems."""

    line: int
    start: int
    end: int
    message: str
    severity: str = "error"
    source: str = ""


DiagnosticsProvider = Callable[[str, Path], list[EditorDiagnostic]]
"""``provider(text, path) -> diagnostics``; called off the GUI thread, may read files."""


class DiagnosticsProviders(FileProviders[DiagnosticsProvider]):
    """The diagnostics providers of one window, by file suffix (``".hparams"``) or exact file name."""


def run_provider(provider: DiagnosticsProvider, text: str, path: Path) -> list[EditorDiagnostic]:
    """The provider's diagnostics; one that fails reports nothing (and is logged), so a broken
    checker never stops anyone editing."""
    try:
        return list(provider(text, path))
    except Exception:  # a provider's bug must not reach the editor
        log.exception("Checking %s failed", path)
        return []


def diagnostic_at(diagnostics: list[EditorDiagnostic], line: int, column: int | None = None) -> EditorDiagnostic | None:
    """The diagnostic on 1-based ``line`` (under 0-based ``column`` when given); errors before
    warnings."""
    found = [d for d in diagnostics if d.line == line and (
        column is None or d.start == d.end or d.start <= column <= d.end)]
    found.sort(key=lambda d: SEVERITIES.index(d.severity) if d.severity in SEVERITIES else len(SEVERITIES))
    return found[0] if found else None
