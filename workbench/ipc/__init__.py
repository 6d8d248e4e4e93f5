"""The hub ⇄ window channel: JSON-RPC 2.0 in length-prefixed frames over a local socket.

The Qt-free parts (framing, message names, endpoint, blocking client) import nothing heavy, so
the CLI can talk to the hub without loading Qt.
"""

from .errors import IpcError, RpcError
from .framing import MAX_FRAME_BYTES, FrameDecoder, FrameError, encode_frame

__all__ = [
    "MAX_FRAME_BYTES",
    "FrameDecoder",
    "FrameError",
    "IpcError",
    "RpcError",
    "encode_frame",
]
