"""The Registry panel's dialogs: point an alias at a version (with the reason recorded), roll an
alias back (and push the version it goes back to to the devices serving the one it leaves), and
the history of every alias move. Each is opened without blocking the window
(``open()``); the panel acts on ``accepted``."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.registry.aliases import AliasMove, check_alias_name
from workbench.registry.errors import RegistryError
from workbench.registry.store import format_number
from workbench.registry.widgets.version_rows import format_created

USUAL_ALIASES = ("production", "staging")


class SetAliasDialog(QDialog):
    """Which alias to point at a version, and why."""

    def __init__(self, version_name: str, aliases: dict[str, int], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("registry-set-alias-dialog")
        self.setWindowTitle(f"Set Alias on Version {version_name}")
        self._aliases = aliases
        form = QFormLayout(self)
        self.alias_box = QComboBox()
        self.alias_box.setObjectName("registry-alias-name")
        self.alias_box.setEditable(True)
        self.alias_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        names = list(USUAL_ALIASES) + sorted(set(aliases) - set(USUAL_ALIASES))
        self.alias_box.addItems(names)
        self.alias_box.setMinimumContentsLength(18)
        form.addRow("Alias:", self.alias_box)
        self.now_label = QLabel()
        theme.set_themed_style_sheet(self.now_label, "color: @MUTED_TEXT;")
        form.addRow("", self.now_label)
        self.reason_edit = QLineEdit()
        self.reason_edit.setObjectName("registry-alias-reason")
        self.reason_edit.setPlaceholderText("why (kept in the alias history)")
        form.addRow("Reason:", self.reason_edit)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.error_label, "color: @ERROR_TEXT;")
        self.error_label.hide()
        form.addRow(self.error_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Set Alias")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.alias_box.currentTextChanged.connect(self._say_where_it_points)
        self._say_where_it_points(self.alias_box.currentText())

    @property
    def alias(self) -> str:
        return self.alias_box.currentText().strip()

    @property
    def reason(self) -> str:
        return self.reason_edit.text().strip()

    def _say_where_it_points(self, name: str) -> None:
        target = self._aliases.get(name.strip())
        self.now_label.setText(f"{name.strip()} is on version {format_number(target)} now" if target is not None
                               else "a new alias")

    def accept(self) -> None:
        try:
            check_alias_name(self.alias)
        except RegistryError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            return
        super().accept()


class RollbackDialog(QDialog):
    """Which alias to move back to the version it pointed at before its last move."""

    def __init__(self, aliases: dict[str, int], preferred: str = "", parent: QWidget | None = None,
                 serving: dict[str, list[str]] | None = None):
        """``serving``: for each alias, the device slots that serve the version it is on now
        ("Phone A (classifier)"); when some do, a check box offers to push the version the alias
        goes back to to them (left empty when the window cannot push to devices)."""
        super().__init__(parent)
        self.setObjectName("registry-rollback-dialog")
        self._targets = aliases
        self._serving = serving or {}
        self.setWindowTitle("Roll Back Alias")
        form = QFormLayout(self)
        self.alias_box = QComboBox()
        self.alias_box.setObjectName("registry-rollback-alias")
        for name, target in sorted(aliases.items()):
            self.alias_box.addItem(f"{name}  (on {format_number(target)})", name)
        if preferred in aliases:
            self.alias_box.setCurrentIndex(self.alias_box.findData(preferred))
        form.addRow("Alias:", self.alias_box)
        self.reason_edit = QLineEdit()
        self.reason_edit.setObjectName("registry-rollback-reason")
        self.reason_edit.setPlaceholderText("rollback")
        form.addRow("Reason:", self.reason_edit)
        hint = QLabel("The alias goes back to the version it pointed to before its last move.")
        hint.setWordWrap(True)
        theme.set_themed_style_sheet(hint, "color: @MUTED_TEXT;")
        form.addRow(hint)
        self.push_box = QCheckBox()
        self.push_box.setObjectName("registry-rollback-push")
        self.push_box.setChecked(True)
        form.addRow(self.push_box)
        self.serving_label = QLabel()
        self.serving_label.setObjectName("registry-rollback-serving")
        self.serving_label.setWordWrap(True)
        theme.set_themed_style_sheet(self.serving_label, "color: @MUTED_TEXT;")
        form.addRow(self.serving_label)
        self.alias_box.currentIndexChanged.connect(lambda _index: self._offer_push())
        self._offer_push()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Roll Back")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    @property
    def alias(self) -> str:
        return str(self.alias_box.currentData() or "")

    @property
    def reason(self) -> str:
        return self.reason_edit.text().strip()

    @property
    def push_to_devices(self) -> bool:
        """Whether the devices serving the version the alias leaves get the one it goes back
        to (the command line's default; ``--no-push`` unchecks it)."""
        return self.push_box.isChecked()

    def _offer_push(self) -> None:
        # Offered only when some device serves the version the chosen alias is on now.
        slots = self._serving.get(self.alias, [])
        target = self._targets.get(self.alias)
        self.push_box.setText(f"Push it to the devices serving {format_number(target)}" if target is not None
                              else "Push it to the devices")
        self.serving_label.setText(f"{format_number(target)} is served by {', '.join(slots)}." if slots else "")
        self.push_box.setVisible(bool(slots))
        self.serving_label.setVisible(bool(slots))


HISTORY_COLUMNS = ("Time", "Alias", "From → To", "Action", "Reason", "User")


def move_cells(move: AliasMove) -> list[str]:
    """One history row as the table shows it."""
    before = format_number(move.previous) if move.previous is not None else "—"
    after = format_number(move.version) if move.version is not None else "deleted"
    return [format_created(move.time), move.alias, f"{before} → {after}", move.action, move.reason, move.user]


class AliasHistoryDialog(QDialog):
    """Every alias move, the newest first."""

    def __init__(self, moves: list[AliasMove], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("registry-alias-history-dialog")
        self.setWindowTitle("Alias History")
        self.resize(720, 360)
        column = QVBoxLayout(self)
        self.table = QTableWidget(0, len(HISTORY_COLUMNS))
        self.table.setObjectName("registry-alias-history")
        self.table.setHorizontalHeaderLabels(HISTORY_COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        for move in reversed(moves):
            row = self.table.rowCount()
            self.table.insertRow(row)
            for index, text in enumerate(move_cells(move)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(row, index, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(HISTORY_COLUMNS.index("Reason"), QHeaderView.ResizeMode.Stretch)
        column.addWidget(self.table, 1)
        if not moves:
            empty = QLabel("No alias was set yet: select a version and choose Set Alias….")
            empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
            column.addWidget(empty)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        column.addWidget(buttons)
