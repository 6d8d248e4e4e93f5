"""Code intelligence through the Language Server Protocol: a client of python-lsp-server, one
per project window, in Qt-free modules here and widgets in ``workbench.lsp.widgets``.

Nothing here imports the protocol library (``workbench.lsp.protocol``, with pydantic under it):
the session imports it on its own thread when it starts.
"""

from workbench.lsp.config import ServerConfig, server_config
from workbench.lsp.errors import LanguageServerError
from workbench.lsp.results import (
    Candidate,
    Diagnostics,
    FileEdit,
    Location,
    Problem,
    ServerStatus,
    Signature,
    SignatureHelp,
    Span,
    Symbol,
    TextEdit,
)
from workbench.lsp.session import LanguageSession, Request, RequestFailed

__all__ = [
    "Candidate",
    "Diagnostics",
    "FileEdit",
    "LanguageServerError",
    "LanguageSession",
    "Location",
    "Problem",
    "Request",
    "RequestFailed",
    "ServerConfig",
    "ServerStatus",
    "Signature",
    "SignatureHelp",
    "Span",
    "Symbol",
    "TextEdit",
    "server_config",
]
