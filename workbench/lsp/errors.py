"""The language server capability's error type."""

from __future__ import annotations


class LanguageServerError(Exception):
    """The language server cannot do what was asked; the message says why and what to do."""
