"""The Registry panel's dataset view: the project's dataset versions as a table, the selected
one's details (manifest, hash, validation split, what changed since the version before) and the
history of val.txt, and Cut Version… — what ``workbench dataset version|list|show|diff`` does.

Versions are listed on the GUI thread, as the model versions are (a few hundred small JSON
files). What reads manifests or the data runs on the window's task runner: a version's details
check its manifest against its recorded hash and compare it with the version before; a cut first
looks at the data (it may hash files or run the project's code for a while) and then cuts under
the registry's lock.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

import shiboken6
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.qt.tasks import Operation, TaskRunner
from workbench.registry.datasets import CutResult, DataChanges, DatasetVersion, DatasetVersions
from workbench.registry.errors import RegistryError
from workbench.registry.settings import RegistrySettings
from workbench.registry.store import format_number
from workbench.registry.widgets.cut_dialog import CutDatasetVersionDialog, ProgressRelay
from workbench.registry.widgets.dataset_rows import (
    change_lines,
    cut_text,
    detail_rows,
    empty_text,
    val_history_cells,
)
from workbench.registry.widgets.dataset_table import DatasetTable

DETAILS_KEY = "registry.datasetDetails"
PENDING_KEY = "registry.datasetPending"
VAL_HISTORY_COLUMNS = ("Time", "Samples", "sha256", "Reason", "User")
EMPTY_WIDTH = 720
COPYABLE_ROWS = ("Manifest", "sha256")
"""Detail rows shown in a read-only line: their whole text can be selected and copied, however
narrow the pane."""

Change = Callable[[str, str, Callable, Callable[[object], str]], Operation]
"""The panel's way of running a registry change: (name, title, function, done text)."""


class DatasetView(QWidget):
    """The dataset versions of one project."""

    def __init__(self, project_root: Path, tasks: TaskRunner, say: Callable[..., None], change: Change,
                 refresh_all: Callable[[], None], parent: QWidget | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root)
        # The window's commands (training's Train dialog is reached through them), when there are.
        self.commands = None
        self.tasks = tasks
        self._say = say
        self._change = change
        self._refresh_all = refresh_all
        self.datasets: DatasetVersions | None = None
        self.settings: RegistrySettings | None = None
        self.versions: list[DatasetVersion] = []
        self.val_history: list[dict] = []
        self.problem = ""
        self.dialog: CutDatasetVersionDialog | None = None
        self._details_of: tuple[int, int | None, str] | None = None

        self.table = DatasetTable()
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._show_context_menu)

        self.details = QWidget()
        self.details.setObjectName("registry-dataset-details")
        self.details_title = QLabel()
        self.details_title.setObjectName("registry-dataset-title")
        title_font = QFont(self.details_title.font())
        title_font.setBold(True)
        self.details_title.setFont(title_font)
        self.detail_form = QFormLayout()
        self.detail_form.setContentsMargins(0, 0, 0, 0)
        self.detail_form.setVerticalSpacing(2)
        self.detail_fields: dict[str, QLabel | QLineEdit] = {}
        self.problem_label = QLabel()
        self.problem_label.setObjectName("registry-dataset-problem")
        self.problem_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.problem_label, "color: @ERROR_TEXT;")
        self.problem_label.hide()
        self.changes_heading = QLabel()
        self.changes_heading.setObjectName("registry-dataset-changes-heading")
        self.changes_heading.setWordWrap(True)
        theme.set_themed_style_sheet(self.changes_heading, "color: @MUTED_TEXT;")
        self.changes_view = QPlainTextEdit()
        self.changes_view.setObjectName("registry-dataset-changes")
        self.changes_view.setReadOnly(True)
        self.changes_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.changes_view.setFont(theme.editor_font())
        changes_page = QWidget()
        changes_column = QVBoxLayout(changes_page)
        changes_column.setContentsMargins(4, 4, 4, 4)
        changes_column.addWidget(self.changes_heading)
        changes_column.addWidget(self.changes_view, 1)
        self.val_table = QTableWidget(0, len(VAL_HISTORY_COLUMNS))
        self.val_table.setObjectName("registry-val-history")
        self.val_table.setHorizontalHeaderLabels(VAL_HISTORY_COLUMNS)
        self.val_table.verticalHeader().hide()
        self.val_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.val_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.val_table.setWordWrap(False)
        self.val_table.setShowGrid(False)
        self.val_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.val_table.horizontalHeader().setSectionResizeMode(VAL_HISTORY_COLUMNS.index("Reason"),
                                                               QHeaderView.ResizeMode.Stretch)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("registry-dataset-tabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(changes_page, "Changes")
        self.tabs.addTab(self.val_table, "val.txt History")
        details_column = QVBoxLayout(self.details)
        details_column.setContentsMargins(8, 6, 4, 0)
        details_column.setSpacing(4)
        details_column.addWidget(self.details_title)
        details_column.addLayout(self.detail_form)
        details_column.addWidget(self.problem_label)
        details_column.addWidget(self.tabs, 1)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        # Left-aligned in a centred block: the workbench.toml lines it shows keep their indent.
        self.empty_label = QLabel()
        self.empty_label.setObjectName("registry-datasets-empty")
        self.empty_label.setWordWrap(True)
        self.empty_label.setMaximumWidth(EMPTY_WIDTH)
        self.empty_label.setTextFormat(Qt.TextFormat.RichText)
        self.empty_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT; padding: 12px;")
        self._say_empty(empty_text(None))
        self.empty_page = QWidget()
        empty_row = QHBoxLayout(self.empty_page)
        empty_row.addWidget(self.empty_label, 0, Qt.AlignmentFlag.AlignCenter)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_page)
        self.stack.addWidget(self.splitter)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.stack)

    # --- listing ------------------------------------------------------------------------------

    def refresh(self, project_settings: dict) -> None:
        """List the versions again from ``project_settings`` (the parsed workbench.toml)."""
        from workbench.registry import open_versions

        try:
            self.datasets = open_versions(self.project_root, project_settings).datasets
            self.settings = self.datasets.settings
            self.versions = self.datasets.list()
            self.val_history = self.datasets.val_history()
            self.problem = ""
        except (RegistryError, OSError, ValueError) as exc:
            self.versions, self.val_history = [], []
            self.problem = f"The dataset versions cannot be read: {exc}"
            self._say_empty(self.problem)
            self.stack.setCurrentWidget(self.empty_page)
            self._show_details(None)
            return
        self.table.show_versions(self.versions)
        self._fill_val_history()
        self._say_empty(empty_text(self.settings))
        self.stack.setCurrentWidget(self.splitter if self.versions else self.empty_page)
        if self.versions and self.table.selected_key() is None:
            self.table.selectRow(0)
        self._show_details(self.selected_version())

    @property
    def empty_message(self) -> str:
        """What the view says while it shows no version, as plain text."""
        return self._empty_message

    def _say_empty(self, text: str) -> None:
        # Paragraphs indented by four spaces are workbench.toml lines: set in a fixed-pitch font.
        self._empty_message = text
        parts = []
        for paragraph in text.split("\n\n"):
            if paragraph.startswith("    "):
                code = "\n".join(line[4:] for line in paragraph.split("\n"))
                parts.append(f"<pre style='margin-left: 16px'>{html.escape(code, quote=False)}</pre>")
            else:
                parts.append(f"<p>{html.escape(paragraph, quote=False)}</p>")
        self.empty_label.setText("".join(parts))

    def watched_folder(self) -> Path | None:
        return self.datasets.folder if self.datasets is not None else None

    # --- selection ----------------------------------------------------------------------------

    def selected_version(self) -> DatasetVersion | None:
        number = self.table.selected_key()
        return next((version for version in self.versions if version.number == number), None)

    def select_version(self, number: int | str) -> bool:
        return self.table.select_key(int(number))

    def _selection_changed(self) -> None:
        self._show_details(self.selected_version())

    def _show_details(self, version: DatasetVersion | None) -> None:
        """Fill the details of ``version`` at once, then check its manifest and compare it with
        the version before off the GUI thread."""
        while self.detail_form.rowCount():
            self.detail_form.removeRow(0)
        self.detail_fields = {}
        if version is None:
            self.details_title.setText("")
            self.problem_label.hide()
            self.changes_heading.setText("")
            self.changes_view.setPlainText("")
            self._details_of = None
            return
        self.details_title.setText(f"Dataset version {version.name}")
        for label, text in detail_rows(version, self.project_root):
            if label in COPYABLE_ROWS:
                field = QLineEdit(text)
                field.setReadOnly(True)
                field.setFrame(False)
                field.setCursorPosition(0)
                field.setStyleSheet("QLineEdit { background: transparent; padding: 0; }")
            else:
                field = QLabel(text)
                field.setWordWrap(True)
                field.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            field.setObjectName(f"registry-dataset-{label.lower()}")
            field.setToolTip(text)
            self.detail_form.addRow(f"{label}:", field)
            self.detail_fields[label] = field
        wanted = (version.number, version.parent, version.manifest_sha256)
        if wanted == self._details_of:
            return
        self._details_of = wanted
        self.problem_label.hide()
        self.changes_heading.setText("Reading the manifest…")
        self.changes_view.setPlainText("")
        if version.parent is None:
            self._compare(None, version)
        else:
            self._compare(version.parent, version)

    def compare(self, first: int | str, second: int | str | None = None) -> None:
        """Show what version ``second`` (default: the selected one) holds that ``first`` does not,
        and the reverse, in the Changes tab (``workbench dataset diff``)."""
        later = self.selected_version() if second is None else next(
            (version for version in self.versions if version.number == int(second)), None)
        if later is None:
            self._say("Select a dataset version first.", error=True)
            return
        self._compare(int(first), later)
        self.tabs.setCurrentIndex(0)

    def _compare(self, first: int | None, later: DatasetVersion) -> None:
        datasets = self.datasets
        if datasets is None:
            return

        def look() -> tuple[str, DataChanges | None]:
            try:
                datasets.get(later.number)
                if first is None:
                    return "", DataChanges(added=datasets.keys(later.number))
                return "", datasets.diff(first, later.number)
            except RegistryError as exc:
                return str(exc), None

        def show(answer: tuple[str, DataChanges | None]) -> None:
            problem, changes = answer
            self.problem_label.setText(f"⚠ {problem}" if problem else "")
            self.problem_label.setVisible(bool(problem))
            if changes is None:
                self.changes_heading.setText("")
                self.changes_view.setPlainText("")
                return
            if first is None:
                heading = f"The {len(changes.added):,} samples of {later.name}, the first version:"
            elif not changes.any:
                heading = f"{format_number(first)} and {later.name} hold the same samples."
            else:
                heading = (f"From {format_number(first)} to {later.name}: {len(changes.added):,} added, "
                           f"{len(changes.removed):,} removed, {len(changes.changed):,} changed.")
            self.changes_heading.setText(heading)
            self.changes_view.setPlainText("\n".join(change_lines(changes)))

        self.tasks.run(DETAILS_KEY, look, on_done=show,
                       on_error=lambda error: self._say(f"Reading dataset version {later.name} failed: {error}",
                                                        error=True))

    def _fill_val_history(self) -> None:
        self.val_table.setRowCount(0)
        for entry in reversed(self.val_history):
            row = self.val_table.rowCount()
            self.val_table.insertRow(row)
            for column, text in enumerate(val_history_cells(entry)):
                item = QTableWidgetItem(text)
                item.setToolTip(str(entry.get("sha256", "")) if VAL_HISTORY_COLUMNS[column] == "sha256" else text)
                self.val_table.setItem(row, column, item)
        self.tabs.setTabText(1, f"val.txt History ({len(self.val_history)})" if self.val_history
                             else "val.txt History")

    # --- cutting ------------------------------------------------------------------------------

    def cut_version(self, fraction: float | None = None, reason: str | None = None,
                    new_val: bool = False) -> Operation | CutDatasetVersionDialog | None:
        """Cut the next dataset version (``fraction`` of the samples, 0 to 1; None for all);
        without ``reason``, first show what is new in the data and ask."""
        if reason is None:
            return self._ask_cut()
        datasets = self.datasets
        if datasets is None:
            self._say(self.problem or "The dataset versions cannot be read.", error=True)
            return None

        def done(result: CutResult) -> str:
            self.select_version(result.version.number)
            return cut_text(result, self.project_root)

        return self._change("cutDataset", "Cutting a dataset version",
                            lambda progress, cancel: datasets.cut(fraction, reason, new_val, progress, cancel),
                            done)

    def _ask_cut(self) -> CutDatasetVersionDialog | None:
        if self.dialog is not None and shiboken6.isValid(self.dialog):
            self.dialog.raise_()
            self.dialog.activateWindow()
            return self.dialog
        datasets = self.datasets
        dialog = CutDatasetVersionDialog(self.versions[-1] if self.versions else None, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialog = dialog
        dialog.accepted.connect(lambda: self.cut_version(dialog.fraction, dialog.reason, dialog.new_val))
        dialog.finished.connect(lambda _result: self._dialog_closed(dialog))
        dialog.open()
        if datasets is None:
            dialog.show_problem(self.problem or "The dataset versions cannot be read.")
            return dialog
        relay = dialog.relay

        def look(progress, cancel) -> DataChanges:
            def report(step) -> None:
                progress(step)
                _tell(relay, step)
            return datasets.pending(progress=report, cancel=cancel)

        def failed(error: Exception) -> None:
            dialog.show_problem(str(error) if isinstance(error, RegistryError)
                                else f"Looking at the data failed: {error}")

        self.tasks.run(PENDING_KEY, look, on_done=dialog.show_pending, on_error=failed,
                       title="Looking at the data")
        return dialog

    def _dialog_closed(self, dialog: CutDatasetVersionDialog) -> None:
        # A closed dialog takes no late answer: the look at the data stops (between files).
        self.tasks.cancel(PENDING_KEY)
        if self.dialog is dialog:
            self.dialog = None

    # --- context menu -------------------------------------------------------------------------

    def context_menu(self) -> QMenu:
        """The right-click menu of the selected version; actions are named ``registry-<key>``."""
        menu = QMenu(self)
        version = self.selected_version()
        menu.addAction("Cut Version…", lambda: self.cut_version()).setObjectName("registry-cut")
        compare = menu.addMenu("Compare With")
        compare.setObjectName("registry-compare-menu")
        others = [other for other in reversed(self.versions) if version is not None and other.number != version.number]
        for other in others:
            action = compare.addAction(f"{other.name}  ({other.samples:,} samples)",
                                       lambda number=other.number: self.compare(number))
            action.setObjectName(f"registry-compare-{other.name}")
        compare.setEnabled(bool(others))
        train = menu.addAction("Train on This Version…", lambda: self.train_on(version.name))
        train.setObjectName("registry-train-on")
        train.setEnabled(version is not None and self.commands is not None
                         and "training.trainWithHparams" in self.commands)
        menu.addSeparator()
        menu.addAction("Refresh", self._refresh_all).setObjectName("registry-refresh")
        return menu

    def train_on(self, version: str):
        """Open the Train dialog with this dataset version chosen."""
        return self.commands.execute("training.trainWithHparams", dataset_version=version)

    def _show_context_menu(self, position: QPoint) -> None:
        if self.table.itemAt(position) is None:
            return
        menu = self.context_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.table.viewport().mapToGlobal(position))


def _tell(relay: ProgressRelay, report: object) -> None:
    """Pass a progress report to the dialog, unless it has closed (from a worker thread)."""
    try:
        relay.sig_progress.emit(report)
    except RuntimeError:  # the dialog and its relay went while the data was being looked at
        pass
