"""Quit Workbench: the hub asks each window, one after another, to close the way its user would.

A window that stays open (its user pressed Cancel on a question) stops the quit there: the
windows not asked yet stay open, and so does the hub. Training and cluster runs are not windows:
they go on.
"""

from __future__ import annotations

import logging
from typing import Callable

from PySide6.QtCore import QObject

from workbench.ipc import messages
from workbench.ipc.connection import RpcConnection
from workbench.ipc.errors import RpcError

log = logging.getLogger("workbench.hub")

# How long one window may take to close; it may be waiting for its user to answer a question.
ASK_TIMEOUT_MS = 3_600_000


class QuitAll(QObject):
    """Closes the windows of ``links`` in order; ``on_done`` gets ``{"quit": True}`` when all
    have closed, or ``{"quit": False, "kept_open": window_id}``."""

    def __init__(self, links: list[tuple[str, RpcConnection]], on_done: Callable[[dict], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self._queue = list(links)
        self._on_done = on_done

    def start(self) -> None:
        self._ask_next()

    def _ask_next(self) -> None:
        while self._queue:
            window_id, link = self._queue.pop(0)
            if link.is_open:  # else it has gone since: nothing to close
                link.request(messages.WINDOW_QUIT, {},
                             on_result=lambda result, wid=window_id: self._answered(wid, result),
                             on_error=lambda error, wid=window_id, l=link: self._failed(wid, l, error),
                             timeout_ms=ASK_TIMEOUT_MS)
                return
        self._on_done({"quit": True})

    def _answered(self, window_id: str, result: object) -> None:
        if isinstance(result, dict) and result.get("closed") is False:
            log.info("Quit stopped: window %s stays open", window_id)
            self._on_done({"quit": False, "kept_open": window_id})
        else:
            self._ask_next()

    def _failed(self, window_id: str, link: RpcConnection, error: RpcError) -> None:
        if not link.is_open:
            self._ask_next()  # its process ended before its answer got out: it closed
        else:
            log.warning("Quit stopped: window %s did not close (%s)", window_id, error.message)
            self._on_done({"quit": False, "kept_open": window_id})
