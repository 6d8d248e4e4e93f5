"""The Outline dock: the classes, functions and module variables of the Python file in the
current editor, from the language server; a click goes there, and the filter above the tree
(Ctrl+Shift+O) narrows it, Enter going to the first match."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLabel, QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.lsp.editor_answers import is_python
from workbench.lsp.results import Symbol
from workbench.lsp.session import RequestFailed
from workbench.qt import theme

SPAN_ROLE = Qt.ItemDataRole.UserRole
# After the last keystroke, the outline is asked for again this much later.
REFRESH_DELAY_MS = 800
KIND_MARKS = {"class": "C", "function": "ƒ", "method": "m", "variable": "v", "constant": "K", "module": "M",
              "property": "p", "field": "f"}
KIND_COLOURS = {"class": "#267f99", "function": "#795e26", "method": "#795e26", "variable": "#0070c1",
                "constant": "#0070c1"}


class OutlinePanel(QWidget):
    """The outline of ``window``'s current Python editor, asked of ``controller``."""

    def __init__(self, window, controller):
        super().__init__()
        self.setObjectName("lsp-outline-panel")
        self.window = window
        self.controller = controller
        self.path: Path | None = None
        self.symbols: list[Symbol] = []
        # Asks for little room: its dock joins the Explorer's column after the window is shown.
        self.setMinimumSize(60, 60)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter symbols (Ctrl+Shift+O)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.filter.returnPressed.connect(self._go_to_first_match)
        layout.addWidget(self.filter)
        self.note = QLabel(self)
        self.note.setContentsMargins(8, 6, 8, 6)
        self.note.setWordWrap(True)
        theme.set_themed_style_sheet(self.note, "color: @MUTED_TEXT;")
        layout.addWidget(self.note)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("lsp-outline-tree")
        self.tree.setHeaderHidden(True)
        self.tree.setColumnCount(1)
        self.tree.setUniformRowHeights(True)
        self.tree.itemActivated.connect(self._go_to)
        self.tree.itemClicked.connect(self._go_to)
        layout.addWidget(self.tree, 1)
        self._timer = QTimer(self, singleShot=True, interval=REFRESH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        window.tabs.currentChanged.connect(lambda _index: self.refresh())
        controller.sig_symbols_stale.connect(self._on_stale)
        self.refresh()

    def focus_filter(self) -> None:
        self.filter.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter.selectAll()

    def _on_stale(self, path) -> None:
        if path is None or path == self.path:
            self._timer.start()

    def refresh(self) -> None:
        """Ask again for the current editor's outline."""
        tab = self.window.current_editor()
        if tab is None or tab.editor is None or not is_python(tab.path):
            self.path = None
            self._show([], "The outline lists the classes and functions of a Python file in the editor.")
            return
        if self.controller.link_for(tab.path) is None:
            self._show([], "")
            return
        path = tab.path
        if path != self.path:
            self.path = path
            self._show([], "Reading the outline…")

        def handle(result) -> None:
            if self.path != path:
                return
            if isinstance(result, RequestFailed):
                if not result.stale:
                    self._show(self.symbols, result.message)
                return
            self._show(result, "" if result else f"{path.name} defines no classes, functions or variables.")

        self.controller.ask("symbols", path, handle=handle)

    def _show(self, symbols: list[Symbol], note: str) -> None:
        self.symbols = list(symbols)
        self.note.setText(note)
        self.note.setVisible(bool(note))
        self.tree.clear()
        for symbol in self.symbols:
            self.tree.addTopLevelItem(self._item(symbol))
        self.tree.expandAll()
        self._apply_filter(self.filter.text())

    def _item(self, symbol: Symbol) -> QTreeWidgetItem:
        mark = KIND_MARKS.get(symbol.kind, "·")
        item = QTreeWidgetItem([f"{mark}  {symbol.name}"])
        item.setData(0, SPAN_ROLE, (symbol.span.line, symbol.span.column + 1))
        item.setToolTip(0, f"{symbol.kind} {symbol.name}, line {symbol.span.line}")
        colour = KIND_COLOURS.get(symbol.kind)
        if colour:
            item.setForeground(0, QBrush(QColor(colour)))
        for child in symbol.children:
            item.addChild(self._item(child))
        return item

    def _apply_filter(self, text: str) -> None:
        wanted = text.strip().lower()

        def show(item: QTreeWidgetItem) -> bool:
            visible_children = [show(item.child(i)) for i in range(item.childCount())]
            visible = not wanted or wanted in item.text(0).lower() or any(visible_children)
            item.setHidden(not visible)
            return visible

        for index in range(self.tree.topLevelItemCount()):
            show(self.tree.topLevelItem(index))

    def _go_to_first_match(self) -> None:
        iterator = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        while iterator:
            item = iterator.pop(0)
            if not item.isHidden() and (not self.filter.text().strip()
                                        or self.filter.text().strip().lower() in item.text(0).lower()):
                self._go_to(item)
                return
            iterator[0:0] = [item.child(i) for i in range(item.childCount())]

    def _go_to(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        place = item.data(0, SPAN_ROLE)
        if place and self.path is not None:
            self.window.open_file(self.path, place[0], place[1])
