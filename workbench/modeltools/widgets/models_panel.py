"""The Models panel: every model file of the project, grouped by the run that produced it, the
newest first, with the tools a right-click offers on them.

The list is read off the GUI thread (workbench.modeltools.model_index) when the panel starts,
when a watched folder changes, when a tool announces a model (the ``model.produced`` event) and
every ``RESCAN_MS`` (a watcher misses files written under folders it does not watch yet).

Other capabilities add entries to the right-click menu of a model through the window's command
registry: a command declared with ``context=("models",)`` (and ``applies_to``) is offered for
the files it applies to and runs with ``path=``, as the Explorer's commands do.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QFileSystemWatcher, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHeaderView,
    QLabel,
    QMenu,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.modeltools.model_index import ModelFile, group_by_run, list_models, name_in_run, watched_folders
from workbench.modeltools.params import ToolSpec
from workbench.modeltools.report import format_size
from workbench.modeltools.widgets.commands import applies
from workbench.qt.notice import NoticeBar, reveal_in_file_manager
from workbench.qt import theme

log = logging.getLogger(__name__)

MODELS_CONTEXT = "models"
"""The context name of the commands this panel's right-click menu offers on a model."""
RESCAN_MS = 15_000
WATCH_DEBOUNCE_MS = 400
PATH_ROLE = Qt.ItemDataRole.UserRole + 1
GROUP_ROLE = Qt.ItemDataRole.UserRole + 2


def human_size(size: int) -> str:
    """A file's size as the reports give it ("164.5 KB"), so a model reads the same here and there."""
    return format_size(size)


def human_time(stamp: float, now: float | None = None) -> str:
    """"14:03" today, "3 Mar 14:03" this year, "2024-03-03" before."""
    now = time.time() if now is None else now
    moment, today = time.localtime(stamp), time.localtime(now)
    if moment[:3] == today[:3]:
        return time.strftime("%H:%M", moment)
    if moment.tm_year == today.tm_year:
        return time.strftime("%d %b %H:%M", moment).lstrip("0")
    return time.strftime("%Y-%m-%d", moment)


class ProducedNotice(NoticeBar):
    """"Quantize produced model.int8.onnx" with Inspect and Reveal; × hides it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("models-produced-notice", parent)
        self.label.setObjectName("models-produced-text")
        self.inspect_button = self.add_button("Inspect")
        self.reveal_button = self.add_button("Reveal")

    @property
    def message(self) -> str:
        return self.label.text() if not self.isHidden() else ""


class ModelsPanel(QWidget):
    """The project's models."""

    sig_open_tool = Signal(str, list)
    """Open a tool window: the tool's name and the chosen files (Paths)."""

    sig_listed = Signal()
    """A scan has been shown."""

    def __init__(self, root: Path, tasks, tools: dict[str, ToolSpec], parent: QWidget | None = None):
        super().__init__(parent)
        self.root = Path(root)
        self._tasks = tasks
        self.tools = tools
        self.models: list[ModelFile] = []
        self.listed = False
        self.reveal: Callable[[str], None] = reveal_in_file_manager
        """Shows a file in the file manager (replaceable in tests)."""
        self.commands = None
        """The command registry whose ``models`` commands the right-click menu offers; the
        window's when not set."""
        self._pending_select: str | None = None
        self._collapsed: set[str] = set()
        self._signature: tuple = ()

        self.notice = ProducedNotice()
        self.notice.inspect_button.clicked.connect(lambda: self._open_default(Path(self.notice.path)))
        self.notice.reveal_button.clicked.connect(lambda: self.reveal(self.notice.path))
        self.tree = QTreeWidget()
        self.tree.setObjectName("models-tree")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Model", "Size", "Modified"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._show_context_menu)
        self.tree.itemDoubleClicked.connect(self._on_double_click)
        self.tree.itemCollapsed.connect(lambda item: self._collapsed.add(item.data(0, GROUP_ROLE) or ""))
        self.tree.itemExpanded.connect(lambda item: self._collapsed.discard(item.data(0, GROUP_ROLE) or ""))
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.empty = QLabel("No model files yet.\nTrain a run, or put .onnx or .pt files in the project.")
        self.empty.setObjectName("models-empty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.set_themed_style_sheet(self.empty, "color: @MUTED_TEXT;")
        self.empty.setWordWrap(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.tree)
        self.stack.addWidget(self.empty)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.notice)
        layout.addWidget(self.stack, 1)

        self.watcher = QFileSystemWatcher(self)
        self.watcher.directoryChanged.connect(lambda _path: self._debounce.start(WATCH_DEBOUNCE_MS))
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.timeout.connect(self.refresh)
        self._rescan = QTimer(self)
        self._rescan.timeout.connect(self.refresh)
        self._rescan.start(RESCAN_MS)

    # --- the list -----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the project's models again (off the GUI thread)."""
        self._tasks.run("modeltools.models", _scan, self.root, on_done=self._show, on_error=self._scan_failed)

    def close_down(self) -> None:
        self._rescan.stop()
        self._debounce.stop()

    def _scan_failed(self, error: Exception) -> None:
        self.listed = True
        self.empty.setText(f"Cannot list the models: {error}")
        self.stack.setCurrentWidget(self.empty)

    def _show(self, result) -> None:
        models, folders = result
        self._watch(folders)
        signature = tuple((str(m.path), m.size, m.modified) for m in models)
        first = not self.listed
        self.listed = True
        if signature != self._signature or first:
            self._signature = signature
            self.models = models
            self._fill()
        if self._pending_select and self.select_path(self._pending_select):
            self._pending_select = None
        self.sig_listed.emit()

    def _watch(self, folders: list[Path]) -> None:
        wanted = {str(f) for f in folders}
        current = set(self.watcher.directories())
        gone, new = sorted(current - wanted), sorted(wanted - current)
        if gone:
            self.watcher.removePaths(gone)
        if new:
            self.watcher.addPaths(new)

    def _fill(self) -> None:
        selected = {str(p) for p in self.selected_paths()}
        self.tree.setUpdatesEnabled(False)
        try:
            self.tree.clear()
            bold = QFont(self.tree.font())
            bold.setWeight(QFont.Weight.DemiBold)
            for group in group_by_run(self.models):
                key = group.run_id or ""
                count = f"{len(group.models)} model{'s' if len(group.models) != 1 else ''}"
                top = QTreeWidgetItem([f"{group.title}  ·  {count}"])
                top.setFont(0, bold)
                top.setData(0, GROUP_ROLE, key)
                top.setFlags(top.flags() & ~Qt.ItemFlag.ItemIsSelectable)
                top.setToolTip(0, str(self.root / "runs" / group.run_id) if group.run_id else str(self.root))
                self.tree.addTopLevelItem(top)
                top.setFirstColumnSpanned(True)  # a run id is long: the whole row is its
                for model in group.models:
                    item = QTreeWidgetItem([self._shown_name(model), human_size(model.size),
                                            human_time(model.modified)])
                    item.setData(0, PATH_ROLE, str(model.path))
                    item.setToolTip(0, str(model.path))
                    item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    top.addChild(item)
                    if str(model.path) in selected:
                        item.setSelected(True)
                top.setExpanded(key not in self._collapsed)
        finally:
            self.tree.setUpdatesEnabled(True)
        self.stack.setCurrentWidget(self.tree if self.models else self.empty)

    def _shown_name(self, model: ModelFile) -> str:
        return name_in_run(self.root, model.path)[0]

    def items(self) -> list[QTreeWidgetItem]:
        found = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            found += [top.child(j) for j in range(top.childCount())]
        return found

    def groups(self) -> list[tuple[str, list[str]]]:
        """What the panel shows: (group title, [shown names]) in order (for tests)."""
        shown = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            shown.append((top.text(0), [top.child(j).text(0) for j in range(top.childCount())]))
        return shown

    def describe(self) -> dict:
        """What the panel shows (for scripts and tests)."""
        return {"listed": self.listed, "groups": [[title, names] for title, names in self.groups()],
                "selected": [str(p) for p in self.selected_paths()], "notice": self.notice.message,
                "notice_path": self.notice.path if self.notice.message else ""}

    def selected_paths(self) -> list[Path]:
        return [Path(item.data(0, PATH_ROLE)) for item in self.tree.selectedItems() if item.data(0, PATH_ROLE)]

    def select_path(self, path: Path | str, add: bool = False) -> bool:
        """Select the model at ``path`` (False while it is not listed)."""
        target = str(Path(path))
        for item in self.items():
            if item.data(0, PATH_ROLE) == target:
                if not add:
                    self.tree.clearSelection()
                item.setSelected(True)
                item.parent().setExpanded(True)
                self.tree.scrollToItem(item)
                return True
        return False

    # --- a model was produced -----------------------------------------------------------------

    def show_produced(self, path: str, tool: str | None = None) -> None:
        """Tell that ``path`` was produced, and select it once the list has it."""
        path = str(Path(path))
        spec = self.tools.get(tool or "")
        # Named as the list names it: under its run relative to the run's outputs, else relative
        # to the project (never the absolute path, which is the tooltip).
        name, run_id = name_in_run(self.root, Path(path))
        where = f" in run {run_id}" if run_id else ""
        self.notice.path = path
        self.notice.label.setText(f"{spec.title} produced {name}{where}" if spec is not None
                                  else f"Model produced: {name}{where}")
        self.notice.label.setToolTip(path)
        self.notice.inspect_button.setVisible(self._default_tool(Path(path)) is not None)
        self.notice.show()
        if not self.select_path(path):
            self._pending_select = path
        self.refresh()

    # --- menus --------------------------------------------------------------------------------

    def tools_for(self, path: Path) -> list[ToolSpec]:
        """The tools the right-click offers on ``path``: the same as the Explorer's."""
        return [spec for spec in self.tools.values() if applies(spec, path)]

    def context_menu_for(self, paths: list[Path]) -> QMenu:
        """The right-click menu for ``paths``. Actions have object names (``tool-<name>``,
        ``compare``, ``reveal``, ``copy_path``, and the command id for the window's ``models``
        commands) so tests can find them."""
        menu = QMenu(self)
        if len(paths) == 1:
            for spec in self.tools_for(paths[0]):
                self._action(menu, f"tool-{spec.name}", f"{spec.title}…",
                             lambda name=spec.name: self.sig_open_tool.emit(name, list(paths)))
            registry = self._registry()
            for command in registry.for_context(MODELS_CONTEXT, paths[0]) if registry else []:
                action = self._action(menu, command.id, command.title,
                                      lambda cid=command.id: self.run_command(cid, paths[0]))
                action.setEnabled(command.is_enabled())
        if len(paths) >= 2 and "compare" in self.tools:
            self._action(menu, "compare", "Compare Selected…",
                         lambda: self.sig_open_tool.emit("compare", list(paths)))
        if paths:
            menu.addSeparator()
            self._action(menu, "reveal", "Reveal in File Manager", lambda: self.reveal(str(paths[0])))
            self._action(menu, "copy_path", "Copy Path", lambda: self._copy(paths))
        menu.addSeparator()
        self._action(menu, "refresh", "Refresh", self.refresh)
        return menu

    def _registry(self):
        if self.commands is not None:
            return self.commands
        owner = self._owner()
        return getattr(owner, "commands", None) if owner is not None else None

    def _owner(self):
        """The window holding the panel: the first ancestor with a command registry (a
        floating dock is a window of its own, so ``window()`` may not be it)."""
        widget = self.parentWidget()
        while widget is not None:
            if hasattr(getattr(widget, "commands", None), "for_context"):
                return widget
            widget = widget.parentWidget()
        return None

    def run_command(self, command_id: str, path: Path) -> None:
        """Run a ``models`` command on ``path``; its failure is shown, not raised into Qt."""
        try:
            self._registry().execute(command_id, path=path)
        except Exception as exc:  # another capability's code: never crash the panel
            log.exception("Models command %s failed on %s", command_id, path)
            show_error = getattr(self._owner(), "show_error", None)
            if show_error is not None:
                show_error(str(exc) or type(exc).__name__)

    def _action(self, menu: QMenu, name: str, text: str, slot: Callable[[], object]) -> QAction:
        action = menu.addAction(text)
        action.setObjectName(name)
        action.triggered.connect(lambda *_: slot())
        return action

    def _copy(self, paths: list[Path]) -> None:
        QApplication.clipboard().setText("\n".join(str(p) for p in paths))

    def _show_context_menu(self, position: QPoint) -> None:
        item = self.tree.itemAt(position)
        if item is not None and item.data(0, PATH_ROLE) and not item.isSelected():
            self.tree.clearSelection()
            item.setSelected(True)
        menu = self.context_menu_for(self.selected_paths())
        menu.exec(self.tree.viewport().mapToGlobal(position))
        menu.deleteLater()

    def _default_tool(self, path: Path) -> str | None:
        tools = self.tools_for(path)
        names = [spec.name for spec in tools]
        if "inspect" in names:
            return "inspect"
        return names[0] if names else None

    def _open_default(self, path: Path) -> None:
        tool = self._default_tool(path)
        if tool is not None:
            self.sig_open_tool.emit(tool, [path])

    def _on_double_click(self, item: QTreeWidgetItem, _column: int) -> None:
        path = item.data(0, PATH_ROLE)
        if path:
            self._open_default(Path(path))


def _scan(root: Path) -> tuple[list[ModelFile], list[Path]]:
    models = list_models(root)
    return models, watched_folders(root, models)
