"""Providers another capability registers for the files it understands, by suffix or name.

The project window keeps one registry per kind of help the editor asks for (diagnostics,
completions, hovers); a capability registers a plain function for ``".hparams"`` (say) and every
editor of such a file, open now or later, uses it. Qt-free.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Generic, TypeVar

Provider = TypeVar("Provider")


class FileProviders(Generic[Provider]):
    """The providers of one kind, by file suffix (``".hparams"``) or exact file name."""

    def __init__(self) -> None:
        self._providers: dict[str, Provider] = {}
        self._listeners: list[Callable[[str, Provider], None]] = []

    def register(self, pattern: str, provider: Provider) -> None:
        """Serve files whose suffix (``".hparams"``) or name (``"workbench.toml"``) is ``pattern``."""
        self._providers[pattern.lower()] = provider
        for listener in self._listeners:
            listener(pattern, provider)

    def on_registered(self, listener: Callable[[str, Provider], None]) -> None:
        """Call ``listener(pattern, provider)`` for each provider registered from now on (so
        files already open get it too)."""
        self._listeners.append(listener)

    def provider_for(self, path: Path | str) -> Provider | None:
        path = Path(path)
        return self._providers.get(path.name.lower()) or self._providers.get(path.suffix.lower())

    def matches(self, pattern: str, path: Path | str) -> bool:
        path = Path(path)
        return pattern.lower() in (path.name.lower(), path.suffix.lower())
