"""The agent's log: to standard error, to ``agent.log`` in its data folder, and as ``log``
frames to every connection that sent ``logs.subscribe``.

A slow subscriber never slows the agent: each has a bounded queue and a sending thread of its
own, and lines that do not fit are dropped (and counted).
"""

from __future__ import annotations

import logging
import logging.handlers
import queue
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

from workbench_device.protocol import Err, Msg, ProtocolError
from workbench_device.runtimes import console_lock

LOGGER = "workbench_device"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}
QUEUE_LINES = 1000

# Which agent a thread works for, so that agents sharing a process (tests, a host that embeds
# one) each stream only their own lines.
context = threading.local()


def say(line: str) -> None:
    """Print ``line`` for the person running the agent (standard output, flushed)."""
    with console_lock:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # nobody reads the output any more (the terminal or pipe is gone): serve on


def level_of(name: Any) -> int:
    if name is None:
        return logging.INFO
    if isinstance(name, str) and name.lower() in LEVELS:
        return LEVELS[name.lower()]
    raise ProtocolError(Err.BAD_REQUEST, f"'level' must be one of {', '.join(LEVELS)}")


def level_name(level: int) -> str:
    for name, value in sorted(LEVELS.items(), key=lambda item: -item[1]):
        if level >= value:
            return name
    return "debug"


class LogSubscription:
    """One connection's stream of log frames."""

    def __init__(self, send: Any, level: int):
        self.level = level
        self.dropped = 0
        self._send = send
        self._queue: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue(QUEUE_LINES)
        self._thread = threading.Thread(target=self._pump, name="wb-device-log", daemon=True)

    def start(self) -> None:
        """Begin sending (lines that came before wait in the queue until then)."""
        self._thread.start()

    def offer(self, frame: Dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(frame)
        except queue.Full:
            self.dropped += 1

    def _pump(self) -> None:
        while True:
            frame = self._queue.get()
            if frame is None:
                return
            if self.dropped:
                frame = dict(frame, dropped=self.dropped)
                self.dropped = 0
            try:
                self._send(frame)
            except (OSError, ValueError, ProtocolError):
                return  # the connection is gone; its handler cleans up

    def stop(self) -> None:
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            # Make room for the stop marker: the lines left would go to a closing connection.
            try:
                self._queue.get_nowait()
            except queue.Empty:
                pass
            self._queue.put_nowait(None)


class LogHub(logging.Handler):
    """A logging handler that copies records to the subscriptions of one agent."""

    def __init__(self, owner: object):
        super().__init__(logging.DEBUG)
        self.owner = owner
        self._lock_subs = threading.Lock()
        self._subs: List[LogSubscription] = []
        self.setFormatter(logging.Formatter("%(message)s"))

    def subscribe(self, send: Any, level: int) -> LogSubscription:
        """A subscription that collects lines at once and sends them after its ``start()``."""
        subscription = LogSubscription(send, level)
        with self._lock_subs:
            self._subs.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Optional[LogSubscription]) -> None:
        if subscription is None:
            return
        with self._lock_subs:
            if subscription in self._subs:
                self._subs.remove(subscription)
        subscription.stop()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(context, "agent", self.owner) is not self.owner:
            return
        with self._lock_subs:
            subs = [s for s in self._subs if record.levelno >= s.level]
        if not subs:
            return
        try:
            message = self.format(record)
        except Exception:  # a bad format string in a log call must not break a connection
            message = str(record.msg)
        frame = {"type": Msg.LOG, "time": record.created, "level": level_name(record.levelno),
                 "logger": record.name, "message": message}
        for subscription in subs:
            subscription.offer(frame)


def setup_logging(data_dir: Optional[Path], verbose: bool = False) -> None:
    """Log the agent's lines to standard error and to ``data_dir/agent.log`` (rotated)."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.DEBUG)
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.INFO)
    console.setFormatter(formatter)
    logger.addHandler(console)
    if data_dir is not None:
        Path(data_dir).mkdir(parents=True, exist_ok=True)
        to_file = logging.handlers.RotatingFileHandler(
            str(Path(data_dir) / "agent.log"), maxBytes=2 * 1024 * 1024, backupCount=2,
            encoding="utf-8")
        to_file.setLevel(logging.DEBUG)
        to_file.setFormatter(formatter)
        logger.addHandler(to_file)
