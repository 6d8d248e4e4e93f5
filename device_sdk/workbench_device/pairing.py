"""Pairing: the 6-digit code the agent prints, the lock after wrong guesses, and the hosts that
paired (``paired_hosts.json``: host id -> secret, readable by the agent's user only).

The code works like Android's wireless-debugging code: whoever can read the agent's output may
pair. Five wrong codes in a row lock pairing for a minute (whoever sends them, on whatever
connection), so guessing a code takes months; a successful pairing replaces the code.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import os
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Optional

from workbench_device.protocol import Err, ProtocolError, new_secret

log = logging.getLogger(__name__)

CODE_DIGITS = 6
WRONG_CODES_BEFORE_LOCK = 5
LOCK_SECONDS = 60.0


def new_code() -> str:
    return f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"


def write_private_json(path: Path, data: object) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=str(path.parent))
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class PairedHosts:
    """The hosts that paired with this agent and their secrets, kept in ``path``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._secrets: Dict[str, str] = self._read()

    def _read(self) -> Dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s is unreadable (%s); no host is paired until one pairs again",
                        self.path, exc)
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if isinstance(v, str)}

    def secret_for(self, host_id: str) -> Optional[str]:
        with self._lock:
            return self._secrets.get(host_id)

    def __contains__(self, host_id: object) -> bool:
        with self._lock:
            return host_id in self._secrets

    def __len__(self) -> int:
        with self._lock:
            return len(self._secrets)

    def add(self, host_id: str) -> str:
        """A new secret for ``host_id`` (replacing any it had), saved before it is returned."""
        secret = new_secret()
        with self._lock:
            updated = dict(self._secrets)
            updated[host_id] = secret
            write_private_json(self.path, updated)
            self._secrets = updated
        return secret


class Pairing:
    """The current code and the lock against guessing it. ``on_new_code(code)`` runs whenever
    the code changes (the agent prints it)."""

    def __init__(self, hosts: PairedHosts, lock_seconds: float = LOCK_SECONDS,
                 wrong_codes_before_lock: int = WRONG_CODES_BEFORE_LOCK,
                 on_new_code: Optional[Callable[[str], None]] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.hosts = hosts
        self.lock_seconds = lock_seconds
        self.wrong_codes_before_lock = wrong_codes_before_lock
        self.on_new_code = on_new_code
        self._clock = clock
        self._lock = threading.Lock()
        self._code = new_code()
        self._wrong = 0
        self._locked_until = 0.0

    @property
    def code(self) -> str:
        with self._lock:
            return self._code

    def seconds_locked(self) -> int:
        """Whole seconds until pairing opens again (0 when it is open)."""
        with self._lock:
            return self._seconds_locked()

    def _seconds_locked(self) -> int:
        left = self._locked_until - self._clock()
        return int(math.ceil(left)) if left > 0 else 0

    def pair(self, host_id: str, host_name: str, code: str) -> str:
        """The new secret of ``host_id`` when ``code`` is the current code; ProtocolError
        bad_code (with ``attempts_left``) or pairing_locked (with ``seconds``)."""
        with self._lock:
            locked = self._seconds_locked()
            if locked:
                raise ProtocolError(Err.PAIRING_LOCKED, f"pairing is locked for {locked} s after "
                                    f"{self.wrong_codes_before_lock} wrong codes; wait, then "
                                    "type the code the device shows", seconds=locked)
            if not hmac.compare_digest(self._code.encode(), str(code).strip().encode()):
                self._wrong += 1
                if self._wrong >= self.wrong_codes_before_lock:
                    self._wrong = 0
                    self._locked_until = self._clock() + self.lock_seconds
                    log.warning("pairing locked for %g s after %d wrong codes (last from %s)",
                                self.lock_seconds, self.wrong_codes_before_lock, host_name)
                    raise ProtocolError(
                        Err.PAIRING_LOCKED, f"wrong pairing code; pairing is now locked for "
                        f"{int(math.ceil(self.lock_seconds))} s",
                        seconds=int(math.ceil(self.lock_seconds)))
                left = self.wrong_codes_before_lock - self._wrong
                raise ProtocolError(Err.BAD_CODE, "wrong pairing code; type the 6 digits the "
                                    f"device shows ({left} tries before pairing locks)",
                                    attempts_left=left)
            secret = self.hosts.add(host_id)
            self._wrong = 0
            self._code = new_code()
            code_now = self._code
        log.info("paired with host %s (%s); the pairing code changed", host_name, host_id)
        if self.on_new_code is not None:
            self.on_new_code(code_now)
        return secret
