"""Completions and hover help that another capability provides for the files it understands.

A *completion provider* is asked where the caret is (``TextPosition``) when the user presses
Ctrl+Space, and again as they type; it answers with the span of the line to replace and the
candidates (``Completions``), or None for nothing to offer there. A *hover provider* is asked
about the position under the mouse and answers with the text of a tooltip, or None.

Both are called on the GUI thread, on every key for completions, so they must answer in well
under a millisecond from what they already hold (a provider that needs files reads them once
and keeps the result). A provider whose answer takes longer (a language server's) returns
``PENDING`` at once and later calls ``position.reply(answer)`` on the GUI thread with what it
would have returned; the editor drops a reply that comes after the text or the caret moved.
Qt-free: a provider is a plain function.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.editor.providers import FileProviders

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TextPosition:
    """A place in a file: 1-based ``line``, 0-based ``column`` in ``line_text`` (that line's text).

    ``explicit`` is True when the user asked for completions (Ctrl+Space), False when the
    editor asks on its own as they type: a provider then offers only what is clearly wanted."""

    path: Path
    line: int
    column: int
    line_text: str
    explicit: bool = False
    reply: Callable[[object], None] | None = field(default=None, compare=False, repr=False)
    """For a provider that answers later: call it on the GUI thread with the answer (see PENDING)."""


class _Pending:
    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()
"""What a provider returns when its answer comes later, through ``TextPosition.reply``."""


@dataclass(frozen=True)
class CompletionItem:
    """One candidate: ``text`` is inserted; ``label`` (default ``text``) is what the list shows,
    ``detail`` a short note beside it (a type, a default) and ``documentation`` its help."""

    text: str
    label: str = ""
    detail: str = ""
    documentation: str = ""

    @property
    def shown(self) -> str:
        return self.label or self.text


@dataclass(frozen=True)
class Completions:
    """The candidates for columns [``start``, ``end``) of the caret's line (0-based): what is
    typed from ``start`` to the caret filters them, and the chosen one replaces the span."""

    start: int
    end: int
    items: tuple[CompletionItem, ...] = field(default_factory=tuple)


CompletionProvider = Callable[[TextPosition], "Completions | _Pending | None"]
"""``provider(position) -> Completions | PENDING | None``; called on the GUI thread, must be quick."""

HoverProvider = Callable[[TextPosition], "str | _Pending | None"]
"""``provider(position) -> tooltip text | PENDING | None``; called on the GUI thread, must be quick."""


class CompletionProviders(FileProviders[CompletionProvider]):
    """The completion providers of one window, by file suffix or name."""


class HoverProviders(FileProviders[HoverProvider]):
    """The hover providers of one window, by file suffix or name."""


def ask_completions(provider: CompletionProvider, position: TextPosition) -> Completions | _Pending | None:
    """The provider's answer, checked; one that fails (or answers nonsense) offers nothing and
    is logged, so a broken provider never stops anyone typing."""
    try:
        found = provider(position)
    except Exception:  # a provider's bug must not reach the editor
        log.exception("Completing in %s failed", position.path)
        return None
    if found is PENDING:
        return PENDING
    return checked_completions(found, position)


def checked_completions(found, position: TextPosition) -> Completions | None:
    """``found`` when it is a usable answer at ``position`` (also for one that comes late)."""
    if not isinstance(found, Completions) or not found.items:
        return None
    if not 0 <= found.start <= position.column <= found.end <= len(position.line_text):
        log.warning("A completion provider for %s answered a span outside the line: %s",
                    position.path, (found.start, found.end))
        return None
    return found


def ask_hover(provider: HoverProvider, position: TextPosition) -> str | _Pending | None:
    """The provider's tooltip text (or PENDING); a failing provider shows none (and is logged)."""
    try:
        text = provider(position)
    except Exception:  # a provider's bug must not reach the editor
        log.exception("Hover help in %s failed", position.path)
        return None
    return text or None


def matching(items: tuple[CompletionItem, ...], typed: str) -> list[CompletionItem]:
    """The items whose label holds ``typed`` (case-insensitive), those starting with it first,
    each group in the provider's order."""
    typed = typed.lower()
    if not typed:
        return list(items)
    starting = [item for item in items if item.shown.lower().startswith(typed)]
    inside = [item for item in items if typed in item.shown.lower() and item not in starting]
    return starting + inside
