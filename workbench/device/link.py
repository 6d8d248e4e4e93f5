"""A link to one device: find it by what the user typed, pair with it, and use it (push, load,
run, benchmark, scripts, logs) over the debug link, with errors a user can act on.

``DeviceLink.open("192.168.1.20:7300")`` (or a paired or announced name, ``local`` for the agent
``workbench device serve-local`` runs, ``usb`` / ``usb:SERIAL`` for a phone on a cable) connects
over TLS with this computer's certificate and checks the device's against the one pinned at
pairing, then says hello. A device that does not know this computer gives NotPaired, saying how
to pair; one whose certificate changed gives CertificateChanged, saying how to pair again. Whatever the device answers becomes a
DeviceError; a connection that drops becomes ConnectionLost ("Phone A (HOST:PORT) stopped
answering (…); is the agent still running?", "the device at HOST:PORT …" while its name is not
known yet), and the next call connects again.

One DeviceLink is one connection and one session on the device; it is not thread-safe (a window
uses one per worker). ``abort()`` may be called from another thread: the call under way ends
with Cancelled.
"""

from __future__ import annotations

import logging
import platform
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.device.discovery import BROWSE_SECONDS, USB_PREFIX, adb_forward, browse, parse_address
from workbench.device.errors import (
    CertificateChanged,
    ConnectionLost,
    DeviceError,
    DeviceUnreachable,
    NotPaired,
    PairingRefused,
)
from workbench.device.paired import PairedDevice, PairedDevices, format_address, now_iso
from workbench.tasks import CancelToken, Cancelled, Progress
from workbench_device import client as link_client
from workbench_device.client import DEFAULT_TIMEOUT_S, DeviceClient, PushResult, sha256_of
from workbench_device.protocol import DEFAULT_PORT, Err, ProtocolError, RemoteError
from workbench_device.tls import short_fingerprint

log = logging.getLogger(__name__)

LOCAL_NAMES = ("local", "this-computer")
CONNECT_TIMEOUT_S = 5.0
# How often a push that lost its connection connects again and goes on.
PUSH_RECONNECTS = 2


@dataclass
class DeviceTarget:
    """Where a device named by the user is reached. ``via`` is how it was found: "address",
    "paired", "mdns", "usb" or "local"."""

    host: str
    port: int
    label: str
    via: str
    paired: PairedDevice | None = None

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)


def pair_command(address: str) -> str:
    return f"workbench device pair {address} --code NNNNNN"


def resolve(target: str, devices: PairedDevices | None = None,
            browse_seconds: float = BROWSE_SECONDS) -> DeviceTarget:
    """Where the device ``target`` names is: ``HOST:PORT``, ``local``, ``usb[:SERIAL]``, a paired
    device's name or id, or a name a device announces on the LAN. DeviceUnreachable when it
    names none."""
    devices = devices or PairedDevices()
    text = target.strip()
    if not text:
        raise DeviceUnreachable("name the device: HOST:PORT, or its name (see `workbench device list`)")
    lowered = text.lower()
    if lowered == USB_PREFIX or lowered.startswith(USB_PREFIX + ":"):
        serial = text[len(USB_PREFIX) + 1:] or None
        host, port = adb_forward(serial)
        return DeviceTarget(host, port, text, "usb")
    address = parse_address(text)
    if address is not None:
        host, port = address
        known = next((d for d in devices.list() if d.host == host and d.port == port), None)
        return DeviceTarget(host, port, text, "address", known)
    if lowered in LOCAL_NAMES:
        local = devices.local()
        if local is None:
            from workbench.device.serve_local import running_local_agent

            running = running_local_agent()
            if running is None:
                raise DeviceUnreachable("no agent runs on this computer: start one with "
                                        "`workbench device serve-local`")
            return DeviceTarget(running.host, running.port, text, "local")
        return DeviceTarget(local.host, local.port, text, "local", local)
    paired = devices.find(text)
    if len(paired) > 1:
        listed = ", ".join(d.address for d in paired)
        raise DeviceUnreachable(f"several paired devices are called {text!r} ({listed}); name one "
                                "by HOST:PORT")
    if paired:
        return DeviceTarget(paired[0].host, paired[0].port, text, "paired", paired[0])

    def is_it(device) -> bool:
        return device.name.lower() == lowered or (
            len(lowered) >= 6 and device.device_id.lower().startswith(lowered))

    try:
        seen = [d for d in browse(browse_seconds, stop_when=is_it) if is_it(d)]
    except DeviceError as exc:
        log.info("no mDNS look-up for %r: %s", text, exc)
        seen = []
    if len(seen) > 1:
        listed = ", ".join(d.address for d in seen)
        raise DeviceUnreachable(f"several devices on the LAN are called {text!r} ({listed}); name "
                                "one by HOST:PORT")
    if seen:
        return DeviceTarget(seen[0].host, seen[0].port, text, "mdns")
    names = ", ".join(sorted({d.name for d in devices.list()})) or "none"
    hint = (f" (with the port: {text}:{DEFAULT_PORT}?)"
            if "." in text or text == "localhost" else "")
    raise DeviceUnreachable(
        f"no device called {text!r}{hint}: no paired device has that name (paired: {names}) and "
        "none announces it on the LAN. Name it by HOST:PORT (the agent prints `Listening on "
        "HOST:PORT`), or see `workbench device list`")


def _connect(target: DeviceTarget, timeout: float, identity, pin: str | None = None,
             on_log=None, pairing: bool = False) -> DeviceClient:
    """A TLS connection to ``target`` offering ``identity`` (none while ``pairing``), to an
    agent whose certificate is ``pin`` when given."""
    try:
        return DeviceClient(target.host, target.port, timeout=timeout,
                            connect_timeout=CONNECT_TIMEOUT_S, on_log=on_log, identity=identity,
                            pin=pin, present_certificate=not pairing)
    except link_client.CertificateChanged as exc:
        name = target.paired.name if target.paired else ""
        # Once forgotten, the name no longer finds the device: the address does (USB aside).
        raise certificate_changed(target.address, name, exc.pinned, exc.presented,
                                  target.label if target.via == "usb" else target.address) from None
    except ProtocolError as exc:
        raise _remote_error(exc, target.address, "connect",
                            target.paired.name if target.paired else "") from None
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        where = "" if target.label == target.address else f" ({target.label})"
        raise DeviceUnreachable(
            f"nothing answers at {target.address}{where}: {reason}. Is the agent running there? "
            "Start it with `workbench-device-agent` on the device (or `workbench device "
            "serve-local` on this computer), and check the address it prints") from None


def _named(address: str, name: str = "") -> str:
    """How a message names a device: "Phone A (HOST:PORT)" once its name is known, else "the
    device at HOST:PORT"."""
    return f"{name} ({address})" if name and name != address else f"the device at {address}"


def _lost(address: str, exc: BaseException, name: str = "") -> ConnectionLost:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        reason = "no answer in time"
    elif isinstance(exc, ConnectionResetError):
        reason = "the connection was reset"
    else:
        text = str(exc)
        reason = "the connection closed" if "closed" in text or not text else (
            getattr(exc, "strerror", None) or text)
    return ConnectionLost(f"{_named(address, name)} stopped answering ({reason}); is the agent "
                          "still running?")


def certificate_changed(address: str, name: str, pinned: str, presented: str,
                        label: str = "") -> CertificateChanged:
    """The refusal of a device whose certificate is not its pin, worded as OpenSSH words a
    changed host key."""
    device = _named(address, name)
    forget = f'workbench device forget "{name}"' if name else "workbench device forget DEVICE"
    return CertificateChanged(
        f"The certificate of {device} has changed: it presented {short_fingerprint(presented)}, "
        f"not {short_fingerprint(pinned)} pinned when it was paired. Someone may be "
        "intercepting the connection, or the agent's data folder was reset or replaced. Nothing "
        "was sent to it. If you reset the agent yourself, pair again: "
        f"`{forget}`, then `{pair_command(label or address)}` with the code it prints",
        Err.CERTIFICATE_CHANGED)


def _remote_error(exc: ProtocolError, address: str, what: str, name: str = "") -> DeviceError:
    device = _named(address, name)
    if exc.code in (Err.NOT_AUTHENTICATED, Err.NOT_PAIRED):
        return NotPaired(f"{device} does not accept this computer ({exc.message}): pair again with "
                         f"`{pair_command(address)}` and the code the agent prints", exc.code)
    if exc.code == Err.CERTIFICATE_CHANGED:
        return CertificateChanged(f"{device}: {exc.message}", exc.code)
    if exc.code == Err.UNSUPPORTED_VERSION:
        return DeviceError(f"{device} cannot talk to this Workbench: {exc.message}", exc.code)
    if exc.code == Err.BUSY:
        return DeviceError(f"{device} is busy: {exc.message}", exc.code)
    if exc.code == Err.RUNTIME:
        return DeviceError(f"{device} could not {what}: {exc.message}", exc.code)
    if exc.code == Err.NOT_FOUND:
        return DeviceError(f"{device}: {exc.message}", exc.code)
    return DeviceError(f"{device} refused to {what}: {exc.message}", exc.code)


# --- Pairing ------------------------------------------------------------------------------

def host_name() -> str:
    """How devices show this computer."""
    return platform.node() or "Workbench host"


def pair_device(target: str, code: str, devices: PairedDevices | None = None,
                local: bool = False, timeout: float = DEFAULT_TIMEOUT_S) -> PairedDevice:
    """Pair with the device ``target`` names, using the 6-digit ``code`` its agent printed; the
    device as remembered (its certificate pinned). PairingRefused for a wrong code (with the
    attempts left) or while pairing is locked; CertificateChanged when something between the
    two terminates TLS."""
    devices = devices or PairedDevices()
    code = str(code).strip().replace(" ", "")
    if not (len(code) == 6 and code.isdigit()):
        raise PairingRefused(f"{code!r} is not a pairing code: type the 6 digits the agent "
                             "prints (`Pairing code: 123456`)", Err.BAD_CODE)
    devices.keys.check()
    identity = devices.keys.identity()
    found = resolve(target, devices)
    host_id = devices.host_id()
    client = _connect(found, timeout, identity, pairing=True)
    hello: dict = {}
    try:
        hello = client.hello(host_id)
        pin = client.pair(host_id, host_name(), code)
    except link_client.RelayDetected as exc:
        raise CertificateChanged(f"Pairing with the device at {found.address} was stopped: "
                                 f"{exc.message}", exc.code) from None
    except RemoteError as exc:
        raise _pairing_error(exc, found.address) from None
    except ProtocolError as exc:
        raise _remote_error(exc, found.address, "pair") from None
    except OSError as exc:
        known = str(hello.get("name") or (found.paired.name if found.paired else ""))
        raise _lost(found.address, exc, known) from None
    finally:
        client.close()
    device = PairedDevice(name=str(hello.get("name") or found.address),
                          device_id=str(hello["device_id"]), host=found.host, port=found.port,
                          paired_at=now_iso(), last_seen=now_iso(), local=local)
    if found.via == "usb":
        log.info("paired over USB; the device is remembered at its forwarded port %d", found.port)
    devices.remember(device, pin)
    return device


def _pairing_error(exc: RemoteError, address: str) -> DeviceError:
    if exc.code == Err.BAD_CODE:
        left = exc.extra.get("attempts_left")
        if isinstance(left, int):
            tries = f"{left} attempt{'s' if left != 1 else ''} left before pairing locks"
        else:
            tries = "a few wrong codes lock pairing"
        return PairingRefused(f"the device at {address} refused the pairing code ({tries}); type "
                              "the 6 digits its agent prints now (the code changes after each "
                              "pairing)", exc.code, attempts_left=left if isinstance(left, int) else None)
    if exc.code == Err.PAIRING_LOCKED:
        seconds = exc.extra.get("seconds")
        wait = f"{seconds} s" if isinstance(seconds, int) else "a minute"
        return PairingRefused(f"pairing with the device at {address} is locked after too many "
                              f"wrong codes; wait {wait}, then type the code its agent prints",
                              exc.code, seconds=seconds if isinstance(seconds, int) else None)
    return _remote_error(exc, address, "pair")


# --- The link -----------------------------------------------------------------------------

@dataclass
class LoadedModel:
    """A model loaded in the link's session on the device."""

    handle: str
    sha256: str
    name: str
    inputs: list[dict] = field(default_factory=list)
    outputs: list[dict] = field(default_factory=list)
    init_ms: float = 0.0
    session_id: str = ""
    runtime: str = ""


class DeviceLink:
    """An authenticated connection to a paired device (see the module's docstring)."""

    def __init__(self, target: DeviceTarget, devices: PairedDevices, runtime: str = "onnxruntime",
                 threads: int = 1, timeout: float = DEFAULT_TIMEOUT_S,
                 on_log: Callable[[dict], None] | None = None):
        self.target = target
        self.devices = devices
        self.runtime = runtime
        self.threads = threads
        self.timeout = timeout
        self.on_log = on_log
        self.name = target.paired.name if target.paired else target.label
        self.device_id = target.paired.device_id if target.paired else ""
        self._client: DeviceClient | None = None
        self._session_id: str | None = None
        self._loaded: dict[str, LoadedModel] = {}
        # The sha256s the device said it has: a push of one that is cut off had nothing left to
        # send, and its message must not ask to resume it.
        self._present: set[str] = set()
        self._aborted = threading.Event()

    @classmethod
    def open(cls, target: str, devices: PairedDevices | None = None, runtime: str = "onnxruntime",
             threads: int = 1, timeout: float = DEFAULT_TIMEOUT_S,
             on_log: Callable[[dict], None] | None = None) -> "DeviceLink":
        """Connect to the paired device ``target`` names and authenticate (see ``resolve``)."""
        devices = devices or PairedDevices()
        link = cls(resolve(target, devices), devices, runtime, threads, timeout, on_log)
        link.connect()
        return link

    @property
    def address(self) -> str:
        return self.target.address

    @property
    def known_name(self) -> str:
        """The device's own name once it is paired or has said hello; empty before (``name``
        is then what the user typed)."""
        return self.name if self.device_id else ""

    @property
    def connected(self) -> bool:
        return self._client is not None

    @property
    def cert_fingerprint(self) -> str:
        """The SHA-256 (hex) of the certificate the device presented on this connection, its
        pin; empty while not connected."""
        return self._client.peer_fingerprint if self._client is not None else ""

    def __repr__(self) -> str:
        return f"DeviceLink({self.name!r} at {self.address})"

    # --- connecting ---

    def connect(self) -> None:
        """(Re)connect and authenticate; the session and loaded models start afresh."""
        self.close()
        self._aborted.clear()
        identity = self.devices.keys.identity()
        expected = self.devices.pin(self.target.paired.device_id) if self.target.paired else None
        client = _connect(self.target, self.timeout, identity, expected, self.on_log)
        try:
            host_id = self.devices.host_id()
            hello = client.hello(host_id)
            self.device_id = str(hello.get("device_id") or "")
            self.name = str(hello.get("name") or self.name)
            pin = expected or (self.devices.pin(self.device_id) if self.device_id else None)
            named = self.target.label if self.target.via == "usb" else self.address
            if pin and pin != client.peer_fingerprint:
                raise certificate_changed(self.address, self.name, pin, client.peer_fingerprint,
                                          named)
            if not hello.get("paired") or not pin:
                known = "has forgotten this computer" if pin else "is not paired with this computer"
                raise NotPaired(f"the device {self.name} at {self.address} {known}: run "
                                f"`{pair_command(named)}` with the code its agent prints")
        except DeviceError:
            client.fs.close()
            raise
        except ProtocolError as exc:
            client.fs.close()
            raise _remote_error(exc, self.address, "authenticate", self.name) from None
        except OSError as exc:
            client.fs.close()
            raise _lost(self.address, exc, self.known_name) from None
        self._client = client
        self._remember()

    def _remember(self) -> None:
        if self.target.via == "usb":  # the forwarded port changes; the paired entry keeps its own
            return
        known = self.devices.get(self.device_id)
        if known is None and self.devices.pin(self.device_id):
            # Paired (its pin is kept) but missing from devices.json. A device forgotten while
            # this link connected has no pin any more and stays forgotten.
            self.devices.remember(PairedDevice(self.name, self.device_id, self.target.host,
                                               self.target.port, last_seen=now_iso(),
                                               local=self.target.via == "local"))
        else:
            self.devices.seen(self.device_id, self.target.host, self.target.port, self.name)

    def close(self) -> None:
        """Say goodbye and close the connection (the device ends the session)."""
        client, self._client = self._client, None
        self._session_id = None
        self._loaded.clear()
        if client is not None:
            client.close()

    def abort(self) -> None:
        """From any thread: end the call under way (it raises Cancelled) and the connection."""
        self._aborted.set()
        client = self._client
        if client is not None:
            try:
                client.fs.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "DeviceLink":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, what: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(client, *args)`` with every failure as the DeviceError a user reads."""
        if self._client is None:
            self.connect()
        try:
            return function(self._client, *args, **kwargs)
        except (Cancelled, KeyboardInterrupt):  # a reply may still be on its way: start afresh
            self._drop()
            raise
        except ProtocolError as exc:
            if self._aborted.is_set():
                self._drop()
                raise Cancelled() from None
            raise _remote_error(exc, self.address, what, self.name) from None
        except OSError as exc:
            self._drop()
            if self._aborted.is_set():
                raise Cancelled() from None
            raise _lost(self.address, exc, self.known_name) from None

    def _drop(self) -> None:
        """Forget a connection that cannot go on (it dropped, or a reply is still under way)."""
        client, self._client = self._client, None
        self._session_id = None
        self._loaded.clear()
        if client is not None:
            client.fs.close()

    # --- the device ---

    def info(self) -> dict:
        """What the device says about itself (name, model, os, cpu, memory, runtimes…), its
        address and its certificate's fingerprint (``cert_fingerprint``)."""
        info = self._call("describe itself", DeviceClient.info)
        info["address"] = self.address
        info["cert_fingerprint"] = self.cert_fingerprint
        return info

    def hello(self) -> dict:
        return dict(self._client.hello_reply) if self._client else {}

    def _session(self) -> str:
        if self._client is None:
            self.connect()
        if self._session_id is None:
            self._session_id = self._call(f"open a {self.runtime} session",
                                          DeviceClient.open_session, self.runtime, self.threads)
        return self._session_id

    # --- models ---

    def has(self, model: Path | str) -> bool:
        """Whether the device has the model (a file's path, or a sha256) already."""
        sha = _sha_of(model)
        present = self._call("look the model up", DeviceClient.has_model, sha) is not None
        if present:
            self._present.add(sha)
        else:
            self._present.discard(sha)
        return present

    def push(self, model: Path | str, name: str | None = None,
             progress: Callable[[Progress], None] | None = None,
             cancel: CancelToken | None = None, chunk_size: int | None = None) -> PushResult:
        """Send the model file unless the device has it (then nothing is sent). A push cut off
        (the connection dropped) connects again and goes on where the device's copy ends; one
        cancelled stops at once, and the next push of the model resumes it."""
        path = Path(model)
        if not path.is_file():
            raise DeviceError(f"{path} does not exist: give the model file to push")
        name = name or path.name
        sha = sha256_of(path)
        size = path.stat().st_size

        # The client reports the whole size at once when the device has the model already; a
        # first report of the whole size waits for the result, so a push that sends nothing
        # does not show as one.
        shown = False
        held: Progress | None = None

        def report(done: int, total: int) -> None:
            nonlocal shown, held
            if cancel is not None and cancel.cancelled:
                raise Cancelled()
            if progress is None:
                return
            update = Progress(f"Pushing {name} to {self.name}: {size_text(done)} of "
                              f"{size_text(size)}", done / total if total else 1.0)
            if not shown and done >= total:
                held = update
                return
            shown = True
            progress(update)

        options = {"chunk_size": chunk_size} if chunk_size else {}
        attempts = 0
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            try:
                result = self._call("receive the model", DeviceClient.push_model, path,
                                    name=name, sha256=sha, progress=report, **options)
                # The device may still be checking the bytes: wait for its verdict, so a push
                # that returns is a model the device has.
                checked = result.skipped or getattr(result, "verified", False)
                if not checked and self._call("check the model", DeviceClient.has_model,
                                              sha) is None:
                    raise DeviceError(f"{name} arrived damaged on {self.name} (its sha256 does "
                                      "not match); push it again")
                if held is not None and not result.skipped and progress is not None:
                    progress(held)
                self._present.add(sha)
                return result
            except ConnectionLost:
                attempts += 1
                if attempts > PUSH_RECONNECTS:
                    raise
                nothing_left = sha in self._present
                log.info("the connection to %s dropped while pushing %s; connecting again",
                         self.address, name)
                if progress is not None:
                    progress(Progress(f"The connection to {self.name} dropped; connecting again…"
                                      if nothing_left else f"The connection to {self.name} "
                                      "dropped; resuming the push…", None))
                time.sleep(0.2 * attempts)
                try:
                    self.connect()
                except DeviceUnreachable:
                    device = _named(self.address, self.known_name)
                    if nothing_left:
                        raise ConnectionLost(
                            f"{device} stopped answering; it has {name} already, so nothing "
                            "remained to send. Is the agent still running? Start it again, then "
                            "repeat the command") from None
                    raise ConnectionLost(f"{device} stopped answering during the push; is the "
                                         "agent still running? Push again to resume where it "
                                         "stopped") from None

    def load(self, model: Path | str, name: str | None = None,
             progress: Callable[[Progress], None] | None = None,
             cancel: CancelToken | None = None) -> LoadedModel:
        """The model loaded in this link's session: a file is pushed first (when the device
        lacks it), a sha256 must be on the device already. Loaded once per session."""
        if _looks_like_sha(model):
            sha, name = str(model).lower(), name or str(model)[:12]
        else:
            path = Path(model)
            name = name or path.name
            sha = self.push(path, name, progress, cancel).sha256
        session = self._session()
        loaded = self._loaded.get(sha)
        if loaded is not None and loaded.session_id == session:
            return loaded
        if progress is not None:
            progress(Progress(f"Loading {name} on {self.name}…", None))
        reply = self._call(f"load {name}", DeviceClient.load_model, sha, name)
        loaded = LoadedModel(str(reply["model"]), sha, name, list(reply.get("inputs") or []),
                             list(reply.get("outputs") or []), float(reply.get("init_ms") or 0.0),
                             session, str(reply.get("runtime") or self.runtime))
        self._loaded[sha] = loaded
        return loaded

    def _handle(self, model: LoadedModel | str) -> str:
        if isinstance(model, LoadedModel):
            if model.session_id != self._session_id or model.sha256 not in self._loaded:
                model = self.load(model.sha256, model.name)  # the session was lost: load again
            return model.handle
        return str(model)

    def run(self, model: LoadedModel | str, inputs: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The model's outputs (NumPy arrays by name) for ``inputs``, and the device's run time
        in milliseconds."""
        handle = self._handle(model)
        return self._call("run the model", DeviceClient.run, handle, inputs)

    def bench(self, model: LoadedModel | str, warmup: int = 5, runs: int = 50,
              batch: int | None = None, inputs: dict[str, Any] | None = None) -> dict:
        """Latency on the device: init_ms, p50_ms, p90_ms, p99_ms, mean_ms, runs,
        peak_rss_bytes… (random inputs of the model's shapes unless ``inputs`` are given)."""
        handle = self._handle(model)
        return self._call("benchmark the model", DeviceClient.bench, handle, warmup=warmup,
                          runs=runs, batch=batch, inputs=inputs)

    # --- files and scripts ---

    def put_file(self, path: str, data: bytes | str | Path) -> dict:
        """Write ``data`` (bytes or a local file) to ``path`` in the session's folder."""
        self._session()
        return self._call(f"store {path}", DeviceClient.put_file, path, data)

    def get_file(self, path: str) -> bytes:
        self._session()
        return self._call(f"send {path}", DeviceClient.get_file, path)

    def run_script(self, path: str, model: LoadedModel | str | None = None,
                   timeout_s: float = 60.0,
                   on_output: Callable[[str, str], None] | None = None) -> dict:
        """Run a Python script in the session's folder on the device; exit_code, stdout, stderr
        and result (the JSON it printed last or wrote to result.json). ``on_output(stream,
        text)`` gets its output while it runs ("stdout" / "stderr")."""
        self._session()
        handle = self._handle(model) if model is not None else None
        return self._call(f"run {path}", DeviceClient.run_script, path, handle, timeout_s,
                          on_output)

    # --- debugging (protocol 3; see device_debug.py) ---

    @property
    def protocol(self) -> int:
        """The protocol version this link's connection speaks (connecting first)."""
        if self._client is None:
            self.connect()
        return self._client.protocol

    def start_debug(self, path: str, model: LoadedModel | str | None = None, wait: bool = True,
                    timeout_s: float | None = None) -> dict:
        """Start the script ``path`` (in the session's folder) under debugpy on the device:
        debug_id, pid, program and sandbox (its paths there)."""
        if self.protocol < 3:
            raise DeviceError(f"{_named(self.address, self.known_name)} runs an agent of protocol "
                              f"{self.protocol}, which cannot debug scripts: update "
                              "workbench-device-agent on it (pip install -U "
                              "'workbench-device-agent[debug]')")
        self._session()
        handle = self._handle(model) if model is not None else None
        return self._call(f"debug {path}", DeviceClient.start_debug, path, handle, timeout_s,
                          wait)

    def stop_debug(self, debug_id: str) -> dict:
        return self._call("stop the script it debugs", DeviceClient.stop_debug, debug_id)

    def next_event(self, timeout: float = 1.0) -> dict | None:
        """The next event the device sends on this link (a debugged script's output or end),
        None when none comes within ``timeout``."""
        return self._call("send its events", DeviceClient.next_event, timeout)

    def tunnel_client(self, debug_id: str) -> DeviceClient:
        """A new connection to the device switched into the tunnel of ``debug_id`` (its
        ``fs.sock`` is the stream; see ``device_debug.DebugTunnel``)."""
        identity = self.devices.keys.identity()
        pin = self.devices.pin(self.device_id) if self.device_id else None
        client = _connect(self.target, self.timeout, identity, pin)
        try:
            client.hello(self.devices.host_id())
            client.open_tunnel(debug_id)
        except ProtocolError as exc:
            client.fs.close()
            if exc.code == Err.SCRIPT_EXITED:
                said = str(exc.extra.get("stderr") or "").strip().splitlines()
                raise DeviceError(f"{_named(self.address, self.known_name)}: {exc.message}"
                                  + (f" ({said[-1]})" if said else "") + "; debug it again",
                                  exc.code) from None
            raise _remote_error(exc, self.address, "attach the debugger", self.name) from None
        except OSError as exc:
            client.fs.close()
            raise _lost(self.address, exc, self.known_name) from None
        return client

    # --- logs ---

    def follow_logs(self, on_line: Callable[[dict], None], level: str = "info",
                    cancel: CancelToken | None = None, count: int | None = None,
                    seconds: float | None = None) -> int:
        """Pass the device's log lines (``{"time", "level", "message"}``) to ``on_line`` as they
        come, until ``cancel``, ``count`` lines or ``seconds``; the number of lines. The link's
        connection ends with it (a later call connects again): use a link of its own."""
        self._call("stream its log", DeviceClient.subscribe_logs, level)
        deadline = None if seconds is None else time.monotonic() + seconds
        lines = 0
        while count is None or lines < count:
            if cancel is not None and cancel.cancelled:
                break
            wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if wait <= 0:
                break
            line = self._call("stream its log", DeviceClient.next_log, wait)
            if line is not None:
                lines += 1
                on_line({k: v for k, v in line.items() if k not in ("type", "id")})
        # The subscription lasts as long as the connection: end it, so later requests on this
        # link do not meet log lines.
        self.close()
        return lines


DEVICE_MODELS_HINT = ("give an ONNX (.onnx) or MNN (.mnn) model; convert others with "
                      "`workbench model convert`")
RUNTIME_MODEL_KINDS = {"onnxruntime": ("onnx",), "mnn": ("mnn",), "any": ("onnx", "mnn")}


def check_model_file(path: Path, runtime: str = "any") -> None:
    """DeviceError unless ``path`` holds a whole model that ``runtime`` on a device loads (an
    ONNX or MNN model for "any"): read here from its bytes, so a text file or a truncated copy
    is refused before it is sent, with what the file is instead."""
    from workbench.modeltools.errors import ModelToolError
    from workbench.modeltools.model_files import KNOWN_FORMATS, MNN, ONNX, expect, identify

    path = Path(path)
    kinds = RUNTIME_MODEL_KINDS.get(runtime, RUNTIME_MODEL_KINDS["any"])
    try:
        kind = identify(path).kind
        if kind == ONNX and runtime == "mnn":
            raise DeviceError(f"{path} is an ONNX model and the mnn runtime takes MNN models: "
                              f"convert it first (workbench model mnn {path}), or run it with "
                              "onnxruntime")
        if kind == MNN and runtime == "onnxruntime":
            raise DeviceError(f"{path} is an MNN model and onnxruntime takes ONNX models: run it "
                              "with the mnn runtime (--runtime mnn)")
        expect(path, kinds, "a device")
    except ModelToolError as exc:
        # The model tools name every format they read; a device takes only these two.
        message = str(exc)
        for hint in (f"give a model file ({KNOWN_FORMATS})", f"give {KNOWN_FORMATS}"):
            message = message.replace(hint, DEVICE_MODELS_HINT)
        raise DeviceError(message) from None


def size_text(n: int) -> str:
    """A byte count as people read it: "12.3 MB", "245 kB"."""
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.0f} kB" if n >= 1000 else f"{n} bytes"


def _looks_like_sha(model: Path | str) -> bool:
    text = str(model)
    return (isinstance(model, str) and len(text) == 64
            and all(c in "0123456789abcdef" for c in text.lower()) and not Path(text).exists())


def _sha_of(model: Path | str) -> str:
    return str(model).lower() if _looks_like_sha(model) else sha256_of(Path(model))
