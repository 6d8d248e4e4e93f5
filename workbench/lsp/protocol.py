"""The Language Server Protocol through the ``sansio-lsp-client`` library, and the conversion
of its answers into this capability's plain results.

The library builds and parses the messages (no I/O of its own); ``ProtocolClient`` adds what
this capability needs on top: every answer comes with the id of its request (the library drops
it for some), the version of published diagnostics is kept, and a request the library does not
know is refused politely instead of stopping the session. Only the session's protocol thread
imports this module: pydantic, under the library, costs a third of a second.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

import sansio_lsp_client as lsp
from sansio_lsp_client import events, structs

from workbench.lsp.results import (
    Candidate,
    Diagnostics,
    FileEdit,
    Location,
    Problem,
    Signature,
    SignatureHelp,
    Span,
    Symbol,
    TextEdit,
)

log = logging.getLogger(__name__)

METHOD_NOT_FOUND = -32601


@dataclass
class Answer:
    """The server's answer (or ``error``) to request ``request_id``."""

    request_id: Any
    event: Any = None
    error: str = ""


@dataclass
class Published:
    """Diagnostics the server published, with the document version they are for."""

    event: Any
    version: int | None


@dataclass
class Unhandled:
    """A server message this client does not act on."""

    method: str


class ProtocolClient(lsp.Client):
    """``sansio_lsp_client.Client`` that pairs every answer with its request id."""

    def _handle_response(self, response):  # noqa: D401 (library override)
        try:
            event = super()._handle_response(response)
        except Exception as exc:  # a malformed answer fails its request, not the session
            self._unanswered_requests.pop(response.id, None)
            log.warning("Could not read the language server's answer %s: %s", response.id, exc)
            return Answer(response.id, error=f"unreadable answer: {exc}")
        if isinstance(event, events.ResponseError):
            return Answer(response.id, error=event.message)
        return Answer(response.id, event)

    def _handle_request(self, request):
        try:
            event = super()._handle_request(request)
        except NotImplementedError:
            if request.id is not None:
                self._send_response(request.id, error={"code": METHOD_NOT_FOUND,
                                                       "message": f"{request.method} is not supported"})
            return Unhandled(request.method)
        if isinstance(event, events.PublishDiagnostics):
            version = (request.params or {}).get("version")
            return Published(event, version if isinstance(version, int) else None)
        return event

    def request(self, method: str, params: dict) -> Any:
        """Send a request the library has no method for; returns its id."""
        return self._send_request(method=method, params=params)


def new_client(root: Path, process_id: int) -> ProtocolClient:
    uri = root.as_uri()
    return ProtocolClient(process_id=process_id, root_uri=uri,
                          workspace_folders=[structs.WorkspaceFolder(uri=uri, name=root.name)])


def uri_of(path: Path) -> str:
    return Path(path).as_uri()


def path_of(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def document_item(path: Path, version: int, text: str):
    return structs.TextDocumentItem(uri=uri_of(path), languageId="python", version=version, text=text)


def document_id(path: Path):
    return structs.TextDocumentIdentifier(uri=uri_of(path))


def versioned_id(path: Path, version: int):
    return structs.VersionedTextDocumentIdentifier(uri=uri_of(path), version=version)


def position(path: Path, line: int, column: int):
    """The protocol's position for 1-based ``line`` and 0-based ``column`` in ``path``."""
    return structs.TextDocumentPosition(textDocument=document_id(path),
                                        position=structs.Position(line=line - 1, character=column))


def change_event(line: int, column: int, end_line: int, end_column: int, text: str):
    """An incremental change of 0-based positions."""
    return structs.TextDocumentContentChangeEvent(
        range=structs.Range(start=structs.Position(line=line, character=column),
                            end=structs.Position(line=end_line, character=end_column)),
        rangeLength=None, text=text)


def lsp_range(span: Span):
    return structs.Range(start=structs.Position(line=span.line - 1, character=span.column),
                         end=structs.Position(line=span.end_line - 1, character=span.end_column))


def formatting_options(tab_size: int = 4):
    return structs.FormattingOptions(tabSize=tab_size, insertSpaces=True)


# --- answers into results --------------------------------------------------------------------

def span_of(range_) -> Span:
    return Span(range_.start.line + 1, range_.start.character, range_.end.line + 1, range_.end.character)


COMPLETION_KINDS = {kind.value: kind.name.lower().replace("_", " ") for kind in structs.CompletionItemKind}
SYMBOL_KINDS = {kind.value: kind.name.lower().replace("_", " ") for kind in structs.SymbolKind}
SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def markup_text(content) -> str:
    """The text of a hover's or a documentation's content (markdown stays markdown)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(part for part in (markup_text(item) for item in content) if part)
    if isinstance(content, structs.MarkedString):
        return f"```{content.language}\n{content.value}\n```"
    return getattr(content, "value", "") or ""


def candidates(event) -> list[Candidate]:
    found = event.completion_list.items if event.completion_list is not None else []
    result = []
    for item in found:
        insert = item.insertText or item.label
        if item.textEdit is not None:
            insert = item.textEdit.newText
        result.append(Candidate(label=item.label, insert=insert,
                                kind=COMPLETION_KINDS.get(int(item.kind), "") if item.kind else "",
                                detail=item.detail or "", documentation=markup_text(item.documentation),
                                sort_key=item.sortText or item.label))
    result.sort(key=lambda candidate: candidate.sort_key)
    return result


def signature_help(event) -> SignatureHelp:
    signatures = []
    for found in event.signatures:
        parameters = tuple(tuple(p.label) if isinstance(p.label, (list, tuple)) else p.label
                           for p in (found.parameters or []))
        signatures.append(Signature(found.label, parameters, markup_text(found.documentation)))
    active = event.activeSignature or 0
    parameter = event.activeParameter
    if signatures and 0 <= active < len(event.signatures) and event.signatures[active].activeParameter is not None:
        parameter = event.signatures[active].activeParameter
    return SignatureHelp(tuple(signatures), active, parameter or 0)


def locations(result, line_text: Callable[[Path, int], str]) -> list[Location]:
    """Locations of a definition or references answer (a location, a list of them, or of
    links); ``line_text(path, line)`` gives the text shown beside each."""
    if result is None:
        return []
    if not isinstance(result, list):
        result = [result]
    found = []
    for item in result:
        if isinstance(item, structs.LocationLink):
            path, span = path_of(item.targetUri), span_of(item.targetSelectionRange)
        else:
            path, span = path_of(item.uri), span_of(item.range)
        found.append(Location(path, span, line_text(path, span.line)))
    return found


def text_edits(edits) -> tuple[TextEdit, ...]:
    return tuple(TextEdit(span_of(edit.range), edit.newText) for edit in edits or [])


def workspace_edit(event) -> list[FileEdit]:
    files: dict[Path, list[TextEdit]] = {}
    if event.documentChanges:
        for change in event.documentChanges:
            files.setdefault(path_of(change.textDocument.uri), []).extend(text_edits(change.edits))
    for uri, edits in (event.changes or {}).items():
        parsed = [structs.TextEdit.model_validate(edit) if isinstance(edit, dict) else edit for edit in edits]
        files.setdefault(path_of(uri), []).extend(text_edits(parsed))
    return [FileEdit(path, tuple(edits)) for path, edits in files.items()]


UNREADABLE_CODES = ("E901", "E902")
"""pycodestyle's codes for a file it could not tokenize (TokenError, IOError)."""


def diagnostics(published: Published) -> Diagnostics:
    path = path_of(published.event.uri)
    problems = []
    for found in published.event.diagnostics:
        severity = SEVERITIES.get(int(found.severity), "error") if found.severity else "error"
        problems.append(Problem(path, span_of(found.range), found.message, severity, found.source or "",
                                "" if found.code is None else str(found.code)))
    if any(p.source == "pycodestyle" and p.code in UNREADABLE_CODES for p in problems):
        # pycodestyle could not tokenize the file (a bracket left open while typing a call):
        # its other warnings are of that misreading, every later line a "continuation line".
        # As flake8 does, only the error that says so stays beside pyflakes' syntax error.
        problems = [p for p in problems if p.source != "pycodestyle" or p.code in UNREADABLE_CODES]
    return Diagnostics(path, published.version, tuple(problems))


# Kinds that can hold other symbols worth showing in an outline; a function's own variables are
# left out (they would bury its methods and nested functions).
CONTAINERS = {"class", "struct", "interface", "enum", "module", "namespace"}
CALLABLES = {"function", "method", "constructor"}


def symbols(event) -> list[Symbol]:
    """The outline of a documentSymbol answer: nested symbols as the server sent them, or a
    flat list nested by range containment."""
    result = event.result or []
    if result and isinstance(result[0], structs.DocumentSymbol):
        return [_document_symbol(found) for found in result]
    flat = sorted(((found.name, SYMBOL_KINDS.get(int(found.kind), ""), span_of(found.location.range))
                   for found in result), key=lambda item: (item[2].line, item[2].column, -item[2].end_line))
    return _nest(flat)


def _document_symbol(found) -> Symbol:
    return Symbol(found.name, SYMBOL_KINDS.get(int(found.kind), ""), span_of(found.selectionRange),
                  tuple(_document_symbol(child) for child in found.children or []), found.detail or "")


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)) and outer != inner


def _nest(flat: list[tuple[str, str, Span]]) -> list[Symbol]:
    roots: list[dict] = []
    stack: list[dict] = []
    for name, kind, span in flat:
        node = {"name": name, "kind": kind, "span": span, "children": []}
        while stack and not _contains(stack[-1]["span"], span):
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None and parent["kind"] in CALLABLES and kind not in CALLABLES | CONTAINERS:
            continue  # a local variable
        (parent["children"] if parent is not None else roots).append(node)
        stack.append(node)

    def freeze(node: dict) -> Symbol:
        return Symbol(node["name"], node["kind"], node["span"], tuple(freeze(child) for child in node["children"]))

    return [freeze(node) for node in roots]
