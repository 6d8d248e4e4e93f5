"""Error types of the IPC channel."""

from __future__ import annotations


class IpcError(Exception):
    """The hub cannot be reached or answered something unusable; the message says what to do."""


class RpcError(Exception):
    """A JSON-RPC error answer, raised by a handler or received from the peer."""

    # Codes from the JSON-RPC 2.0 specification, plus our own in the server range.
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TIMEOUT = -32000
    APPLICATION_ERROR = -32001

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict:
        error: dict = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error
