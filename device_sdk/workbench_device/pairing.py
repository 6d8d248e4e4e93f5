"""Pairing: the 6-digit code the agent prints, the lock after wrong guesses, and the hosts that
paired (``paired_hosts.json``: host id -> the host's pinned certificate, readable by the agent's
user only).

The code works like Android's wireless-debugging code: whoever can read the agent's output may
pair. It never crosses the network: it is the password of a PAKE (``pake.py``), and a wrong code
shows as a host confirmation that does not match. Five wrong codes in a row from one address lock pairing for that address for a minute, so
one guesser cannot lock the owner out; twenty wrong codes within a minute from all addresses
together lock it for everyone for ten minutes, so many addresses guessing at once get no more
than 19 codes a minute without locking everyone out: half the codes take about 18 days, every
wrong one is in the agent's log, and a successful pairing replaces the code.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Deque, Dict, List, Optional

from workbench_device.atomic import replace_file
from workbench_device.pake import PairingExchange
from workbench_device.protocol import Err, ProtocolError
from workbench_device.tls import fingerprint

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


@dataclass
class PairedHost:
    """A host this agent pinned: its certificate (DER) and what it called itself."""

    host_id: str
    cert: bytes
    name: str = ""
    paired_at: str = ""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.cert)


class PairedHosts:
    """The hosts that paired with this agent and their pinned certificates, kept in ``path``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._hosts: Dict[str, PairedHost] = self._read()

    def _read(self) -> Dict[str, PairedHost]:
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
        hosts = {}
        for host_id, entry in data.items():
            # A version-1 entry (a shared secret, a string) pins nothing: that host pairs again.
            if isinstance(entry, dict) and isinstance(entry.get("cert"), str):
                try:
                    cert = bytes.fromhex(entry["cert"])
                except ValueError:
                    continue
                hosts[str(host_id)] = PairedHost(str(host_id), cert, str(entry.get("name", "")),
                                                 str(entry.get("paired_at", "")))
        return hosts

    def host_of(self, cert: Optional[bytes]) -> Optional[str]:
        """The id of the paired host whose certificate is ``cert``; None for any other."""
        if not cert:
            return None
        with self._lock:
            for host in self._hosts.values():
                if host.cert == cert:
                    return host.host_id
        return None

    def certificates(self) -> List[bytes]:
        with self._lock:
            return [host.cert for host in self._hosts.values()]

    def get(self, host_id: str) -> Optional[PairedHost]:
        with self._lock:
            return self._hosts.get(host_id)

    def __contains__(self, host_id: object) -> bool:
        with self._lock:
            return host_id in self._hosts

    def __len__(self) -> int:
        with self._lock:
            return len(self._hosts)

    def add(self, host_id: str, name: str, cert: bytes) -> None:
        """Pin ``cert`` for ``host_id`` (replacing what it had), saved before this returns."""
        host = PairedHost(host_id, bytes(cert), name,
                          datetime.now(timezone.utc).isoformat(timespec="seconds"))
        with self._lock:
            updated = dict(self._hosts)
            updated[host_id] = host
            write_private_json(self.path, {
                h.host_id: {"cert": h.cert.hex(), "name": h.name, "paired_at": h.paired_at}
                for h in updated.values()})
            self._hosts = updated


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

    def _refuse_if_locked(self, key: str, now: float) -> None:
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

    def begin(self, source: str = "") -> "AgentExchange":
        """The agent's side of a pairing attempt with the current code; ProtocolError
        pairing_locked (with ``seconds``) while pairing is locked for ``source`` (the peer's
        ``"host:port"``) or for everyone. An attempt that never finishes costs nothing: the
        other side learned nothing it can check a guess against."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            self._refuse_if_locked(source_of(source), now)
            code = self._code
        return AgentExchange(code)

    def finish(self, exchange: "AgentExchange", confirmation: object, host_id: str,
               host_name: str, cert: bytes, source: str = "") -> None:
        """Pin ``cert`` for ``host_id`` when the host's ``confirmation`` matches ``exchange``
        (which ``finish`` of the exchange has seen the host's message for). ProtocolError
        bad_code (with ``attempts_left``) or pairing_locked (with ``seconds``) otherwise: each
        confirmation is one guess of the code."""
        with self._lock:
            now = self._clock()
            self._forget(now)
            key = source_of(source)
            self._refuse_if_locked(key, now)
            if exchange.code != self._code:
                raise ProtocolError(Err.BAD_CODE, "the pairing code changed while pairing "
                                    "(another computer paired); type the new code the device "
                                    "shows", attempts_left=self._attempts_left(key))
            if not exchange.confirms(confirmation):
                self._wrong_code(key, host_name, now)
            self.hosts.add(host_id, host_name, cert)
            # The code changes: wrong guesses of the old one say nothing about the new one.
            # Locks in force stay.
            for guesses in self._sources.values():
                guesses.wrong = 0
            self._recent.clear()
            self._code = new_code()
            code_now = self._code
        log.info("paired with host %s (%s, certificate %s); the pairing code changed",
                 host_name, host_id, fingerprint(cert)[:16])
        if self.on_new_code is not None:
            self.on_new_code(code_now)

    def _attempts_left(self, key: str) -> int:
        guesses = self._sources.get(key)
        wrong = guesses.wrong if guesses else 0
        return min(self.wrong_codes_before_lock - wrong,
                   self.global_wrong_codes_before_lock - len(self._recent))

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
        left = self._attempts_left(key)
        # The owner reading the log sees guessing before it locks; the code stays out of it.
        log.warning("wrong pairing code from %s (host %s); %d attempt%s left before pairing "
                    "locks", key, host_name, left, "" if left == 1 else "s")
        raise ProtocolError(Err.BAD_CODE, "wrong pairing code, or something between the host "
                            "and the device intercepts the connection; type the 6 digits the "
                            f"device shows ({left} tries before pairing locks)",
                            attempts_left=left)


def _whole_seconds(left: float) -> int:
    return int(math.ceil(left)) if left > 0 else 0


class AgentExchange(PairingExchange):
    """The agent's side of one pairing attempt, with the code it was begun with."""

    def __init__(self, code: str):
        super().__init__("agent", code)
        self.code = code
