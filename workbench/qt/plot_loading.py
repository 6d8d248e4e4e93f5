"""pyqtgraph loaded off the GUI thread before the first plot needs it: its import takes a few
hundred milliseconds, which a window's first paint must not wait for."""

from __future__ import annotations

import sys
import threading

_preloading: list[threading.Thread] = []


def preload_pyqtgraph() -> None:
    """Start importing pyqtgraph on a background thread (once). Its import creates no QObject,
    only value types, so it is safe off the GUI thread; a later import on the GUI thread waits
    for this one instead of starting over."""
    if "pyqtgraph" in sys.modules or _preloading:
        return
    thread = threading.Thread(target=_import_pyqtgraph, name="pyqtgraph-import", daemon=True)
    _preloading.append(thread)
    thread.start()


def _import_pyqtgraph() -> None:
    try:
        import pyqtgraph  # noqa: F401
    except Exception:  # reported when a plot is built, on the GUI thread
        pass
