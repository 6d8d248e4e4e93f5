"""The language server of one project window, seen from the GUI thread.

The controller starts the session when the first Python file opens, links every Python editor
to it (``EditorLink``), serves the window's completion and hover providers for Python files,
and brings the session's answers and events over to the GUI thread, where each is checked once
more against the document's version before it is used.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Qt, Signal

from workbench.editor.assist import PENDING, TextPosition
from workbench.lsp.config import server_config
from workbench.lsp.editor_answers import completions, is_python, name_start, worth_asking
from workbench.lsp.results import Diagnostics, ServerStatus
from workbench.lsp.session import LanguageSession, Request, RequestFailed

log = logging.getLogger(__name__)

HOVER_MAX_CHARACTERS = 2500
HOVER_CODE_WIDTH = 88


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
        self.status = ServerStatus("stopped")
        self.links: dict[Path, object] = {}
        self._completion_cache: tuple | None = None
        self._sig_call.connect(self._call, Qt.ConnectionType.QueuedConnection)

    # --- the session --------------------------------------------------------------------------

    def ensure_session(self) -> LanguageSession:
        """The session, started on first use."""
        if self.session is None:
            self.session = LanguageSession(self.config, lambda event: self.on_gui_thread(self._on_event, event))
            self.session.start()
        return self.session

    def restart(self) -> None:
        """Start a fresh server (after a failure, or when asked)."""
        if self.session is None:
            self.ensure_session()
        else:
            self.session.restart()

    def shut_down(self, wait: float = 0.0) -> None:
        """Stop the server (the window is closing)."""
        if self.session is not None:
            self.session.stop(wait)

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

    def answer_to(self, request_holder: list, handle: Callable[[object], None], keep_stale: bool = False):
        """A session ``on_answer`` that calls ``handle(result)`` on the GUI thread if the request
        (``request_holder[0]``, set once asked) is still current there."""

        def on_gui(result) -> None:
            request = request_holder[0] if request_holder else None
            session = self.session
            if (not keep_stale and request is not None and session is not None
                    and not isinstance(result, RequestFailed) and not session.is_current(request)):
                if request.kind in ("completion", "hover", "signature_help"):
                    return
                result = RequestFailed(f"{request.path.name} changed before the language server answered; "
                                       "try again.", stale=True)
            handle(result)

        return lambda result: self.on_gui_thread(on_gui, result)

    def ask(self, method: str, *args, handle: Callable[[object], None], **options) -> Request:
        """Ask the session ``method(*args, on_answer, **options)``; ``handle(result)`` runs on
        the GUI thread, with a RequestFailed when the document changed meanwhile."""
        holder: list = []
        request = getattr(self.ensure_session(), method)(*args, self.answer_to(holder, handle), **options)
        holder.append(request)
        return request

    def _call(self, function, argument) -> None:
        function(argument)

    def _on_event(self, event) -> None:
        if isinstance(event, ServerStatus):
            self.status = event
            self.sig_status_changed.emit(event)
            if event.state == "running":
                self.sig_symbols_stale.emit(None)
        elif isinstance(event, Diagnostics):
            link = self.links.get(event.path)
            session = self.session
            if link is None or session is None:
                return
            if event.version is not None and event.version != session.version(event.path):
                return  # typed since: the diagnostics of the newer text follow
            link.show_problems(event.problems)

    # --- editors ------------------------------------------------------------------------------

    def adopt(self, tab) -> None:
        """Link ``tab`` to the server when it shows a Python file in the code editor."""
        if tab.editor is None or not is_python(tab.path):
            return
        from workbench.lsp.widgets.editor_link import EditorLink

        link = EditorLink(self, tab)
        self.links[tab.path] = link
        path = tab.path
        tab.destroyed.connect(lambda *_: self._forget(path, link))

    def _forget(self, path: Path, link) -> None:
        if self.links.get(path) is link:
            del self.links[path]
            if self.session is not None:
                self.session.close(path)

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

        self.ask("completion", position.path, position.line, position.column, handle=handle)
        return PENDING

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
