"""Quick Open (Ctrl+P): type part of a file's name, pick it, it opens.

``name:42`` opens the file at line 42; ``:42`` alone goes to line 42 of the current editor.
The list ranks the project's kept file list (``FileIndex``) with ``FileRanker``; opening the
popup walks the project again in a worker thread, and the new list replaces the old one when it
is there, so a key typed never waits for the disk.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QKeyEvent, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QLabel,
    QLineEdit,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from workbench.qt.file_icons import FileIcons
from workbench.qt.popups import fit_to_rows
from workbench.search.file_index import FileIndex, FileList, RecentFiles
from workbench.search.fuzzy import FileMatch, FileRanker, split_line_suffix

QUICK_OPEN_COMMAND = "search.quick_open"
MATCH_ROLE = Qt.ItemDataRole.UserRole
MAX_SHOWN = 50
MAX_HEIGHT = 380
MAX_LIST_HEIGHT = 330  # about fourteen files, then the list scrolls


class FileMatchModel(QAbstractListModel):
    """The ranked files, one row each."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.matches: list[FileMatch] = []
        self._icons = FileIcons()

    def set_matches(self, matches: list[FileMatch]) -> None:
        self.beginResetModel()
        self.matches = matches
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.matches)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        found = self.matches[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return found.path
        if role == Qt.ItemDataRole.DecorationRole:
            return self._icons.icon_for(found.path)
        if role == MATCH_ROLE:
            return found
        return None


class FileMatchDelegate(QStyledItemDelegate):
    """Paints a row as VS Code does: icon, file name with the matched letters in bold, the
    folder dimmed after it, and "recently opened" at the right of the first recent file."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        found: FileMatch = index.data(MATCH_ROLE)
        self.initStyleOption(option, index)
        option.text = ""
        style = option.widget.style() if option.widget else QStyle()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        text_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, option.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        group = option.palette.ColorRole.HighlightedText if selected else option.palette.ColorRole.Text
        painter.save()
        painter.setClipRect(text_rect)
        x = text_rect.left() + 2
        name_start = found.path.rfind("/") + 1
        marked = set(found.positions)
        plain, bold = QFont(option.font), QFont(option.font)
        bold.setBold(True)
        painter.setPen(option.palette.color(group))
        for start, end, is_bold in _runs(found.path, name_start, marked):
            font = bold if is_bold else plain
            painter.setFont(font)
            piece = found.path[start:end]
            painter.drawText(QRect(x, text_rect.top(), text_rect.right() - x, text_rect.height()),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, piece)
            x += painter.fontMetrics().horizontalAdvance(piece)
        folder = found.path[:name_start].rstrip("/")
        dim = option.palette.color(group if selected else option.palette.ColorRole.PlaceholderText)
        painter.setPen(dim)
        painter.setFont(plain)
        right_note = "recently opened" if found.recent and _first_recent(index) else ""
        note_width = QFontMetrics(plain).horizontalAdvance(right_note) + 8 if right_note else 0
        if folder:
            folder_rect = QRect(x + 10, text_rect.top(), max(0, text_rect.right() - x - 10 - note_width),
                                text_rect.height())
            metrics = QFontMetrics(plain)
            in_folder = any(at < name_start for at in found.positions)
            if in_folder and metrics.horizontalAdvance(folder) <= folder_rect.width():
                # It fits: the letters matched in the folders are bold too.
                x = folder_rect.left()
                for start, end, is_bold in _runs(folder, 0, marked):
                    painter.setFont(bold if is_bold else plain)
                    piece = folder[start:end]
                    painter.drawText(QRect(x, text_rect.top(), folder_rect.right() - x, text_rect.height()),
                                     Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, piece)
                    x += painter.fontMetrics().horizontalAdvance(piece)
                painter.setFont(plain)
            else:
                elided = metrics.elidedText(folder, Qt.TextElideMode.ElideLeft, folder_rect.width())
                painter.drawText(folder_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, elided)
        if right_note:
            painter.drawText(text_rect.adjusted(0, 0, -4, 0),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, right_note)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), max(size.height(), QFontMetrics(option.font).height() + 6))


def _runs(path: str, name_start: int, marked: set[int]) -> list[tuple[int, int, bool]]:
    """``path`` from ``name_start`` on, cut into (start, end, bold) runs."""
    runs: list[tuple[int, int, bool]] = []
    for at in range(name_start, len(path)):
        is_bold = at in marked
        if runs and runs[-1][2] == is_bold:
            runs[-1] = (runs[-1][0], at + 1, is_bold)
        else:
            runs.append((at, at + 1, is_bold))
    return runs


def _first_recent(index: QModelIndex) -> bool:
    return index.row() == 0 or not index.model().index(index.row() - 1, 0).data(MATCH_ROLE).recent


class QuickOpen(QFrame):
    """A popup over the top of its window: a query line and the files that match it, best
    first (recently opened ones leading)."""

    sig_file_chosen = Signal(str, object)
    """The chosen file's project-relative path, and the line to go to (or None)."""

    sig_line_chosen = Signal(int)
    """``:N`` was entered: go to line N of the current editor."""

    def __init__(self, recent_paths, parent: QWidget):
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("quick-open")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._recent_paths = recent_paths
        self._ranker = FileRanker(FileList.of(()))
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Search files by name (append :N to go to a line, or :N alone)")
        self.results = QListView(self)
        self.results.setUniformItemSizes(True)
        self.results.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.results.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.model = FileMatchModel(self)
        self.results.setModel(self.model)
        self.results.setItemDelegate(FileMatchDelegate(self.results))
        self.message = QLabel(self)
        self.message.setObjectName("quick-open-message")
        self.message.setContentsMargins(6, 4, 6, 4)
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.query)
        layout.addWidget(self.message)
        layout.addWidget(self.results)
        self.query.textChanged.connect(self.refresh)
        self.query.installEventFilter(self)
        self.results.activated.connect(lambda index: self._choose(index.row()))
        self._prepare_timer = QTimer(self)
        self._prepare_timer.setSingleShot(True)
        self._prepare_timer.timeout.connect(self._prepare_next_key)

    @property
    def file_count(self) -> int:
        return len(self._ranker.files)

    def set_files(self, files: FileList) -> None:
        """Rank ``files`` from now on (a new walk's result); the shown list follows."""
        self._ranker = FileRanker(files)
        if self.isVisible():
            self.refresh(self.query.text())

    def open(self) -> None:
        parent = self.parentWidget()
        width = min(700, max(420, parent.width() // 2))
        top_left = parent.mapToGlobal(parent.rect().topLeft())
        self.setGeometry(top_left.x() + (parent.width() - width) // 2, top_left.y() + 40, width, MAX_HEIGHT)
        self.query.clear()
        self.refresh("")
        self.show()
        self.query.setFocus()

    def matches(self) -> list[FileMatch]:
        """The files shown, best first."""
        return list(self.model.matches)

    def refresh(self, text: str) -> None:
        """Rank the files for ``text`` and show the best; what the popup does on each key."""
        name_query, line = split_line_suffix(text)
        if line is not None and not name_query.strip():
            self.model.set_matches([])
            self._say(f"Go to line {line} of the current editor (Enter)")
            return
        matches = self._ranker.rank(name_query, self._recent_paths(), MAX_SHOWN)
        self.model.set_matches(matches)
        if matches:
            self.results.setCurrentIndex(self.model.index(0, 0))
            self._say("")
        elif not self.file_count:
            self._say("Listing the project's files…")
        else:
            self._say("No matching files")
        self._prepare_timer.start(0)

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.results.setVisible(not text)
        fit_to_rows(self, self.results, self.model.rowCount(), MAX_LIST_HEIGHT)

    def _prepare_next_key(self) -> None:
        name_query, _ = split_line_suffix(self.query.text())
        self._ranker.prepare(name_query)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.query and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            key = event.key()
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
                self.results.keyPressEvent(event)
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.accept()
                return True
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
        return super().eventFilter(watched, event)

    def accept(self) -> None:
        """What Enter does: open the selected file (at the typed line), or go to ``:N``."""
        name_query, line = split_line_suffix(self.query.text())
        if line is not None and not name_query.strip():
            self.hide()
            self.sig_line_chosen.emit(line)
            return
        current = self.results.currentIndex()
        if current.isValid():
            self._choose(current.row())

    def _choose(self, row: int) -> None:
        _, line = split_line_suffix(self.query.text())
        path = self.model.matches[row].path
        self.hide()
        self.sig_file_chosen.emit(path, line)


def install_quick_open(window) -> QuickOpen:
    """Go ▸ Go to File… (Ctrl+P) in ``window``, over a file list walked now in a worker thread
    and again each time the popup opens; files opened in the window count as recent."""
    from pathlib import Path

    from workbench.project import ensure_state_dir

    root = window.project.root
    index = FileIndex(root)
    state_dir = ensure_state_dir(root) if window.project.writable else None
    recent = RecentFiles(state_dir)
    popup = QuickOpen(recent.paths, window)

    walk_again = [False]

    def walk() -> None:
        # A walk still under way is left to finish (a new one would drop its result), and
        # another follows it: it may have passed a folder before a file was made there.
        if window.tasks.is_running("search.file_index"):
            walk_again[0] = True
        else:
            window.tasks.run("search.file_index", index.refresh, on_done=walked)

    def walked(files: FileList) -> None:
        popup.set_files(files)
        if walk_again[0]:
            walk_again[0] = False
            walk()

    def note(path) -> None:
        relative = index.relative(path)
        if relative is not None:
            recent.note(relative)

    def show() -> None:
        popup.open()
        walk()

    def open_chosen(relative: str, line: int | None) -> None:
        if window.open_file(root / relative, line) is not None:
            note(root / relative)

    def go_to_line(line: int) -> None:
        tab = window.current_editor()
        if tab is None:
            window.show_error("Open a file first: :N goes to line N of the current editor.")
        else:
            window.open_file(Path(tab.path), line)

    popup.sig_file_chosen.connect(open_chosen)
    popup.sig_line_chosen.connect(go_to_line)
    window.sig_editor_opened.connect(lambda tab: note(tab.path))
    if not recent.paths():
        for tab in reversed(window.editors()):  # what is open counts as opened, as on a restart
            note(tab.path)
    window.commands.add(QUICK_OPEN_COMMAND, "Go to File…", show, category="Go", menu="Go", shortcut="Ctrl+P")
    walk()
    return popup
