"""The Devices panel: the device list, pairing, this computer's agent, and for one model Push,
Verify (result table, latency, history by sha256) and the device's log.

The panel only shows what its ``DeviceSession`` answers; every call runs off the GUI thread
there. A failure is shown in the banner at the top as one line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

MODEL_SUFFIXES = (".onnx", ".mnn")
PASS_COLOR, FAIL_COLOR = QColor("#1b7f3b"), QColor("#b3261e")
RESULT_HEADERS = ["Output", "Shape", "Max abs diff", "Mean abs diff", "Top-1 agreement", "Result"]
LATENCY_HEADERS = ["", "p50 ms", "p90 ms", "p99 ms", "mean ms", "init ms"]
HISTORY_HEADERS = ["When", "Device", "Runtime", "Samples", "Result", "Worst max abs diff", "Device p50 ms"]


class PairDialog(QDialog):
    """Asks for the agent's HOST:PORT and the 6-digit code it prints."""

    def __init__(self, parent: QWidget | None = None, address: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Pair Device")
        self.address = QLineEdit(address)
        self.address.setPlaceholderText("192.168.1.20:7300")
        self.code = QLineEdit()
        self.code.setPlaceholderText("6-digit code the agent prints")
        self.code.setMaxLength(6)
        form = QFormLayout(self)
        form.addRow("Address (HOST:PORT)", self.address)
        form.addRow("Pairing code", self.code)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)


class Banner(QWidget):
    """A one-line message across the top of the panel, closed by its ×."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("device-banner")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.label, 1)
        row.addWidget(close)
        self.setStyleSheet("#device-banner { background: #fdecea; border: 1px solid #f1aeb5; }"
                           "#device-banner QLabel { color: #611a15; }")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.hide()

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


def _item(text: str, color: QColor | None = None) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if color is not None:
        item.setForeground(color)
    return item


def _number(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    return f"{value:.3g}" if isinstance(value, float) and abs(value) < 0.01 else f"{value:.3f}".rstrip("0").rstrip(".")


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    return table


class DevicesPanel(QWidget):
    """The Devices dock's widget."""

    sig_device_selected = Signal(str)
    """The device selected in the list changed (its HOST:PORT, empty for none)."""

    def __init__(self, session, models_selection: Callable[[], list[Path]] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.models_selection = models_selection or (lambda: [])
        self.model_path: Path | None = None

        self.banner = Banner()
        self.status = QLabel()
        self.status.setObjectName("device-status")

        self.refresh_button = QPushButton("Refresh")
        self.pair_button = QPushButton("Pair…")
        self.local_button = QPushButton("Start Local Device")
        self.info_button = QPushButton("Connect / Info")
        self.refresh_button.clicked.connect(self.session.refresh)
        self.pair_button.clicked.connect(lambda: self.pair())
        self.local_button.clicked.connect(self.session.start_local)
        self.info_button.clicked.connect(self.show_info)
        top = QHBoxLayout()
        for button in (self.refresh_button, self.pair_button, self.local_button, self.info_button):
            top.addWidget(button)
        top.addStretch(1)

        self.devices = QTreeWidget()
        self.devices.setObjectName("device-list")
        self.devices.setHeaderLabels(["Device", "Address", "Status", "Note"])
        self.devices.setRootIsDecorated(False)
        self.devices.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.devices.currentItemChanged.connect(lambda *_: self._selection_changed())

        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("Select a model in the Models panel, or choose a file")
        self.model_edit.editingFinished.connect(lambda: self.set_model(self.model_edit.text() or None))
        self.from_models = QPushButton("From Models")
        self.from_models.setToolTip("Use the model selected in the Models panel")
        self.from_models.clicked.connect(self.use_models_selection)
        self.choose = QPushButton("Choose…")
        self.choose.clicked.connect(self.choose_model)
        self.push_button = QPushButton("Push")
        self.verify_button = QPushButton("Verify")
        self.cancel_button = QPushButton("Cancel")
        self.push_button.clicked.connect(lambda: self.push())
        self.verify_button.clicked.connect(lambda: self.verify())
        self.cancel_button.clicked.connect(self.cancel)
        model_row = QHBoxLayout()
        model_row.addWidget(QLabel("Model"))
        model_row.addWidget(self.model_edit, 1)
        for button in (self.from_models, self.choose, self.push_button, self.verify_button,
                       self.cancel_button):
            model_row.addWidget(button)

        self.verdict = QLabel()
        self.verdict.setObjectName("device-verdict")
        self.result_table = _table(RESULT_HEADERS)
        self.result_table.setObjectName("device-result-table")
        self.latency_table = _table(LATENCY_HEADERS)
        self.latency_table.setObjectName("device-latency-table")
        result_page = QWidget()
        result_layout = QVBoxLayout(result_page)
        result_layout.setContentsMargins(0, 0, 0, 0)
        result_layout.addWidget(self.verdict)
        result_layout.addWidget(self.result_table, 2)
        result_layout.addWidget(self.latency_table, 1)
        self.history_table = _table(HISTORY_HEADERS)
        self.history_table.setObjectName("device-history-table")
        self.info_view = QPlainTextEdit()
        self.info_view.setReadOnly(True)
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.follow_button = QPushButton("Follow Log")
        self.follow_button.setCheckable(True)
        self.follow_button.toggled.connect(self._follow_toggled)
        log_page = QWidget()
        log_layout = QVBoxLayout(log_page)
        log_layout.setContentsMargins(0, 0, 0, 0)
        log_layout.addWidget(self.follow_button, 0, Qt.AlignmentFlag.AlignLeft)
        log_layout.addWidget(self.log_view)
        self.tabs = QTabWidget()
        self.tabs.addTab(result_page, "Verification")
        self.tabs.addTab(self.history_table, "History")
        self.tabs.addTab(self.info_view, "Info")
        self.tabs.addTab(log_page, "Log")

        left = QVBoxLayout()
        left.addLayout(top)
        left.addWidget(self.devices)
        right = QVBoxLayout()
        right.addLayout(model_row)
        right.addWidget(self.tabs)
        body = QHBoxLayout()
        body.addLayout(left, 2)
        body.addLayout(right, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.banner)
        layout.addLayout(body, 1)
        layout.addWidget(self.status)

        session.sig_devices_listed.connect(self.show_devices)
        session.sig_error.connect(self.show_error)
        session.sig_progress.connect(self.status.setText)
        session.sig_info.connect(self.show_device_info)
        session.sig_pushed.connect(self._pushed)
        session.sig_paired.connect(lambda name: self.status.setText(f"Paired with {name}"))
        session.sig_verified.connect(self.show_verification)
        session.sig_history.connect(self.show_history)
        session.sig_log_line.connect(self._log_line)
        session.sig_busy_changed.connect(lambda busy: self._update_buttons())
        self._update_buttons()

    # --- devices -------------------------------------------------------------------------------

    def show_devices(self, overview: dict) -> None:
        selected = self.selected_address()
        self.devices.clear()
        for row in overview.get("devices", []):
            name = row["name"] + (" (this computer)" if row.get("local") else "")
            status = row["status"] + ("" if row.get("paired") or row.get("local") else ", not paired")
            item = QTreeWidgetItem([name, row["address"], status, row.get("note", "")])
            item.setData(0, Qt.ItemDataRole.UserRole, row)
            item.setForeground(2, PASS_COLOR if row["status"] == "online" else QColor("#777777"))
            self.devices.addTopLevelItem(item)
            if row["address"] == selected:
                self.devices.setCurrentItem(item)
        if self.devices.currentItem() is None:
            online = [self.devices.topLevelItem(i) for i in range(self.devices.topLevelItemCount())
                      if self.devices.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)["status"] == "online"]
            if online:
                self.devices.setCurrentItem(online[0])
        notes = overview.get("notes") or []
        self.status.setText("; ".join(notes) if notes else f"{self.devices.topLevelItemCount()} devices")
        self._update_buttons()

    def device_rows(self) -> list[dict]:
        return [self.devices.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.devices.topLevelItemCount())]

    def selected_address(self) -> str:
        item = self.devices.currentItem()
        return item.data(0, Qt.ItemDataRole.UserRole)["address"] if item is not None else ""

    def select_device(self, address: str) -> bool:
        for i in range(self.devices.topLevelItemCount()):
            item = self.devices.topLevelItem(i)
            if item.data(0, Qt.ItemDataRole.UserRole)["address"] == address:
                self.devices.setCurrentItem(item)
                return True
        return False

    def _selection_changed(self) -> None:
        self.sig_device_selected.emit(self.selected_address())
        if self.follow_button.isChecked():
            self.follow_button.setChecked(False)
        self._update_buttons()

    def pair(self, address: str | None = None, code: str | None = None) -> None:
        """Pair with ``address`` using ``code``; asks for what is missing."""
        if address is None or code is None:
            dialog = PairDialog(self, address or "")
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            address, code = dialog.address.text(), dialog.code.text()
        code = code.strip()
        if not (len(code) == 6 and code.isdigit()):
            self.show_error("The pairing code is the 6 digits the device's agent prints.")
            return
        self.banner.hide()
        self.session.pair(address, code)

    def show_info(self) -> None:
        address = self._device_or_say()
        if address:
            self.banner.hide()
            self.session.info(address)

    def show_device_info(self, info: dict) -> None:
        self.info_view.setPlainText("\n".join(f"{key}: {value}" for key, value in info.items()))
        self.tabs.setCurrentIndex(2)

    # --- the model -----------------------------------------------------------------------------

    def set_model(self, path: Path | str | None) -> None:
        """The model Push and Verify work on; its verification history is read."""
        self.model_path = Path(path) if path else None
        self.model_edit.setText(str(self.model_path) if self.model_path else "")
        self.history_table.setRowCount(0)
        if self.model_path is not None:
            self.session.history(self.model_path)
        self._update_buttons()

    def use_models_selection(self) -> bool:
        chosen = [p for p in self.models_selection() if Path(p).suffix.lower() in MODEL_SUFFIXES]
        if not chosen:
            self.show_error("Select an .onnx or .mnn model in the Models panel first.")
            return False
        self.set_model(chosen[0])
        return True

    def choose_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a Model", str(self.session.project_dir),
                                              "Models (*.onnx *.mnn)")
        if path:
            self.set_model(path)

    def _target(self) -> tuple[str, Path] | None:
        if self.model_path is None and not self.use_models_selection():
            return None
        address = self._device_or_say()
        return (address, self.model_path) if address else None

    def _device_or_say(self) -> str:
        address = self.selected_address()
        if not address:
            self.show_error("Select a device in the list first (Pair… or Start Local Device adds one).")
        return address

    def push(self) -> None:
        target = self._target()
        if target:
            self.banner.hide()
            self.session.push(*target)

    def verify(self, **options) -> None:
        """Verify the model on the selected device (``options``: verify_model's)."""
        target = self._target()
        if target:
            self.banner.hide()
            self.result_table.setRowCount(0)
            self.latency_table.setRowCount(0)
            self.verdict.setText(f"Verifying {target[1].name} on {target[0]}…")
            self.tabs.setCurrentIndex(0)
            self.session.verify(*target, **options)

    def cancel(self) -> None:
        from workbench.device.widgets.session import PUSH_KEY, VERIFY_KEY

        for key in (VERIFY_KEY, PUSH_KEY):
            if self.session.is_busy(key):
                self.session.cancel(key)
        self.status.setText("Cancelled")

    def _pushed(self, result) -> None:
        sent = getattr(result, "sent", None)
        self.status.setText("Pushed" + (f" ({sent} bytes sent)" if sent is not None else ""))

    # --- results -------------------------------------------------------------------------------

    def show_verification(self, verification) -> None:
        verdict = "PASS" if verification.passed else "FAIL"
        accuracy = ""
        if verification.accuracy:
            accuracy = (f"; accuracy {verification.accuracy['device']:.1f} % on the device, "
                        f"{verification.accuracy['host']:.1f} % here")
        self.verdict.setText(f"<b style='color:{(PASS_COLOR if verification.passed else FAIL_COLOR).name()}'>"
                             f"{verdict}</b> {verification.model_name} on {verification.device_name} "
                             f"({verification.runtime}), {verification.samples} samples of "
                             f"{verification.data_source}{accuracy}")
        self.result_table.setRowCount(0)
        for check in verification.outputs:
            row = self.result_table.rowCount()
            self.result_table.insertRow(row)
            agreement = "–" if check.top1_agreement is None else f"{check.top1_agreement:.1f} %"
            cells = [check.name, "×".join(str(d) for d in check.shape), _number(check.max_abs_diff),
                     _number(check.mean_abs_diff), agreement]
            for column, text in enumerate(cells):
                self.result_table.setItem(row, column, _item(text))
            result = "pass" if check.passed else "fail" + (f": {check.note}" if check.note else "")
            self.result_table.setItem(row, 5, _item(result, PASS_COLOR if check.passed else FAIL_COLOR))
        self.latency_table.setRowCount(0)
        for side, label in (("device", verification.device_name), ("host", "this computer")):
            figures = verification.latency.get(side)
            if not figures:
                continue
            row = self.latency_table.rowCount()
            self.latency_table.insertRow(row)
            self.latency_table.setItem(row, 0, _item(label))
            for column, key in enumerate(("p50_ms", "p90_ms", "p99_ms", "mean_ms", "init_ms"), 1):
                self.latency_table.setItem(row, column, _item(_number(figures.get(key))))
        self.status.setText(f"Verified: {verdict}")

    def result_rows(self) -> list[list[str]]:
        """The result table's text, row by row (for tests and scripts)."""
        table = self.result_table
        return [[table.item(r, c).text() if table.item(r, c) else "" for c in range(table.columnCount())]
                for r in range(table.rowCount())]

    def show_history(self, entries: list) -> None:
        self.history_table.setRowCount(0)
        for entry in reversed(entries):  # newest first
            row = self.history_table.rowCount()
            self.history_table.insertRow(row)
            worst = max((c.max_abs_diff for c in entry.outputs), default=None)
            p50 = (entry.latency.get("device") or {}).get("p50_ms")
            cells = [entry.time, entry.device_name, entry.runtime, str(entry.samples)]
            for column, text in enumerate(cells):
                self.history_table.setItem(row, column, _item(text))
            self.history_table.setItem(row, 4, _item("pass" if entry.passed else "fail",
                                                     PASS_COLOR if entry.passed else FAIL_COLOR))
            self.history_table.setItem(row, 5, _item(_number(worst)))
            self.history_table.setItem(row, 6, _item(_number(p50)))

    # --- the log -------------------------------------------------------------------------------

    def _follow_toggled(self, on: bool) -> None:
        if on:
            address = self._device_or_say()
            if not address:
                self.follow_button.setChecked(False)
                return
            self.log_view.appendPlainText(f"— following {address} —")
            self.session.follow_logs(address)
        else:
            self.session.stop_logs()

    def _log_line(self, line: dict) -> None:
        self.log_view.appendPlainText(f"{line.get('time', '')} {str(line.get('level', '')).upper():7} "
                                      f"{line.get('message', '')}")

    # --- state ---------------------------------------------------------------------------------

    def show_error(self, message: str) -> None:
        self.banner.show_message(message)
        self.status.setText("")
        if self.follow_button.isChecked():
            self.follow_button.blockSignals(True)
            self.follow_button.setChecked(False)
            self.follow_button.blockSignals(False)
        if self.verdict.text().startswith("Verifying"):
            self.verdict.setText("")

    def _update_buttons(self) -> None:
        from workbench.device.widgets.session import PUSH_KEY, VERIFY_KEY

        has_device = bool(self.selected_address())
        working = self.session.is_busy(VERIFY_KEY) or self.session.is_busy(PUSH_KEY)
        self.info_button.setEnabled(has_device)
        self.push_button.setEnabled(has_device and not working)
        self.verify_button.setEnabled(has_device and not working)
        self.cancel_button.setEnabled(working)

    def close_down(self) -> None:
        self.session.close_down()
