"""A tiny Debug Adapter Protocol client for tests: Content-Length framed JSON over any stream
with ``recv`` and ``sendall`` (a socket, a device link's tunnel). Written from the DAP
specification, so that the tests check the link carries DAP, not one client's habits."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List


class DapClient:
    """Requests out, responses and events in; messages read while waiting for another one are
    kept for later waits."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.seq = 0
        self._buffer = b""
        self._kept: List[Dict[str, Any]] = []

    def send(self, command: str, **arguments: Any) -> int:
        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command,
                           "arguments": arguments}).encode()
        self.stream.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def _more(self) -> None:
        data = self.stream.recv(65536)
        if not data:
            raise EOFError("the debug adapter's stream ended")
        self._buffer += data

    def read(self) -> Dict[str, Any]:
        """The next message from the adapter."""
        while b"\r\n\r\n" not in self._buffer:
            self._more()
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        self._buffer = rest
        while len(self._buffer) < length:
            self._more()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return json.loads(body)

    def wait(self, wanted: Callable[[Dict[str, Any]], bool]) -> Dict[str, Any]:
        for index, message in enumerate(self._kept):
            if wanted(message):
                return self._kept.pop(index)
        while True:
            message = self.read()
            if wanted(message):
                return message
            self._kept.append(message)

    def response(self, request_seq: int) -> Dict[str, Any]:
        return self.wait(lambda m: m.get("type") == "response"
                         and m.get("request_seq") == request_seq)

    def call(self, command: str, **arguments: Any) -> Dict[str, Any]:
        """Send a request; its response (AssertionError when it failed)."""
        reply = self.response(self.send(command, **arguments))
        assert reply["success"], reply
        return reply

    def event(self, name: str) -> Dict[str, Any]:
        return self.wait(lambda m: m.get("type") == "event" and m.get("event") == name)

    def kept_events(self, name: str) -> List[Dict[str, Any]]:
        return [m for m in self._kept if m.get("type") == "event" and m.get("event") == name]


def attach_and_stop_at(dap: DapClient, local_file: str, line: int,
                       path_mappings: List[Dict[str, str]]) -> Dict[str, Any]:
    """Attach to debugpy as an IDE does (initialize, attach, breakpoints, configurationDone)
    and wait until the program stops at ``line`` of ``local_file``; the ``stopped`` event."""
    dap.call("initialize", clientID="workbench-tests", adapterID="debugpy", linesStartAt1=True,
             columnsStartAt1=True, pathFormat="path")
    attach = dap.send("attach", justMyCode=True, redirectOutput=True, pathMappings=path_mappings)
    dap.event("initialized")
    breakpoints = dap.call("setBreakpoints", source={"path": local_file},
                           breakpoints=[{"line": line}])["body"]["breakpoints"]
    assert breakpoints and breakpoints[0]["verified"], breakpoints
    dap.call("configurationDone")
    assert dap.response(attach)["success"]
    return dap.event("stopped")
