"""One language server for one project window: its process, the documents it is told about,
and the requests asked of it. Qt-free.

Every call here returns at once: it only puts an operation in the session's inbox. A protocol
thread of the session's own takes operations and the server's bytes from that inbox, speaks the
protocol (``workbench.lsp.protocol``) and calls back ``on_event`` and each request's
``on_answer`` from that thread, so typing never waits for the server and the caller marshals
answers to its own thread.

Each document change gets a new version at once, but the server is told of changes only
when a request needs the new text or typing pauses (``sync_quiet``, at most ``sync_max`` after
the first untold one): pylsp lints the file after each change it is told of, and a lint running
beside a completion makes it wait. Each request carries the version it was asked
for: an answer that arrives after the document changed again is dropped (requests made by a
command instead get a ``RequestFailed`` saying the file changed). Requests typing makes
(completion, hover, signature help) keep at most one in flight per kind; a newer one waits for
it and replaces any older waiting one, so a busy server never works through a backlog of old
positions. A server that dies is started again and told the open documents, unless it has died
``max_restarts`` times within ``restart_window`` seconds, or never started for want of pylsp.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from workbench.lsp.config import ServerConfig
from workbench.lsp.errors import LanguageServerError
from workbench.lsp.results import Progress, ServerStatus, Span
from workbench.lsp.text_sync import text_change

log = logging.getLogger(__name__)

TYPING_KINDS = ("completion", "hover", "signature_help")
INITIALIZE_TIMEOUT_S = 90.0
SHUTDOWN_GRACE_S = 2.0
RESTART_DELAY_S = 0.5
SYNC_QUIET_S = 0.3
SYNC_MAX_S = 1.5


@dataclass(frozen=True)
class RequestFailed:
    """What ``on_answer`` gets instead of a result: the server failed, stopped, or the file
    changed before the answer came (``stale``)."""

    message: str
    stale: bool = False


@dataclass
class Request:
    """A request as asked: of ``path`` at its document ``version``, at 1-based ``line`` and
    0-based ``column`` where that applies."""

    kind: str
    path: Path
    version: int | None
    line: int = 0
    column: int = 0
    extra: dict = field(default_factory=dict)
    on_answer: Callable[[Any], None] | None = None


class LanguageSession:
    """The language server of one project; see the module's docstring."""

    def __init__(self, config: ServerConfig, on_event: Callable[[object], None], *, role: str = "all",
                 max_restarts: int = 3, restart_window: float = 120.0,
                 initialize_timeout: float = INITIALIZE_TIMEOUT_S,
                 sync_quiet: float | None = SYNC_QUIET_S, sync_max: float = SYNC_MAX_S, niceness: int = 0):
        self.config = config
        self.niceness = niceness
        """How far below the window's priority the server runs (background work: linting)."""
        self.role = role
        """What the server is configured for (``ServerConfig.server_settings``)."""
        self.sync_quiet = sync_quiet
        """Tell the server of changes once typing pauses this long (None: only when a request
        needs them, or ``sync_max`` after the first untold one)."""
        self.sync_max = sync_max
        self._on_event = on_event
        self.max_restarts = max_restarts
        self.restart_window = restart_window
        self.initialize_timeout = initialize_timeout
        self._inbox: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._versions: dict[Path, int] = {}
        self._version_counter = itertools.count(1)
        self._thread: threading.Thread | None = None
        self.status = ServerStatus("stopped")
        """The last status reported (read from any thread)."""
        self.server_pid: int | None = None
        """The server process's id while one runs."""
        # Owned by the protocol thread from here on.
        self._protocol = None
        self._process = None
        self._client = None
        self._generation = 0
        self._documents: dict[Path, tuple[int, str]] = {}  # the latest version and text of each
        self._told: dict[Path, tuple[int, str]] = {}  # what the server was told of each
        self._sync_at: float | None = None
        self._sync_by: float | None = None
        self._in_flight: dict[Any, Request] = {}
        self._held: list[Request] = []
        self._busy: dict[str, Request] = {}
        self._waiting: dict[str, Request] = {}
        self._deaths: collections.deque[float] = collections.deque()
        self._respawn_at: float | None = None
        self._initialize_deadline: float | None = None
        self._stopping_deadline: float | None = None
        self._failed = False

    # --- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server (once; later calls do nothing while it runs)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="lsp-protocol", daemon=True)
        self._thread.start()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def restart(self) -> None:
        """Stop the server if it runs and start a fresh one (forgetting earlier crashes)."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = None
            self.start()
        else:
            self._inbox.put(("op", self._restart_now, ()))

    def stop(self, wait: float = 0.0) -> None:
        """Shut the server down; waits up to ``wait`` seconds for it to end (never when 0)."""
        thread = self._thread
        if thread is None:
            return
        self._inbox.put(("stop",))
        if wait:
            thread.join(wait)
            process = self._process
            if thread.is_alive() and process is not None:
                process.kill()
                thread.join(1.0)

    # --- documents ----------------------------------------------------------------------------

    def open(self, path: Path, text: str) -> int:
        """Tell the server ``path`` is open with ``text``; returns its version."""
        version = self._new_version(path)
        self._inbox.put(("op", self._open_now, (Path(path), version, text)))
        return version

    def change(self, path: Path, text: str) -> int:
        """The document's text is now ``text``; returns its new version."""
        version = self._new_version(path)
        self._inbox.put(("op", self._change_now, (Path(path), version, text)))
        return version

    def save(self, path: Path, text: str) -> None:
        self._inbox.put(("op", self._save_now, (Path(path), text)))

    def close(self, path: Path) -> None:
        with self._lock:
            self._versions.pop(Path(path), None)
        self._inbox.put(("op", self._close_now, (Path(path),)))

    def version(self, path: Path) -> int | None:
        with self._lock:
            return self._versions.get(Path(path))

    def is_current(self, request: Request) -> bool:
        """Whether ``request``'s document is still at the version it was asked at."""
        return request.version is None or self.version(request.path) == request.version

    def _new_version(self, path: Path) -> int:
        with self._lock:
            # One counter for every document: a file closed and opened again never meets an
            # answer meant for its earlier life.
            version = next(self._version_counter)
            self._versions[Path(path)] = version
            return version

    # --- requests -----------------------------------------------------------------------------

    def completion(self, path: Path, line: int, column: int, on_answer, on_stale=None) -> Request:
        """Completions at 1-based ``line``, 0-based ``column``: ``on_answer(list[Candidate])``.
        ``on_stale(list[Candidate])`` gets an answer that came after the document changed
        (dropped without it): the list for a name's start still serves the rest of the name."""
        return self._ask("completion", path, on_answer, line, column, on_stale=on_stale)

    def signature_help(self, path: Path, line: int, column: int, on_answer) -> Request:
        """``on_answer(SignatureHelp)``."""
        return self._ask("signature_help", path, on_answer, line, column)

    def hover(self, path: Path, line: int, column: int, on_answer) -> Request:
        """``on_answer(str)``: the help, in markdown ("" for none)."""
        return self._ask("hover", path, on_answer, line, column)

    def definition(self, path: Path, line: int, column: int, on_answer) -> Request:
        """``on_answer(list[Location])``."""
        return self._ask("definition", path, on_answer, line, column)

    def references(self, path: Path, line: int, column: int, on_answer) -> Request:
        """``on_answer(list[Location])``, the declaration included."""
        return self._ask("references", path, on_answer, line, column)

    def rename(self, path: Path, line: int, column: int, new_name: str, on_answer) -> Request:
        """``on_answer(list[FileEdit])``."""
        return self._ask("rename", path, on_answer, line, column, new_name=new_name)

    def symbols(self, path: Path, on_answer) -> Request:
        """``on_answer(list[Symbol])``: the file's outline."""
        return self._ask("symbols", path, on_answer)

    def format(self, path: Path, on_answer, span: Span | None = None) -> Request:
        """``on_answer(tuple[TextEdit, ...])`` formatting the file (or only ``span``)."""
        return self._ask("format", path, on_answer, span=span)

    def _ask(self, kind: str, path: Path, on_answer, line: int = 0, column: int = 0, **extra) -> Request:
        path = Path(path)
        request = Request(kind, path, self.version(path), line, column, extra, on_answer)
        self._inbox.put(("op", self._request_now, (request,)))
        return request

    # --- the protocol thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            # Leave this import here: pydantic under the protocol library costs a third of a
            # second, paid on this thread when the first Python file opens.
            from workbench.lsp import protocol
        except ImportError as exc:
            self._fail(f"The language server client library is missing ({exc}). Install sansio-lsp-client.")
            return
        self._protocol = protocol
        self._stopping_deadline = None
        self._spawn()
        while True:
            try:
                item = self._inbox.get(timeout=self._next_timeout())
            except queue.Empty:
                item = None
            try:
                if item is not None and item[0] == "stop":
                    if self._begin_stop():
                        break
                elif item is not None and not self._handle(item):
                    break
                self._check_deadlines()
                self._flush()
            except Exception:  # a bug here must not leave a window without its server silently
                log.exception("The language server session failed")
                self._fail("The language server session failed (see the log); Restart Language Server.")
        self._report(ServerStatus("stopped"))

    def _handle(self, item) -> bool:
        """Handle one inbox item; False ends the thread."""
        kind = item[0]
        if kind == "op":
            item[1](*item[2])
        elif kind == "bytes":
            if item[1] == self._generation and self._client is not None:
                for event in self._client.recv(item[2]):
                    self._on_message(event)
        elif kind == "exit":
            if item[1] == self._generation:
                return self._on_server_exit()
        return True

    def _next_timeout(self) -> float | None:
        deadlines = [d for d in (self._respawn_at, self._initialize_deadline, self._stopping_deadline,
                                 self._sync_at, self._sync_by) if d]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        if self._respawn_at is not None and now >= self._respawn_at:
            self._respawn_at = None
            self._spawn()
        if self._initialize_deadline is not None and now >= self._initialize_deadline:
            self._initialize_deadline = None
            log.warning("The language server did not answer initialize in %.0f s", self.initialize_timeout)
            if self._process is not None:
                self._process.kill()  # its end of file counts as a crash
        if self._stopping_deadline is not None and now >= self._stopping_deadline and self._process is not None:
            self._process.kill()
        if (self._sync_at is not None and now >= self._sync_at) or (self._sync_by is not None and now >= self._sync_by):
            self._tell_changes()

    def _flush(self) -> None:
        if self._client is None or self._process is None:
            return
        data = self._client.send()
        if data and not self._process.write(bytes(data)):
            log.debug("The language server's input is closed")

    def _spawn(self) -> None:
        from workbench.lsp.server_process import ServerProcess

        self._generation += 1
        generation = self._generation
        self._failed = False
        try:
            self._process = ServerProcess(
                self.config.command, self.config.root,
                lambda data: self._inbox.put(("bytes", generation, data)),
                lambda: self._inbox.put(("exit", generation)), self.niceness)
        except LanguageServerError as exc:
            self._process = None
            self._fail(str(exc))
            return
        self.server_pid = self._process.pid
        self._client = self._protocol.new_client(self.config.root, os.getpid())
        self._initialize_deadline = time.monotonic() + self.initialize_timeout
        self._report(ServerStatus("starting"))
        self._flush()

    def _running(self) -> bool:
        return self._client is not None and self._client.is_initialized and self._stopping_deadline is None

    def _on_message(self, event) -> None:
        protocol = self._protocol
        events = protocol.events
        if isinstance(event, protocol.Answer) and not isinstance(event.event, (events.Initialized, events.Shutdown)):
            self._on_answer(event)
            return
        if isinstance(event, protocol.Answer):
            if event.error:
                log.warning("The language server refused to start or stop: %s", event.error)
            event = event.event
        if isinstance(event, events.Initialized):
            self._on_initialized()
        elif isinstance(event, events.Shutdown):
            self._client.exit()
            self._flush()
            self._process.close_input()
        elif isinstance(event, protocol.Published):
            self._on_diagnostics(protocol.diagnostics(event))
        elif isinstance(event, events.WorkDoneProgressCreate):
            event.reply()
        elif isinstance(event, events.WorkDoneProgressBegin):
            self._on_event(Progress(event.value.title))
        elif isinstance(event, events.WorkDoneProgressEnd):
            self._on_event(Progress("", done=True))
        elif isinstance(event, events.ConfigurationRequest):
            settings = self.config.server_settings(self.role)
            event.reply([settings.get(item.section, {}) if item.section else settings for item in event.items])
        elif isinstance(event, events.RegisterCapabilityRequest):
            event.reply()
        elif isinstance(event, events.WorkspaceFolders):
            event.reply([protocol.structs.WorkspaceFolder(uri=self.config.root.as_uri(), name=self.config.root.name)])
        elif isinstance(event, events.ShowMessageRequest):
            event.reply(None)
        elif isinstance(event, (events.ShowMessage, events.LogMessage)):
            log.info("language server: %s", event.message)

    def _on_initialized(self) -> None:
        self._initialize_deadline = None
        client, protocol = self._client, self._protocol
        client.did_change_configuration(self.config.server_settings(self.role))
        for path, (version, text) in self._documents.items():
            client.did_open(protocol.document_item(path, version, text))
        self._told = dict(self._documents)
        self._sync_at = self._sync_by = None
        held, self._held = self._held, []
        for request in held:
            self._request_now(request)
        self._report(ServerStatus("running"))

    def _on_server_exit(self) -> bool:
        process, self._process = self._process, None
        self._client = None
        self._told.clear()
        self.server_pid = None
        code = process.wait(2.0) if process is not None else None
        tail = process.stderr_tail(wait=1.0) if process is not None else ""
        self._drop_requests("The language server stopped before it answered; try again in a moment.")
        if self._stopping_deadline is not None:
            return False
        if self._failed:
            return True
        if "No module named" in tail and "pylsp" in tail:
            self._fail(f"The Python language server is not installed for {self.config.command[0]} (No module "
                       "named pylsp). Install python-lsp-server there (pip install python-lsp-server), or set "
                       "[lsp] command in workbench.toml, then Restart Language Server.")
            return True
        now = time.monotonic()
        self._deaths.append(now)
        while self._deaths and now - self._deaths[0] > self.restart_window:
            self._deaths.popleft()
        last_words = f" Its last words: {tail.splitlines()[-1]}" if tail else ""
        if len(self._deaths) > self.max_restarts:
            self._fail(f"The Python language server stopped {len(self._deaths)} times in "
                       f"{self.restart_window:.0f} s (exit code {code}), so it is not started again.{last_words} "
                       "Completions, diagnostics and navigation are off until you Restart Language Server.")
            return True
        log.warning("The language server ended (exit code %s); starting it again.%s", code, last_words)
        self._report(ServerStatus("restarting", f"The language server stopped (exit code {code}); restarting it."))
        self._respawn_at = now + RESTART_DELAY_S * len(self._deaths)
        return True

    def _fail(self, message: str) -> None:
        self._failed = True
        self._respawn_at = None
        self._initialize_deadline = None
        if self._process is not None:
            self._generation += 1  # its end is expected now
            self._process.kill()
            self._process = None
            self._client = None
            self.server_pid = None
        self._drop_requests(message)
        self._report(ServerStatus("failed", message))

    def _restart_now(self) -> None:
        self._deaths.clear()
        if self._process is not None:
            self._generation += 1
            self._process.kill()
            self._process = None
            self._client = None
            self._drop_requests("The language server is restarting; try again in a moment.")
        self._respawn_at = None
        self._spawn()

    def _begin_stop(self) -> bool:
        """Start shutting down; True when there is nothing to wait for."""
        self._respawn_at = None
        self._initialize_deadline = None
        self._drop_requests("The language server was stopped.")
        if self._process is None:
            return True
        self._stopping_deadline = time.monotonic() + SHUTDOWN_GRACE_S
        if self._client is not None and self._client.state == self._protocol.lsp.ClientState.NORMAL:
            self._client.shutdown()
        else:
            self._process.kill()
        return False

    def _report(self, status: ServerStatus) -> None:
        self.status = status
        self._on_event(status)

    # --- documents, on the protocol thread ------------------------------------------------------

    def _open_now(self, path: Path, version: int, text: str) -> None:
        self._documents[path] = (version, text)
        if self._running():
            self._client.did_open(self._protocol.document_item(path, version, text))
            self._told[path] = (version, text)

    def _change_now(self, path: Path, version: int, text: str) -> None:
        if path not in self._documents:
            return  # closed since
        self._documents[path] = (version, text)
        if not self._running():
            return  # a server that starts later is told the whole text
        now = time.monotonic()
        if self.sync_quiet is not None:
            self._sync_at = now + self.sync_quiet
        if self._sync_by is None:
            self._sync_by = now + self.sync_max

    def _tell_changes(self) -> None:
        """Tell the server every change it has not been told of, one incremental change per
        document from what it knows to the latest text."""
        self._sync_at = self._sync_by = None
        if not self._running():
            return
        protocol = self._protocol
        for path, (version, text) in self._documents.items():
            told = self._told.get(path)
            if told is None or told[0] == version:
                continue
            self._told[path] = (version, text)
            change = text_change(told[1], text)
            if change is None:
                continue
            self._client.did_change(protocol.versioned_id(path, version), [protocol.change_event(
                change.line, change.column, change.end_line, change.end_column, change.text)])

    def _save_now(self, path: Path, text: str) -> None:
        if path in self._documents and self._running():
            self._tell_changes()
            self._client.did_save(self._protocol.document_id(path), text)

    def _close_now(self, path: Path) -> None:
        self._told.pop(path, None)
        if self._documents.pop(path, None) is not None and self._running():
            self._client.did_close(self._protocol.document_id(path))

    # --- requests, on the protocol thread -----------------------------------------------------

    def _request_now(self, request: Request) -> None:
        if self._failed:
            self._deliver(request, RequestFailed(self.status.message or "The language server is not running."))
            return
        if not self._running():
            if request.kind in TYPING_KINDS:
                # Only the newest of a kind is worth asking once the server is up.
                self._held = [held for held in self._held if held.kind != request.kind]
            self._held.append(request)
            return
        if not self._is_current(request) and request.extra.get("on_stale") is None:
            self._deliver_stale(request)
            return
        # A completion typed past before it went out is still asked (about the text as it is
        # now, at the name's start): its answer serves the rest of the name through on_stale.
        # Dropped here, a fast typist after a dot got no list until they paused.
        if request.kind in TYPING_KINDS and request.kind in self._busy:
            replaced = self._waiting.get(request.kind)
            self._waiting[request.kind] = request
            if replaced is not None:
                log.debug("A newer %s request replaces one that was waiting", request.kind)
            return
        self._send(request)

    def _send(self, request: Request) -> None:
        self._tell_changes()  # the answer must be about the text as it is
        client, protocol = self._client, self._protocol
        path = request.path
        at = protocol.position(path, request.line, request.column)
        kind = request.kind
        if kind == "completion":
            message_id = client.completion(at)
        elif kind == "signature_help":
            message_id = client.signatureHelp(at)
        elif kind == "hover":
            message_id = client.hover(at)
        elif kind == "definition":
            message_id = client.definition(at)
        elif kind == "references":
            message_id = client.references(at)
        elif kind == "rename":
            message_id = client.rename(at, request.extra["new_name"])
        elif kind == "symbols":
            message_id = client.documentSymbol(protocol.document_id(path))
        elif kind == "format" and request.extra.get("span") is not None:
            message_id = client.rangeFormatting(protocol.document_id(path), protocol.lsp_range(request.extra["span"]),
                                                protocol.formatting_options())
        elif kind == "format":
            message_id = client.formatting(protocol.document_id(path), protocol.formatting_options())
        else:
            raise ValueError(f"unknown request kind {kind!r}")
        self._in_flight[message_id] = request
        if kind in TYPING_KINDS:
            self._busy[kind] = request

    def _on_answer(self, answer) -> None:
        request = self._in_flight.pop(answer.request_id, None)
        if request is None:
            return  # the shutdown's answer, or one for a server that was replaced
        if self._busy.get(request.kind) is request:
            del self._busy[request.kind]
            waiting = self._waiting.pop(request.kind, None)
            if waiting is not None:
                self._request_now(waiting)
        if answer.error:
            self._deliver(request, RequestFailed(f"The language server could not answer: {answer.error}"))
            return
        if not self._is_current(request):
            on_stale = request.extra.get("on_stale")
            if on_stale is not None:
                try:
                    on_stale(self._result(request, answer.event))
                except Exception:  # a surprising answer or the caller's bug: dropped as before
                    log.exception("Handling a late %s answer failed", request.kind)
            self._deliver_stale(request)
            return
        try:
            result = self._result(request, answer.event)
        except Exception as exc:  # a surprising answer fails this request only
            log.exception("Could not read the language server's %s answer", request.kind)
            result = RequestFailed(f"The language server's answer could not be read: {exc}")
        self._deliver(request, result)

    def _result(self, request: Request, event) -> Any:
        protocol = self._protocol
        kind = request.kind
        if kind == "completion":
            return protocol.candidates(event)
        if kind == "signature_help":
            return protocol.signature_help(event)
        if kind == "hover":
            return protocol.markup_text(event.contents)
        if kind in ("definition", "references"):
            return protocol.locations(event.result, self._line_text_reader())
        if kind == "rename":
            return protocol.workspace_edit(event)
        if kind == "symbols":
            return protocol.symbols(event)
        return protocol.text_edits(event.result)

    def _line_text_reader(self) -> Callable[[Path, int], str]:
        read: dict[Path, list[str]] = {}

        def line_text(path: Path, line: int) -> str:
            if path not in read:
                text = self._documents.get(path, (0, None))[1]
                if text is None:
                    try:
                        text = path.read_text(encoding="utf-8", errors="replace")
                    except OSError:
                        text = ""
                read[path] = text.splitlines()
            lines = read[path]
            return lines[line - 1] if 0 < line <= len(lines) else ""

        return line_text

    def _on_diagnostics(self, diagnostics) -> None:
        current = self.version(diagnostics.path)
        if current is None:
            return  # closed since
        if diagnostics.version is not None and diagnostics.version != current:
            return  # for older text: newer diagnostics follow once the server has read it
        self._on_event(diagnostics)

    def _is_current(self, request: Request) -> bool:
        return self.is_current(request)

    def _deliver(self, request: Request, result) -> None:
        if request.on_answer is None:
            return
        try:
            request.on_answer(result)
        except Exception:  # the caller's bug must not stop the session
            log.exception("Handling the language server's %s answer failed", request.kind)

    def _deliver_stale(self, request: Request) -> None:
        # Typing asks again by itself; a command says so, so its user can ask again.
        if request.kind not in TYPING_KINDS:
            self._deliver(request, RequestFailed(f"{request.path.name} changed before the language server "
                                                 "answered; try again.", stale=True))

    def _drop_requests(self, message: str) -> None:
        pending = list(self._in_flight.values()) + self._held + list(self._waiting.values())
        self._in_flight.clear()
        self._held.clear()
        self._busy.clear()
        self._waiting.clear()
        for request in pending:
            self._deliver(request, RequestFailed(message))
