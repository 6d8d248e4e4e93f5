"""What a text field of a tool's form offers to pick from once the window knows it (the classes
of the project's code a model's weights need): a "Choose" button with a menu beside the field,
and completion while typing. A long list shows its first entries in the menu; typing finds the
rest."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCompleter, QLineEdit, QMenu, QToolButton

MENU_ENTRIES = 15


class SuggestionButton(QToolButton):
    """The button beside ``editor`` listing the suggestions; hidden while there are none."""

    sig_chosen = Signal(str)
    """A suggestion was picked (the editor holds it already)."""

    def __init__(self, editor: QLineEdit, what: str = "Choose"):
        super().__init__()
        self.editor = editor
        self.suggestions: list[str] = []
        self.setText(f"{what}…")
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.menu_of_suggestions = QMenu(self)
        self.setMenu(self.menu_of_suggestions)
        self.hide()

    def offer(self, suggestions: list[str]) -> None:
        """Offer ``suggestions`` (none: the button hides and typing completes nothing)."""
        self.suggestions = list(suggestions)
        menu = self.menu_of_suggestions
        menu.clear()
        for text in self.suggestions[:MENU_ENTRIES]:
            menu.addAction(text, lambda chosen=text: self._choose(chosen))
        if len(self.suggestions) > MENU_ENTRIES:
            more = menu.addAction(f"{len(self.suggestions) - MENU_ENTRIES} more: type in the "
                                  "field to find them")
            more.setEnabled(False)
        completer = QCompleter(self.suggestions, self.editor) if self.suggestions else None
        if completer is not None:
            completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.editor.setCompleter(completer)
        self.setToolTip(f"Pick one of {len(self.suggestions)}")
        self.setVisible(bool(self.suggestions))

    def _choose(self, text: str) -> None:
        self.editor.setText(text)
        self.sig_chosen.emit(text)
