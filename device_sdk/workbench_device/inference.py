"""The client an app on the device uses to run the models Workbench deployed to it.

    from workbench_device.inference import InferenceClient

    client = InferenceClient(port=7301)
    outputs = client.run("classifier", {"input": array})   # {"logits": np.ndarray, ...}

It talks to the agent's local inference endpoint (``--inference-port``, loopback only, no
pairing; docs/device-protocol.md, section 17). A deploy from Workbench switches the slot to a new
model between two requests: the app keeps calling ``run`` and gets the new model's outputs from
then on (``run_detailed`` also says which model answered).

One client is one connection. It is thread-safe: requests from several threads take turns on it
(one request at a time). Threads that want to run at the same time each make a client of their
own. When the connection dropped (the agent restarted), a request connects again once and is
sent again; failing that, the error is raised. Errors the agent answers raise ``RemoteError``
(``code``: ``not_found`` for a slot that does not exist, ``bad_request`` for inputs that do not
fit the model, ``runtime``...).
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from workbench_device.protocol import (
    DEFAULT_INFERENCE_PORT,
    VERSION,
    ConnectionClosed,
    Err,
    Msg,
    ProtocolError,
    RemoteError,
    ok,
    pack_tensors,
    unpack_tensors,
)
from workbench_device.wire import FrameSocket, tune

DEFAULT_TIMEOUT_S = 30.0


@dataclass
class SlotRun:
    """A slot's answer: its outputs, the sha256 of the model that computed them, and the
    runtime's milliseconds."""

    outputs: Dict[str, Any]
    model: str
    run_ms: float


class InferenceClient:
    """A connection to the local inference endpoint at ``host:port`` (opened at the first
    request)."""

    def __init__(self, port: int = DEFAULT_INFERENCE_PORT, host: str = "127.0.0.1",
                 timeout: float = DEFAULT_TIMEOUT_S):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.reconnects = 0
        self._fs: Optional[FrameSocket] = None
        self._next_id = 1
        self._lock = threading.Lock()

    def run(self, slot: str, inputs: Dict[str, Any]) -> Dict[str, Any]:
        """The outputs (numpy arrays by name) of the model deployed to ``slot`` for ``inputs``
        (numpy arrays by input name)."""
        return self.run_detailed(slot, inputs).outputs

    def run_detailed(self, slot: str, inputs: Dict[str, Any]) -> SlotRun:
        packed = pack_tensors(inputs)
        header, payload = self._request({"type": Msg.SLOT_RUN, "slot": slot,
                                         "tensors": packed.descriptors}, packed.buffers)
        outputs = unpack_tensors(header.get("tensors", []), payload)
        return SlotRun(outputs, str(header.get("model") or ""), float(header.get("run_ms", 0.0)))

    def slots(self) -> List[Dict[str, Any]]:
        """Every slot on the device: ``slot``, ``model`` (sha256), ``since``, ``served``,
        ``errors``, ``inputs``, ``outputs``... (docs/device-protocol.md, ``slot.list``)."""
        header, _ = self._request({"type": Msg.SLOT_LIST}, b"")
        return list(header.get("slots") or [])

    # --- the connection ---

    def _request(self, header: Dict[str, Any], payload: Any) -> tuple:
        with self._lock:
            for attempt in (1, 2):
                fs = self._connection()
                request_id = self._next_id
                self._next_id += 1
                try:
                    fs.send(dict(header, id=request_id), payload)
                    return self._reply(fs, request_id, header["type"])
                except socket.timeout:
                    self._drop()  # the reply may still come: this connection is out of step
                    raise
                except (ConnectionClosed, ConnectionError, OSError):
                    self._drop()
                    if attempt == 2:
                        raise
                    self.reconnects += 1
        raise AssertionError("unreachable")

    def _reply(self, fs: FrameSocket, request_id: int, kind: str) -> tuple:
        head = fs.recv_head()
        if head is None:
            raise ConnectionClosed(f"the inference endpoint at {self.host}:{self.port} closed "
                                   "the connection")
        reply, payload_len = head
        payload = fs.recv_payload(payload_len) if payload_len else b""
        if reply.get("type") == Msg.ERROR:
            if reply.get("id") is None:
                self._drop()  # about the connection: the endpoint closes it
            raise RemoteError(str(reply.get("code") or Err.INTERNAL),
                              str(reply.get("message") or "the device reported an error"))
        if reply.get("id") != request_id or reply.get("type") != ok(kind):
            self._drop()
            raise ProtocolError(Err.BAD_FRAME, f"the inference endpoint answered request "
                                f"{request_id} with {reply.get('type')!r} for "
                                f"{reply.get('id')!r}; connect again")
        return reply, payload

    def _connection(self) -> FrameSocket:
        if self._fs is None:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except OSError as exc:
                raise ConnectionError(f"no inference endpoint at {self.host}:{self.port} "
                                      f"({exc.strerror or exc}): is workbench-device-agent "
                                      f"running with --inference-port {self.port}?") from None
            tune(sock)
            self._fs = FrameSocket(sock)
            self._fs.version = VERSION
        return self._fs

    def _drop(self) -> None:
        fs, self._fs = self._fs, None
        if fs is not None:
            fs.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> "InferenceClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
