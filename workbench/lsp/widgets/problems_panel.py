"""The Problems dock: the errors and warnings of every open file, grouped by file; a click goes
to the problem. It lists what each editor underlines (the language server's problems in Python
files, and those of any other checker, such as the .hparams one), and says here when the
language server cannot run, with the button that starts it again.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.editor.diagnostics import EditorDiagnostic
from workbench.lsp.results import ServerStatus
from workbench.qt.elided_label import ElidedLabel
from workbench.qt import theme

# Docks added after the window is shown may widen it to their minimum size before they are
# tabbed: the panel asks for little and lets its lines shorten.
MINIMUM_SIZE = (80, 60)

PATH_ROLE = Qt.ItemDataRole.UserRole
PLACE_ROLE = Qt.ItemDataRole.UserRole + 1


class ProblemsPanel(QWidget):
    """The problems of ``window``'s open editors; ``restart`` starts the language server again."""

    def __init__(self, window, restart):
        super().__init__()
        self.setObjectName("lsp-problems-panel")
        self.window = window
        self._watched: set[int] = set()
        self.setMinimumSize(*MINIMUM_SIZE)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

        self.banner = QFrame(self)
        self.banner.setObjectName("lsp-server-banner")
        theme.set_themed_style_sheet(self.banner, "#lsp-server-banner { background: @WARNING_BACKGROUND;"
                                                  " border-bottom: 1px solid @WARNING_BORDER; }")
        banner_layout = QHBoxLayout(self.banner)
        banner_layout.setContentsMargins(8, 4, 6, 4)
        self.banner_label = QLabel(self.banner)
        self.banner_label.setWordWrap(True)
        self.banner_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        banner_layout.addWidget(self.banner_label, 1)
        self.restart_button = QPushButton("Restart Language Server", self.banner)
        self.restart_button.clicked.connect(restart)
        banner_layout.addWidget(self.restart_button, 0, Qt.AlignmentFlag.AlignTop)
        self.banner.hide()
        layout.addWidget(self.banner)

        self.settings_note = QLabel(self)
        self.settings_note.setObjectName("lsp-settings-note")
        self.settings_note.setWordWrap(True)
        self.settings_note.setContentsMargins(8, 4, 8, 4)
        theme.set_themed_style_sheet(self.settings_note, "#lsp-settings-note { background: @INFO_BACKGROUND;"
                                                         " border-bottom: 1px solid @INFO_BORDER; }")
        self.settings_note.hide()
        layout.addWidget(self.settings_note)

        self.summary = ElidedLabel("", self)
        self.summary.setContentsMargins(8, 3, 8, 3)
        theme.set_themed_style_sheet(self.summary, "color: @MUTED_TEXT;")
        layout.addWidget(self.summary)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("lsp-problems-tree")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Problem", "Source", "Line"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(False)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(1, 110)
        header.resizeSection(2, 70)
        self.tree.itemActivated.connect(self._go_to)
        self.tree.itemClicked.connect(self._go_to)
        layout.addWidget(self.tree, 1)

        self._refresh_timer = QTimer(self, singleShot=True, interval=0)
        self._refresh_timer.timeout.connect(self.refresh)
        # A closed tab leaves the list at once (its deletion, which also refreshes, comes later).
        window.tabs.currentChanged.connect(lambda _index: self.schedule_refresh())
        self.refresh()

    # --- what is listed -----------------------------------------------------------------------

    def watch(self, tab) -> None:
        """List ``tab``'s problems from now on (and drop them when it closes)."""
        if id(tab) in self._watched:
            return
        self._watched.add(id(tab))
        key = id(tab)
        tab.sig_diagnostics_changed.connect(self.schedule_refresh)
        tab.destroyed.connect(lambda *_: (self._watched.discard(key), self.schedule_refresh()))
        self.schedule_refresh()

    def schedule_refresh(self) -> None:
        try:
            self._refresh_timer.start()
        except RuntimeError:
            pass  # the window is being torn down with its tabs

    def problems(self) -> list[tuple[Path, EditorDiagnostic]]:
        """What the panel lists: (file, problem) of every open editor, by file and line."""
        found = []
        for tab in self.window.editors():
            for diagnostic in sorted(tab.diagnostics(), key=lambda d: (d.line, d.start)):
                found.append((tab.path, diagnostic))
        return found

    def refresh(self) -> None:
        self.tree.clear()
        by_file: dict[Path, list[EditorDiagnostic]] = {}
        for path, diagnostic in self.problems():
            by_file.setdefault(path, []).append(diagnostic)
        style = self.style()
        error_icon = style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical)
        warning_icon = style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        errors = warnings = 0
        for path in sorted(by_file, key=lambda p: file_label(p, self.window.project.root).lower()):
            diagnostics = by_file[path]
            file_item = QTreeWidgetItem([f"{file_label(path, self.window.project.root)}  ({len(diagnostics)})", "", ""])
            file_item.setData(0, PATH_ROLE, str(path))
            file_item.setToolTip(0, str(path))
            font = file_item.font(0)
            font.setBold(True)
            file_item.setFont(0, font)
            self.tree.addTopLevelItem(file_item)
            for diagnostic in diagnostics:
                is_error = diagnostic.severity == "error"
                errors += is_error
                warnings += not is_error
                item = QTreeWidgetItem([diagnostic.message, diagnostic.source, f"{diagnostic.line}:{diagnostic.start + 1}"])
                item.setIcon(0, error_icon if is_error else warning_icon)
                item.setToolTip(0, diagnostic.message)
                item.setData(0, PATH_ROLE, str(path))
                item.setData(0, PLACE_ROLE, (diagnostic.line, diagnostic.start + 1))
                item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                file_item.addChild(item)
            file_item.setExpanded(True)
        if errors or warnings:
            parts = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
            if warnings:
                parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
            self.summary.setText(f"{', '.join(parts)} in {len(by_file)} open file{'s' if len(by_file) != 1 else ''}")
        else:
            self.summary.setText("No problems in the open files.")
        self.summary_counts = (errors, warnings)
        dock = self.parentWidget()
        if dock is not None and hasattr(dock, "setWindowTitle") and dock.objectName() == "dock-problems":
            dock.setWindowTitle(f"Problems ({errors + warnings})" if errors or warnings else "Problems")

    def _go_to(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        path = item.data(0, PATH_ROLE)
        place = item.data(0, PLACE_ROLE)
        if path and place:
            self.window.open_file(Path(path), place[0], place[1])

    # --- the server ---------------------------------------------------------------------------

    def show_settings_problems(self, problems) -> None:
        """Say what is wrong with the project's language server settings (once, here)."""
        self.settings_note.setText("\n".join(problems))
        self.settings_note.setVisible(bool(problems))

    def show_status(self, status: ServerStatus) -> None:
        """Say here when the language server cannot run (and why), with the restart button."""
        if status.state == "failed":
            self.banner_label.setText(status.message)
            self.banner.show()
        elif status.state in ("starting", "running", "stopped"):
            self.banner.hide()


def file_label(path: Path, root: Path) -> str:
    """A file as the docks list it: its name, then its folder when that is not the project's."""
    try:
        folder = path.parent.relative_to(root)
    except ValueError:
        folder = path.parent
    return path.name if str(folder) == "." else f"{path.name}  —  {folder}"
