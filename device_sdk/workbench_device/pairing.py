"""Pairing: the 6-digit code the agent prints, the lock after wrong guesses, and the hosts that
paired (``paired_hosts.json``: host id -> secret, readable by the agent's user only).

The code works like Android's wireless-debugging code: whoever can read the agent's output may
pair. Five wrong codes in a row from one address lock pairing for that address for a minute, so
one guesser cannot lock the owner out; twenty wrong codes within a minute from all addresses
together lock it for everyone for ten minutes, so many addresses guessing at once cannot go
faster than a few codes a minute either, and guessing a code takes months. A successful pairing
replaces the code.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import math
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Deque, Dict, Optional

from workbench_device.atomic import replace_file
from workbench_device.protocol import Err, ProtocolError, new_secret

log = logging.getLogger(__name__)

CODE_DIGITS = 6
# One address: its fifth wrong code in a row locks pairing for it.
WRONG_CODES_BEFORE_LOCK = 5
LOCK_SECONDS = 60.0
# Every address together: this many wrong codes within GLOBAL_WINDOW_SECONDS lock pairing for
# everyone. One address alone cannot get there (at most 10 in a window, locks included).
GLOBAL_WRONG_CODES_BEFORE_LOCK = 20
GLOBAL_WINDOW_SECONDS = 60.0
GLOBAL_LOCK_SECONDS = 600.0
# An address's count of wrong codes is forgotten after this long without one (it keeps the
# table of addresses small; the global cap still bounds how fast anyone guesses).
FORGET_SECONDS = 3600.0


def new_code() -> str:
    return f"{secrets.randbelow(10 ** CODE_DIGITS):0{CODE_DIGITS}d}"


def write_private_json(path: Path, data: object) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
    replace_file(path, lambda out: out.write(text), mode=0o600, durable=True)


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


def source_of(peer: str) -> str:
    """The address whose wrong codes count together, from a peer's ``"host:port"``: an IPv4
    address, or an IPv6 /64 network (one machine can take any address in its /64)."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        if not address.is_loopback:
            return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


@dataclass
class _Guesses:
    """Wrong codes from one address."""

    wrong: int = 0
    last: float = 0.0
    locked_until: float = 0.0


class Pairing:
    """The current code and the locks against guessing it: one per address, one for everyone.
    ``on_new_code(code)`` runs whenever the code changes (the agent prints it)."""

    def __init__(self, hosts: PairedHosts, lock_seconds: float = LOCK_SECONDS,
                 wrong_codes_before_lock: int = WRONG_CODES_BEFORE_LOCK,
                 on_new_code: Optional[Callable[[str], None]] = None,
                 clock: Callable[[], float] = time.monotonic,
                 global_wrong_codes_before_lock: int = GLOBAL_WRONG_CODES_BEFORE_LOCK,
                 global_window_seconds: float = GLOBAL_WINDOW_SECONDS,
                 global_lock_seconds: float = GLOBAL_LOCK_SECONDS):
        self.hosts = hosts
        self.lock_seconds = lock_seconds
        self.wrong_codes_before_lock = wrong_codes_before_lock
        self.global_wrong_codes_before_lock = global_wrong_codes_before_lock
        self.global_window_seconds = global_window_seconds
        self.global_lock_seconds = global_lock_seconds
        self.on_new_code = on_new_code
        self._clock = clock
        self._lock = threading.Lock()
        self._code = new_code()
        self._sources: Dict[str, _Guesses] = {}
        self._recent: Deque[float] = deque()  # times of wrong codes from anyone, in the window
        self._locked_until = 0.0  # for everyone

    @property
    def code(self) -> str:
        with self._lock:
            return self._code

    def seconds_locked(self, peer: Optional[str] = None) -> int:
        """Whole seconds until pairing opens again for everyone, or for ``peer`` (a connection's
        ``"host:port"``) when given; 0 when it is open."""
        with self._lock:
            now = self._clock()
            left = self._locked_until - now
            if peer is not None:
                guesses = self._sources.get(source_of(peer))
                if guesses is not None:
                    left = max(left, guesses.locked_until - now)
            return _whole_seconds(left)

    def _forget(self, now: float) -> None:
        while self._recent and self._recent[0] <= now - self.global_window_seconds:
            self._recent.popleft()
        stale = [key for key, g in self._sources.items()
                 if g.locked_until <= now and g.last <= now - FORGET_SECONDS]
        for key in stale:
            del self._sources[key]

    def pair(self, host_id: str, host_name: str, code: str, source: str = "") -> str:
        """The new secret of ``host_id`` when ``code`` is the current code; ProtocolError
        bad_code (with ``attempts_left``) or pairing_locked (with ``seconds``). ``source`` is
        the peer's ``"host:port"``: wrong codes count per address."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            key = source_of(source)
            everyone = _whole_seconds(self._locked_until - now)
            if everyone:
                raise ProtocolError(Err.PAIRING_LOCKED, f"pairing is locked for every host for "
                                    f"{everyone} s after too many wrong codes from several "
                                    "addresses; wait, then type the code the device shows",
                                    seconds=everyone)
            guesses = self._sources.get(key)
            mine = _whole_seconds(guesses.locked_until - now) if guesses else 0
            if mine:
                raise ProtocolError(Err.PAIRING_LOCKED, f"pairing is locked for {mine} s for "
                                    f"this address after {self.wrong_codes_before_lock} wrong "
                                    "codes; wait, then type the code the device shows",
                                    seconds=mine)
            if not hmac.compare_digest(self._code.encode(), str(code).strip().encode()):
                self._wrong_code(key, host_name, now)
            secret = self.hosts.add(host_id)
            # The code changes: wrong guesses of the old one say nothing about the new one.
            # Locks in force stay.
            for guesses in self._sources.values():
                guesses.wrong = 0
            self._recent.clear()
            self._code = new_code()
            code_now = self._code
        log.info("paired with host %s (%s); the pairing code changed", host_name, host_id)
        if self.on_new_code is not None:
            self.on_new_code(code_now)
        return secret

    def _wrong_code(self, key: str, host_name: str, now: float) -> None:
        """Count a wrong code from ``key`` and raise what it answers (with the lock held)."""
        guesses = self._sources.setdefault(key, _Guesses())
        guesses.wrong += 1
        guesses.last = now
        self._recent.append(now)
        if len(self._recent) >= self.global_wrong_codes_before_lock:
            self._recent.clear()
            self._locked_until = now + self.global_lock_seconds
            seconds = _whole_seconds(self.global_lock_seconds)
            log.warning("pairing locked for everyone for %g s after %d wrong codes within %g s "
                        "(the last from %s, %s)", self.global_lock_seconds,
                        self.global_wrong_codes_before_lock, self.global_window_seconds,
                        key, host_name)
            raise ProtocolError(Err.PAIRING_LOCKED, "wrong pairing code; too many wrong codes "
                                f"came from several addresses: pairing is now locked for every "
                                f"host for {seconds} s", seconds=seconds)
        if guesses.wrong >= self.wrong_codes_before_lock:
            guesses.wrong = 0
            guesses.locked_until = now + self.lock_seconds
            seconds = _whole_seconds(self.lock_seconds)
            log.warning("pairing locked for %s for %g s after %d wrong codes (the last from %s)",
                        key, self.lock_seconds, self.wrong_codes_before_lock, host_name)
            raise ProtocolError(Err.PAIRING_LOCKED, f"wrong pairing code; pairing is now locked "
                                f"for {seconds} s for this address", seconds=seconds)
        left = min(self.wrong_codes_before_lock - guesses.wrong,
                   self.global_wrong_codes_before_lock - len(self._recent))
        # The owner reading the log sees guessing before it locks; the code stays out of it.
        log.warning("wrong pairing code from %s (host %s); %d attempt%s left before pairing "
                    "locks", key, host_name, left, "" if left == 1 else "s")
        raise ProtocolError(Err.BAD_CODE, "wrong pairing code; type the 6 digits the device "
                            f"shows ({left} tries before pairing locks)", attempts_left=left)


def _whole_seconds(left: float) -> int:
    return int(math.ceil(left)) if left > 0 else 0
