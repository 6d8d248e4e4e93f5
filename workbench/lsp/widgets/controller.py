"""The language server of one project window, seen from the GUI thread.

The controller starts the server when the first Python file opens, links every Python editor
to it (``EditorLink``), serves the window's completion and hover providers for Python files,
and brings the server's answers and events over to the GUI thread, where each is checked once
more against the document's version before it is used.

pylsp runs as two processes, both told every open document: one answers (completion, help,
navigation, rename; jedi), the other checks (pyflakes, pycodestyle; formatting with autopep8).
pylsp lints a file each time typing pauses, under the same interpreter lock as its completions:
in one process a completion waits for the lint of a long file (0.5 s for 2,000 lines), in two
it does not. They start, fail and restart together and show one status.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from workbench.editor.assist import PENDING, TextPosition
from workbench.lsp.config import server_config
from workbench.lsp.editor_answers import completions, is_python, name_start, worth_asking
from workbench.lsp.results import Diagnostics, ServerStatus
from workbench.lsp.session import LanguageSession, Request, RequestFailed

log = logging.getLogger(__name__)

HOVER_MAX_CHARACTERS = 2500
HOVER_CODE_WIDTH = 88
# While a name is being typed, completions are asked once typing pauses this long: the server
# answers one question at a time, and one for every letter would queue before the one wanted.
# After a dot, or on Ctrl+Space, they are asked at once.
NAME_PAUSE_MS = 120
ASSIST_NICENESS = 3
CHECKER_NICENESS = 8
# The checker's requests; everything else goes to the assistant.
CHECKER_REQUESTS = ("format",)
# The order in which one process's state wins over the other's in the status shown.
STATE_WEIGHT = {"failed": 4, "restarting": 3, "starting": 2, "stopped": 1, "running": 0}


class LanguageController(QObject):
    """The language server of ``window`` (see the module's docstring)."""

    sig_status_changed = Signal(object)
    """The server's ``ServerStatus`` changed."""

    sig_symbols_stale = Signal(object)
    """A Python file's text changed or the server (re)started: its outline may differ (path,
    or None for every file)."""

    _sig_call = Signal(object, object)  # (function, argument), from the protocol thread

    def __init__(self, window):
        super().__init__(window)
        self.setObjectName("lsp-controller")
        self.window = window
        self.config = server_config(window.project.root, window.project.settings)
        self.session: LanguageSession | None = None
        """The process that answers (None until the first Python file opens)."""
        self.checker: LanguageSession | None = None
        """The process that checks and formats."""
        self.status = ServerStatus("stopped")
        self._statuses: dict[str, ServerStatus] = {}
        self.links: dict[Path, object] = {}
        self._completion_cache: tuple | None = None
        self._sig_call.connect(self._call, Qt.ConnectionType.QueuedConnection)
        self._name_timer = QTimer(self, singleShot=True, interval=NAME_PAUSE_MS)
        self._name_timer.timeout.connect(self._ask_for_name)
        self._name_question: Callable[[], None] | None = None

    # --- the server -----------------------------------------------------------------------------

    def ensure_session(self) -> LanguageSession:
        """The answering session, both started on first use."""
        if self.session is None:
            def reporter(role):
                return lambda event: self.on_gui_thread(lambda e: self._on_event(role, e), event)

            # The assistant needs the text only when asked; the checker once typing pauses.
            # Both yield the processor to the window (its painting, a run's live curves): the
            # assistant a little, the checker's linting, background work, more.
            self.session = LanguageSession(self.config, reporter("assist"), role="assist", sync_quiet=None,
                                           sync_max=2.0, niceness=ASSIST_NICENESS)
            self.checker = LanguageSession(self.config, reporter("checker"), role="checker",
                                           niceness=CHECKER_NICENESS)
            # The checker starts once the assistant is up (or could not start): the two never
            # compete for the processor while the window is still loading its panels.
            self.session.start()
        return self.session

    def sessions(self) -> list[LanguageSession]:
        return [session for session in (self.session, self.checker) if session is not None]

    def restart(self) -> None:
        """Start a fresh server (after a failure, or when asked)."""
        if self.session is None:
            self.ensure_session()
        else:
            self._statuses.clear()  # what each process says from now on
            self.status = ServerStatus("starting")
            self.sig_status_changed.emit(self.status)
            for session in self.sessions():
                session.restart()

    def shut_down(self, wait: float = 0.0) -> None:
        """Stop the server (the window is closing)."""
        for session in self.sessions():
            session.stop(wait)

    # --- documents (every process is told) ---------------------------------------------------

    def open_document(self, path: Path, text: str, check: bool = True) -> None:
        """Tell the server ``path`` is open (``check``: lint it too; not an installed file)."""
        self.ensure_session()
        for session in self.sessions():
            if check or session is not self.checker:
                session.open(path, text)

    def change_document(self, path: Path, text: str) -> None:
        for session in self.sessions():
            session.change(path, text)

    def save_document(self, path: Path, text: str) -> None:
        for session in self.sessions():
            session.save(path, text)

    def close_document(self, path: Path) -> None:
        for session in self.sessions():
            session.close(path)

    # --- asking -------------------------------------------------------------------------------

    def run_command(self, command_id: str) -> None:
        """Run a window command as its menu item would (errors shown, not raised)."""
        menus = getattr(self.window, "menus", None)
        if menus is not None:
            menus.run(command_id)
        else:
            self.window.commands.execute(command_id)

    def on_gui_thread(self, function: Callable[[object], None], argument: object) -> None:
        """Call ``function(argument)`` on the GUI thread (from any thread)."""
        try:
            self._sig_call.emit(function, argument)
        except RuntimeError:
            pass  # the window is gone

    def ask(self, method: str, *args, handle: Callable[[object], None], **options) -> Request:
        """Ask the server ``method(*args, on_answer, **options)`` (a ``LanguageSession``
        method); ``handle(result)`` runs on the GUI thread, with a RequestFailed when the
        document changed meanwhile (typing's own questions are dropped then)."""
        self.ensure_session()
        session = self.checker if method in CHECKER_REQUESTS else self.session
        holder: list = []

        def on_gui(result) -> None:
            request = holder[0] if holder else None
            if request is not None and not isinstance(result, RequestFailed) and not session.is_current(request):
                if request.kind in ("completion", "hover", "signature_help"):
                    if options.get("on_stale") is not None:
                        options["on_stale"](result)
                    return
                result = RequestFailed(f"{request.path.name} changed before the language server answered; "
                                       "try again.", stale=True)
            handle(result)

        request = getattr(session, method)(*args, lambda result: self.on_gui_thread(on_gui, result), **options)
        holder.append(request)
        return request

    def _call(self, function, argument) -> None:
        function(argument)

    def _on_event(self, role: str, event) -> None:
        if isinstance(event, ServerStatus):
            self._statuses[role] = event
            if role == "assist" and event.state in ("running", "failed") and not self.checker.started:
                self.checker.start()
            shown = max(self._statuses.values(), key=lambda status: STATE_WEIGHT.get(status.state, 0))
            if len(self._statuses) < 2 and shown.state == "running":
                shown = ServerStatus("starting")  # until both are up
            if shown != self.status:
                self.status = shown
                self.sig_status_changed.emit(shown)
                if shown.state == "running":
                    self.sig_symbols_stale.emit(None)
        elif isinstance(event, Diagnostics) and role == "checker":
            link = self.links.get(event.path)
            if link is None or self.checker is None:
                return
            if event.version is not None and event.version != self.checker.version(event.path):
                return  # typed since: the diagnostics of the newer text follow
            link.show_problems(event.problems)

    # --- editors ------------------------------------------------------------------------------

    def adopt(self, tab) -> None:
        """Link ``tab`` to the server when it shows a Python file in the code editor."""
        if tab.editor is None or not is_python(tab.path):
            return
        known = self.links.get(tab.path)
        if known is not None and known.tab is tab:
            return  # linked already (open at start, and reported opened too)
        from workbench.lsp.widgets.editor_link import EditorLink

        link = EditorLink(self, tab)
        self.links[tab.path] = link
        path = tab.path
        tab.destroyed.connect(lambda *_: self._forget(path, link))

    def _forget(self, path: Path, link) -> None:
        if self.links.get(path) is link:
            del self.links[path]
            self.close_document(path)

    def link_for(self, path: Path):
        return self.links.get(Path(path))

    # --- providers (called by the editor on the GUI thread) ------------------------------------

    def complete(self, position: TextPosition):
        """The window's completion provider for Python files."""
        link = self.links.get(position.path)
        if link is None or position.reply is None:
            return None
        if not worth_asking(position.line_text, position.column, position.explicit):
            return None
        start = name_start(position.line_text, position.column)
        key = (position.path, position.line, start, position.line_text[:start])
        cache = self._completion_cache
        if cache is not None and cache[0] == key and link.edits_since(cache[1]) <= {position.line}:
            # Still typing the same name: the list the server gave for its start serves.
            return completions(cache[2], position.line_text, position.column)
        reply = position.reply
        line_text, column = position.line_text, position.column
        edit_count = link.edit_count

        def handle(result) -> None:
            if isinstance(result, RequestFailed):
                reply(None)
                return
            self._completion_cache = (key, edit_count, result)
            reply(completions(result, line_text, column))

        def keep(result) -> None:
            # Typed on before it came (a person types faster than the server answers): not
            # shown for the old caret, but the next key of the same name lists from it at once.
            self._completion_cache = (key, edit_count, result)

        def ask() -> None:
            self.ask("completion", position.path, position.line, position.column, handle=handle,
                     on_stale=lambda result: self.on_gui_thread(keep, result))

        if position.explicit or start == position.column:  # Ctrl+Space, or just after a dot
            self._name_timer.stop()
            self._name_question = None
            ask()
        else:
            self._name_question = ask
            self._name_timer.start()
        return PENDING

    def _ask_for_name(self) -> None:
        question, self._name_question = self._name_question, None
        if question is not None:
            question()

    def hover(self, position: TextPosition):
        """The window's hover provider for Python files: the server's help as rich text."""
        if position.path not in self.links or position.reply is None:
            return None
        if not position.line_text[position.column:position.column + 1].strip():
            return None
        reply = position.reply

        def handle(result) -> None:
            if isinstance(result, str) and result.strip():
                reply(markdown_to_html(result))

        self.ask("hover", position.path, position.line, position.column, handle=handle)
        return PENDING


def markdown_to_html(text: str) -> str:
    """The server's help (markdown: code fences, then the docstring) as tooltip rich text: the
    code in the editor's monospace, unwrapped but with long signatures broken after commas,
    the docstring with its own line breaks and indents; very long help is cut."""
    if len(text) > HOVER_MAX_CHARACTERS:
        text = text[:HOVER_MAX_CHARACTERS].rsplit("\n", 1)[0] + "\n…"
    parts = []
    for index, chunk in enumerate(text.split("```")):
        if index % 2:  # inside a fence: its first line names the language
            code = chunk.split("\n", 1)[1] if "\n" in chunk else chunk
            lines = [piece for line in code.strip("\n").splitlines() for piece in _break_long(line)]
            parts.append("<pre style='margin: 0 0 4px 0'>" + html.escape("\n".join(lines)) + "</pre>")
        elif chunk.strip():
            parts.append("<p style='white-space: pre-wrap; margin: 0'>" + html.escape(chunk.strip("\n")) + "</p>")
    return "<qt>" + "".join(parts) + "</qt>"


def _break_long(line: str, width: int = HOVER_CODE_WIDTH) -> list[str]:
    pieces = []
    while len(line) > width and ", " in line[:width]:
        cut = line.rindex(", ", 0, width) + 1
        pieces.append(line[:cut])
        line = "    " + line[cut:].lstrip()
    return pieces + [line]
