"""The Devices panel: the device list, pairing, this computer's agent, and for one model Push,
Verify (on the number of samples and with the device runtime chosen; result table, latency,
history by sha256) and the device's log.

The panel only shows what its ``DeviceSession`` answers; every call runs off the GUI thread
there. A failure is shown in the banner at the top as one line; a notice (no OS keyring: where
the device keys went) in a banner of its own above it, once, until closed.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.device.units import memory_text
from workbench.device.widgets.controls import Banner, PairDialog
from workbench.qt.elided_label import ElidedLabel

MODEL_SUFFIXES = (".onnx", ".mnn")
DEFAULT_SAMPLES = 256  # verify_model's own default (that module imports NumPy, so not from there)
MAX_SAMPLES = 10_000
DEFAULT_RUNTIME = "onnxruntime"  # every agent has it
PASS_COLOR, FAIL_COLOR = QColor("#1b7f3b"), QColor("#b3261e")
OFF_COLOR = QColor("#777777")
CERTIFICATE_CHANGED = "certificate changed"  # a device status (discovery's)
REFUSED_STATUSES = (CERTIFICATE_CHANGED, "forgot this computer")
CHANGED_NOTE = "select it for what to do"
RESULT_HEADERS = ["Output", "Shape", "Max abs diff", "Mean abs diff", "Top-1 agreement", "Result"]
LATENCY_HEADERS = ["", "p50 ms", "p90 ms", "p99 ms", "mean ms", "init ms"]
HISTORY_HEADERS = ["When", "Device", "Runtime", "Samples", "Result", "Worst max abs diff", "Device p50 ms"]


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


def _size_text(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.1f} kB" if n >= 1000 else f"{n} bytes"


def _local_time(iso: str) -> str:
    """An ISO 8601 time (UTC, as the history keeps it) as this computer's local date and time."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return str(iso or "–")


def _clock(seconds) -> str:
    """A log line's Unix time as the local time of day, to the millisecond."""
    try:
        moment = datetime.fromtimestamp(float(seconds))
    except (TypeError, ValueError, OverflowError, OSError):
        return str(seconds or "")
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


INFO_LABELS = {"name": "Name", "address": "Address", "model": "Model", "os": "OS", "cpu": "CPU",
               "memory_bytes": "Memory", "runtimes": "Runtimes", "python": "Python",
               "agent_version": "Agent version", "sessions": "Sessions open",
               "device_id": "Device id", "cert_fingerprint": "Certificate",
               "debug": "Debugging"}


def info_rows(info: dict) -> list[tuple[str, str]]:
    """What a device says about itself as (label, text) rows a person reads, the known fields
    first."""
    def text(key: str, value) -> str:
        if key == "cpu" and isinstance(value, dict):
            return f"{value.get('cores', '?')} cores, {value.get('arch', '?')}"
        if key == "memory_bytes" and isinstance(value, int):
            return memory_text(value)
        if key == "runtimes" and isinstance(value, list):
            return ", ".join(f"{r.get('name')} {r.get('version', '')}".strip() for r in value) or "none"
        if key == "debug" and isinstance(value, dict):
            return f"debugpy {value.get('debugpy', '?')}"
        if key == "cert_fingerprint" and isinstance(value, str) and value:
            from workbench_device.tls import short_fingerprint

            return short_fingerprint(value)  # as the agent prints it: `Certificate: SHA256:…`
        return "–" if value is None else str(value)

    keys = [k for k in INFO_LABELS if k in info] + [k for k in info if k not in INFO_LABELS
                                                    and info[k] is not None]
    return [(INFO_LABELS.get(key, key.replace("_", " ").capitalize()), text(key, info[key]))
            for key in keys]


def _registry_line(verification) -> str:
    """The verdict's line about the model registry: the version the verification was recorded
    under, or why it was not (rich text)."""
    from html import escape

    if verification.registry_note:
        return f"<br>⚠ {escape(verification.registry_note)}"
    if verification.model_version:
        return f"<br>Recorded under model version {verification.model_version} in the registry"
    return ""


def _status_color(status: str) -> QColor:
    if status == "online":
        return PASS_COLOR
    return FAIL_COLOR if status in REFUSED_STATUSES else OFF_COLOR


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    return table


class DevicesPanel(QWidget):
    """The Devices dock's widget.

    Its content sits in a scroll area: a dock's minimum size is its widget's, and the window
    cannot be narrower than its docks' minimums, so a panel that only scrolls when squeezed
    leaves the window's size to the user."""

    sig_device_selected = Signal(str)
    """The device selected in the list changed (its HOST:PORT, empty for none)."""

    def __init__(self, session, models_selection: Callable[[], list[Path]] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.models_selection = models_selection or (lambda: [])
        self.model_path: Path | None = None
        self.pair_dialog: PairDialog | None = None
        self.runtimes_of: dict[str, list[dict]] = {}
        """What each device reported of its runtimes (by HOST:PORT)."""
        self._info_asked = False
        self._followed: tuple[str, str] | None = None
        """The device whose log is followed now: (HOST:PORT, name)."""
        self._selected = ""  # the device selected when the selection last changed

        self.notice = Banner(kind="notice")
        self.banner = Banner()
        self.status = ElidedLabel()
        self.status.setObjectName("device-status")

        self.refresh_button = QPushButton("Refresh")
        self.pair_button = QPushButton("Pair…")
        self.local_button = QPushButton("Start Local Device")
        self.local_button.setToolTip("Start an agent on this computer and pair with it")
        self.info_button = QPushButton("Info")
        self.info_button.setToolTip("Connect to the selected device and show what it says about itself")
        self.refresh_button.clicked.connect(self.refresh)
        self.pair_button.clicked.connect(lambda: self.pair())
        self.local_button.clicked.connect(self.session.start_local)
        self.info_button.clicked.connect(self.show_info)
        device_buttons = QGridLayout()
        device_buttons.setContentsMargins(0, 0, 0, 0)
        device_buttons.addWidget(self.refresh_button, 0, 0)
        device_buttons.addWidget(self.pair_button, 0, 1)
        device_buttons.addWidget(self.local_button, 1, 0)
        device_buttons.addWidget(self.info_button, 1, 1)

        self.devices = QTreeWidget()
        self.devices.setObjectName("device-list")
        self.devices.setHeaderLabels(["Device", "Address", "Status", "Note"])
        self.devices.setRootIsDecorated(False)
        # The list shares a bottom dock with the model controls: a long name ("vm (local) (this
        # computer)") or note gives way, elided in the middle, so Address and Status stay in
        # view; the tooltip has the whole text.
        self.devices.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.devices.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(48)
        for column, mode in ((0, QHeaderView.ResizeMode.Stretch),
                             (1, QHeaderView.ResizeMode.ResizeToContents),
                             (2, QHeaderView.ResizeMode.ResizeToContents),
                             (3, QHeaderView.ResizeMode.Stretch)):
            header.setSectionResizeMode(column, mode)
        self.devices.currentItemChanged.connect(lambda *_: self._selection_changed())
        self.devices.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.devices.customContextMenuRequested.connect(self._device_menu)

        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("A model from the Models panel, or a file")
        self.model_edit.editingFinished.connect(lambda: self.set_model(self.model_edit.text() or None))
        self.from_models = QPushButton("From Models")
        self.from_models.setToolTip("Use the model selected in the Models panel")
        self.from_models.clicked.connect(self.use_models_selection)
        self.choose = QPushButton("Choose…")
        self.choose.clicked.connect(self.choose_model)
        self.push_button = QPushButton("Push")
        self.push_button.setToolTip("Send the model to the device unless it has it")
        model_row = QHBoxLayout()
        model_row.addWidget(QLabel("Model"))
        model_row.addWidget(self.model_edit, 1)
        model_row.addWidget(self.from_models)
        model_row.addWidget(self.choose)
        model_row.addWidget(self.push_button)

        self.samples = QSpinBox()
        self.samples.setObjectName("device-samples")
        # Verify holds every sample in memory on both sides; a test split rarely has more, and
        # Verify uses what it has when asked for more (the result line says how many ran).
        self.samples.setRange(1, MAX_SAMPLES)
        self.samples.setValue(DEFAULT_SAMPLES)
        self.samples.setSuffix(" samples")
        self.samples.setToolTip("How many samples of the project's test split Verify runs on both sides")
        self.runtime = QComboBox()
        self.runtime.setObjectName("device-runtime")
        self.runtime.setToolTip("The inference runtime Verify uses on the device (those it reports)")
        self.runtime.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self._fill_runtimes([])
        self.verify_button = QPushButton("Verify")
        self.verify_button.setToolTip("Run the model on the device and here, and compare")
        self.cancel_button = QPushButton("Cancel")
        self.push_button.clicked.connect(lambda: self.push())
        self.verify_button.clicked.connect(lambda: self.verify())
        self.cancel_button.clicked.connect(self.cancel)
        run_row = QHBoxLayout()
        run_row.addWidget(QLabel("Verify on"))
        run_row.addWidget(self.samples)
        run_row.addSpacing(8)
        run_row.addWidget(QLabel("with"))
        run_row.addWidget(self.runtime)
        run_row.addStretch(1)
        run_row.addWidget(self.verify_button)
        run_row.addWidget(self.cancel_button)

        self.verdict = QLabel()
        self.verdict.setObjectName("device-verdict")
        self.verdict.setWordWrap(True)
        self.result_table = _table(RESULT_HEADERS)
        self.result_table.setObjectName("device-result-table")
        self.latency_table = _table(LATENCY_HEADERS)
        self.latency_table.setObjectName("device-latency-table")
        # A bottom dock is short: each table shows its header and a row at least, and
        # scrolls for more.
        for table in (self.result_table, self.latency_table):
            table.setMinimumHeight(table.horizontalHeader().sizeHint().height()
                                   + table.verticalHeader().defaultSectionSize() + 4)
        result_page = QWidget()
        result_layout = QVBoxLayout(result_page)
        result_layout.setContentsMargins(0, 0, 0, 0)
        result_layout.addWidget(self.verdict)
        result_layout.addWidget(self.result_table, 1)
        self.history_table = _table(HISTORY_HEADERS)
        self.history_table.setObjectName("device-history-table")
        self.info_view = QTreeWidget()
        self.info_view.setObjectName("device-info")
        self.info_view.setHeaderHidden(True)
        self.info_view.setColumnCount(2)
        self.info_view.setRootIsDecorated(False)
        self.info_view.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.log_view = QPlainTextEdit()
        self.log_view.setObjectName("device-log")
        self.log_view.setReadOnly(True)
        self.log_view.setMaximumBlockCount(5000)
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.follow_button = QPushButton("Follow Log")
        self.follow_button.setCheckable(True)
        self.follow_button.toggled.connect(self._follow_toggled)
        log_page = QWidget()
        log_layout = QVBoxLayout(log_page)
        log_layout.setContentsMargins(0, 0, 0, 0)
        log_layout.addWidget(self.follow_button, 0, Qt.AlignmentFlag.AlignLeft)
        log_layout.addWidget(self.log_view)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(result_page, "Verification")
        self.tabs.addTab(self.latency_table, "Latency")
        self.tabs.addTab(self.history_table, "History")
        self.tabs.addTab(self.info_view, "Info")
        self.tabs.addTab(log_page, "Log")

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 4, 0)
        left_layout.addLayout(device_buttons)
        left_layout.addWidget(self.devices, 1)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 0, 0, 0)
        right_layout.addLayout(model_row)
        right_layout.addLayout(run_row)
        right_layout.addWidget(self.tabs, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(left)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        # Stretch factors share only the room beyond the size hints, which leave the list a
        # sliver ("Bo… B"): sizes in the same 2:3 ratio give it its share from the first show.
        self.splitter.setSizes([2000, 3000])

        content = QWidget()
        content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(4, 4, 4, 2)
        content_layout.addWidget(self.notice)
        content_layout.addWidget(self.banner)
        content_layout.addWidget(self.splitter, 1)
        content_layout.addWidget(self.status)
        self.scroll = QScrollArea()
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scroll)

        session.sig_devices_listed.connect(self.show_devices)
        session.sig_device_status_changed.connect(self.show_device_status)
        session.sig_error.connect(self.show_error)
        session.sig_notice.connect(self.notice.show_message)
        session.sig_progress.connect(self.status.setText)
        session.sig_info.connect(self.show_device_info)
        session.sig_pushed.connect(self._pushed)
        session.sig_alias_pushed.connect(self.show_alias_push)
        session.sig_paired.connect(lambda name: self.status.setText(f"Paired with {name}"))
        session.sig_forgotten.connect(lambda name: self.status.setText(
            f"Forgot {name} and its pinned certificate: Pair… to use it again"))
        session.sig_verified.connect(self.show_verification)
        session.sig_history.connect(self.show_history)
        session.sig_log_line.connect(self._log_line)
        session.sig_busy_changed.connect(lambda busy: self._update_buttons())
        self._update_buttons()

    # --- devices -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """List the devices again; the banner's message is about an earlier state, so it goes
        (a failure of the listing itself shows again)."""
        self.banner.hide()
        self.session.refresh()

    def show_devices(self, overview: dict) -> None:
        selected = self.selected_address()
        # The list is rebuilt: the selection passing through "none" is no change of device.
        self.devices.blockSignals(True)
        self.devices.clear()
        for row in overview.get("devices", []):
            name = row["name"] + (" (this computer)" if row.get("local") else "")
            status = row["status"] + ("" if row.get("paired") or row.get("local") else ", not paired")
            # The listing's note points a terminal user to a command; here the device's
            # refusal, with what to do, shows when it is selected.
            note = (CHANGED_NOTE if row["status"] == CERTIFICATE_CHANGED
                    else row.get("note", ""))
            item = QTreeWidgetItem([name, row["address"], status, note])
            item.setData(0, Qt.ItemDataRole.UserRole, row)
            item.setToolTip(0, name)
            item.setToolTip(3, note)
            item.setForeground(2, _status_color(row["status"]))
            self.devices.addTopLevelItem(item)
            if row["address"] == selected:
                self.devices.setCurrentItem(item)
        if self.devices.currentItem() is None:
            online = [self.devices.topLevelItem(i) for i in range(self.devices.topLevelItemCount())
                      if self.devices.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)["status"] == "online"]
            if online:
                self.devices.setCurrentItem(online[0])
        self.devices.blockSignals(False)
        self._selection_changed()
        notes = overview.get("notes") or []
        count = self.devices.topLevelItemCount()
        self.status.setText("; ".join(notes) if notes else f"{count} device{'' if count == 1 else 's'}")
        self._update_buttons()

    def show_device_status(self, address: str, status: str) -> None:
        """The row of ``address`` shows ``status`` ("online", "offline"), the rest unchanged."""
        for i in range(self.devices.topLevelItemCount()):
            item = self.devices.topLevelItem(i)
            row = item.data(0, Qt.ItemDataRole.UserRole)
            if row["address"] != address:
                continue
            row = dict(row, status=status)
            item.setData(0, Qt.ItemDataRole.UserRole, row)
            item.setText(2, status + ("" if row.get("paired") or row.get("local") else ", not paired"))
            item.setForeground(2, _status_color(status))

    def device_name(self, address: str) -> str:
        """The name the list shows for ``address`` (the address itself when it is not listed)."""
        row = next((r for r in self.device_rows() if r["address"] == address), None)
        return str(row.get("name") or address) if row is not None else address

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
        address = self.selected_address()
        self.sig_device_selected.emit(address)
        if self._followed is not None and self._followed[0] != address:
            # Another device's log would need its own stream: this one ends, and says so, so
            # its lines are not taken for the new device's.
            name = self._followed[1]
            self.follow_button.setChecked(False)
            self.status.setText(f"Stopped following {name}'s log: another device is selected")
        self._fill_runtimes(self.runtimes_of.get(address, []))
        item = self.devices.currentItem()
        row = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        newly = address != self._selected
        self._selected = address
        if (row is not None and address not in self.runtimes_of and row["status"] == "online"
                and (row.get("paired") or row.get("local"))):
            # The runtime choice lists what this device has: it says so in its info.
            self.session.info(address)
        elif row is not None and row["status"] == CERTIFICATE_CHANGED and newly:
            # The refusal names both certificates and says what to do: connecting gets it.
            self.session.info(address)
        self._update_buttons()

    def device_menu(self, item: QTreeWidgetItem | None):
        """The right-click menu of a row of the device list (a QMenu), None for a device that
        is not paired."""
        from PySide6.QtWidgets import QMenu

        row = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if row is None or not row.get("paired"):
            return None
        menu = QMenu(self.devices)
        forget = menu.addAction("Forget Device", lambda: self.forget(row["address"]))
        forget.setToolTip("Forget it and its pinned certificate; Pair… to use it again")
        return menu

    def _device_menu(self, position) -> None:
        item = self.devices.itemAt(position)
        menu = self.device_menu(item)
        if menu is not None:
            self.devices.setCurrentItem(item)
            menu.exec(self.devices.viewport().mapToGlobal(position))
            menu.deleteLater()

    def forget(self, address: str) -> bool:
        """Forget the paired device at ``address`` and its pin (to pair with it again); False
        when no paired device is listed there."""
        row = next((r for r in self.device_rows() if r["address"] == address and r.get("paired")),
                   None)
        if row is None:
            return False
        self.banner.hide()
        self.session.forget(row["device_id"], row["name"])
        return True

    def pair(self, address: str | None = None, code: str | None = None) -> None:
        """Pair with ``address`` using ``code``; asks for what is missing in the Pair dialog."""
        if address is None or code is None:
            if self.pair_dialog is not None:
                self.pair_dialog.close()
            if address is None:
                address = self._unpaired_selection()
            self.pair_dialog = PairDialog(self, address or "")
            self.pair_dialog.accepted.connect(
                lambda dialog=self.pair_dialog: self.pair(dialog.address.text(), dialog.code.text()))
            self.pair_dialog.open()
            return
        code = code.strip()
        if not (len(code) == 6 and code.isdigit()):
            self.show_error("The pairing code is the 6 digits the device's agent prints.")
            return
        self.banner.hide()
        self.session.pair(address, code)

    def _unpaired_selection(self) -> str:
        """The selected device's address when it is one to pair with (seen, not paired yet)."""
        item = self.devices.currentItem()
        row = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if row is None or row.get("paired") or row.get("local"):
            return ""
        return str(row.get("address") or "")

    def show_info(self) -> None:
        address = self._device_or_say()
        if address:
            self.banner.hide()
            self._info_asked = True
            self.session.info(address)

    def show_device_info(self, info: dict) -> None:
        address = str(info.get("address", ""))
        self.runtimes_of[address] = list(info.get("runtimes") or [])
        if address == self.selected_address():
            self._fill_runtimes(self.runtimes_of[address])
        self.info_view.clear()
        for label, value in info_rows(info):
            self.info_view.addTopLevelItem(QTreeWidgetItem([label, value]))
        if self._info_asked:
            self._info_asked = False
            self.tabs.setCurrentWidget(self.info_view)

    def info_text(self) -> dict[str, str]:
        """The Info tab's rows, label to value (for tests and scripts)."""
        view = self.info_view
        return {view.topLevelItem(i).text(0): view.topLevelItem(i).text(1)
                for i in range(view.topLevelItemCount())}

    def _fill_runtimes(self, runtimes: list[dict]) -> None:
        """The runtime choice: those the device reported (onnxruntime until it has)."""
        chosen = self.runtime.currentData()
        self.runtime.clear()
        for runtime in runtimes or [{"name": DEFAULT_RUNTIME}]:
            version = runtime.get("version")
            shown = runtime["name"] + (f" {version}" if version and version != "?" else "")
            self.runtime.addItem(shown, runtime["name"])
        index = self.runtime.findData(chosen)
        self.runtime.setCurrentIndex(max(index, 0))

    def runtimes(self) -> list[str]:
        """The runtimes Verify can choose now."""
        return [self.runtime.itemData(i) for i in range(self.runtime.count())]

    def set_runtime(self, name: str) -> bool:
        index = self.runtime.findData(name)
        if index >= 0:
            self.runtime.setCurrentIndex(index)
        return index >= 0

    # --- the model -----------------------------------------------------------------------------

    def set_model(self, path: Path | str | None) -> None:
        """The model Push and Verify work on (a relative path is the project's); its
        verification history is read."""
        root = Path(self.session.project_dir)
        self.model_path = root / Path(path).expanduser() if path else None
        shown = ""
        if self.model_path is not None:
            try:
                shown = self.model_path.relative_to(root).as_posix()
            except ValueError:
                shown = str(self.model_path)
        self.model_edit.setText(shown)
        self.model_edit.setToolTip(str(self.model_path or ""))
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
        """Verify the model on the selected device with the runtime and number of samples
        chosen (``options``, verify_model's, take precedence)."""
        # A command's options show in the controls, so the panel says what ran.
        if isinstance(options.get("samples"), int):
            self.samples.setValue(options["samples"])
        if "runtime" in options:
            self.set_runtime(options["runtime"])
        options.setdefault("samples", self.samples.value())
        options.setdefault("runtime", self.runtime.currentData() or DEFAULT_RUNTIME)
        target = self._target()
        if target:
            self.banner.hide()
            self.result_table.setRowCount(0)
            self.latency_table.setRowCount(0)
            self.verdict.setText(f"Verifying {target[1].name} on {self.device_name(target[0])}…")
            self.tabs.setCurrentIndex(0)
            self.session.verify(*target, **options)

    def cancel(self) -> None:
        from workbench.device.widgets.session import PUSH_KEY, VERIFY_KEY

        for key in (VERIFY_KEY, PUSH_KEY):
            if self.session.is_busy(key):
                self.session.cancel(key)
        if self.session.stop_alias_push():
            # The push's own report follows (show_alias_push): which devices switched before it.
            self.status.setText("Cancelling the push: devices not switched yet keep the model they serve…")
        else:
            self.status.setText("Cancelled")

    def _pushed(self, result) -> None:
        name = self.model_path.name if self.model_path is not None else "the model"
        if getattr(result, "skipped", False):
            self.status.setText(f"The device has {name} already: nothing sent")
        else:
            self.status.setText(f"Pushed {name} ({_size_text(result.sent)} sent)")

    def push_alias(self, alias: str, left: str | int | None = None, on_finished=None):
        """Push ``alias``'s version to the slots that served ``left`` (``workbench device
        redeploy``); returns the push's ``AliasPushOperation``."""
        self.banner.hide()
        self.status.setText(f"Pushing {alias} to the devices that served "
                            f"{'the version it left' if left is None else f'{int(left):04d}'}…")
        return self.session.redeploy_alias(alias, left, on_finished)

    def show_alias_push(self, operation) -> None:
        """Say what each device did with an alias push: the status line sums it up (each
        device's line in its tooltip), the banner names the devices that did not switch."""
        from workbench.device.widgets.alias_push import outcome_lines

        self.status.setText(operation.summary)
        if operation.result is None:
            self.banner.show_message(operation.summary)
            return
        lines = outcome_lines(operation.result)
        if lines:
            self.status.setToolTip("\n".join(lines))
        if not operation.ok:
            missed = [line for line in lines if " switched to " not in line]
            self.banner.show_message(f"{operation.alias} {operation.result.version} did not reach every device: "
                                     + "; ".join(missed))

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
                             f"{verification.data_source}{accuracy}{_registry_line(verification)}")
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
            # An output missing on the device was recorded without a difference (None).
            diffs = [c.max_abs_diff for c in entry.outputs]
            worst = (math.inf if None in diffs else max(diffs)) if diffs else None
            p50 = (entry.latency.get("device") or {}).get("p50_ms")
            cells = [_local_time(entry.time), entry.device_name, entry.runtime, str(entry.samples)]
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
            name = self.device_name(address)
            self._followed = (address, name)
            self.log_view.appendPlainText(f"— following {name} ({address}) —")
            self.session.follow_logs(address)
        else:
            if self._followed is not None:
                self.log_view.appendPlainText(f"— stopped following {self._followed[1]} —")
                self._followed = None
            self.session.stop_logs()

    def _log_line(self, line: dict) -> None:
        self.log_view.appendPlainText(f"{_clock(line.get('time'))} {str(line.get('level', '')).upper():7} "
                                      f"{line.get('message', '')}")

    # --- state ---------------------------------------------------------------------------------

    def show_error(self, message: str) -> None:
        self.banner.show_message(message)
        self.status.setText("")
        if self.follow_button.isChecked():
            self.follow_button.blockSignals(True)
            self.follow_button.setChecked(False)
            self.follow_button.blockSignals(False)
            self._followed = None
        if self.verdict.text().startswith("Verifying"):
            self.verdict.setText("")

    def _update_buttons(self) -> None:
        from workbench.device.widgets.session import PUSH_KEY, REDEPLOY_KEY, VERIFY_KEY

        has_device = bool(self.selected_address())
        working = self.session.is_busy(VERIFY_KEY) or self.session.is_busy(PUSH_KEY)
        self.info_button.setEnabled(has_device)
        self.push_button.setEnabled(has_device and not working)
        self.verify_button.setEnabled(has_device and not working)
        self.cancel_button.setEnabled(working or self.session.is_busy(REDEPLOY_KEY))

    def close_down(self) -> None:
        if self.pair_dialog is not None:
            self.pair_dialog.close()
        self.session.close_down()
