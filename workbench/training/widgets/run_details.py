"""One run in detail: its live curves, its log and what it was started with."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QTabWidget, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.training.run_text import exit_code_text, outage_note, state_text
from workbench.training.widgets.comparison import format_value
from workbench.training.widgets.curves import CurvesView
from workbench.training.widgets.log_view import LogView
from workbench.training.widgets.runs_table import STATE_COLOURS, format_duration
from workbench.training.written_files import read_products

OUTAGE_COLOUR = "#b06000"


class RunDetails(QWidget):
    """A header line (run, state, what went wrong) over tabs Curves, Log and Details."""

    sig_link_activated = Signal(str, int)
    """A traceback location in the log was clicked: (path, 1-based line)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.header = QLabel()
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setContentsMargins(6, 3, 6, 3)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.curves = CurvesView(self)
        self.curves.setObjectName("run-curves")
        self.log = LogView(self)
        self.log.setObjectName("run-log")
        self.log.sig_link_activated.connect(self.sig_link_activated)
        self.info = QTreeWidget()
        self.info.setHeaderLabels(["", ""])
        self.info.setHeaderHidden(True)
        self.info.setRootIsDecorated(True)
        self.info.setColumnWidth(0, 180)
        self.tabs.addTab(self.curves, "Curves")
        self.tabs.addTab(self.log, "Log")
        self.tabs.addTab(self.info, "Details")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.tabs, 1)
        self.run_id: str | None = None
        self._state: str | None = None
        self._shown_info: dict | None = None
        self._active = False
        self._live: dict = {}
        self._metrics_item: QTreeWidgetItem | None = None
        self._sections: list[tuple] = []

    def add_section(self, title: str, rows_of) -> None:
        """Another capability's group in the Details tab, after "Run" (the cluster's "Cluster"):
        ``rows_of(info)`` gives its ``(name, value)`` rows; no rows, no group."""
        self._sections.append((title, rows_of))

    def show_run(self, row) -> None:
        """Show ``row`` (a ``RunRow``) from no points and an empty log."""
        self.run_id = row.id
        self._state = None
        self._shown_info = None
        self._live = {}
        self.curves.set_runs([row.id])
        self.log.clear()
        self.update_info(row)

    def show_live_metrics(self, run_id: str, latest: dict, restarted: bool = False) -> None:
        """The newest values the curves received for the shown run while it is active, so its
        metrics move on with the table between two listings. ``restarted``: the metrics file
        started over (a resume), the values before it no longer count."""
        if run_id != self.run_id:
            return
        if restarted:
            self._live = {}
        self._live.update(latest)
        if self._active and self._metrics_item is not None:
            self._show_metrics(self._metrics_item, self._live)

    def update_info(self, row) -> None:
        info = row.info
        self._active = info.is_active
        if info.state == "failed" and self._state != "failed":
            self.tabs.setCurrentWidget(self.log)  # the traceback is what the user needs first
        self._state = info.state
        colour = STATE_COLOURS.get(info.state, "#555")
        parts = [f"<b>{info.id}</b>", f"<span style='color:{colour}'>{_escape(state_text(info))}</span>"]
        duration = format_duration(info.duration)
        if duration:
            parts.append(duration)
        if info.resumed_from:
            parts.append(f"resumed from {info.resumed_from}")
        text = " · ".join(parts)
        note = outage_note(info)
        if note:
            # The run itself is fine: the link to its cluster is not.
            text += f"<br><span style='color:{OUTAGE_COLOUR}'>{_escape(note)}</span>"
        elif info.error:
            text += f"<br><span style='color:#d93025'>{_escape(info.error)}</span>"
        self.header.setText(text)
        described = info.to_json()
        if described != self._shown_info:  # refilled only on a change, so expansion and scroll stay
            self._shown_info = described
            self._fill_info(info)

    def _fill_info(self, info) -> None:
        expanded = {self.info.topLevelItem(i).text(0) for i in range(self.info.topLevelItemCount())
                    if self.info.topLevelItem(i).isExpanded()}
        self.info.clear()

        scroll = self.info.verticalScrollBar().value()

        def add(parent, key: str, value) -> QTreeWidgetItem | None:
            if parent is not None and value in (None, ""):
                return None  # nothing known (yet): no empty row
            item = QTreeWidgetItem([key, "" if value is None else str(value)])
            item.setToolTip(1, item.text(1))
            if parent is None:
                self.info.addTopLevelItem(item)
            else:
                parent.addChild(item)
            return item

        run = add(None, "Run", "")
        add(run, "Folder", info.run_dir)
        add(run, "Script", info.script)
        add(run, "Hyper-parameter file", info.hparams_file or "(none: the defaults)")
        if info.overrides:
            add(run, "Overrides", "  ".join(info.effective_overrides))
        add(run, "Processes", info.nproc)
        add(run, "Command", " ".join(info.command))
        commit = (info.git_commit or "")[:10]
        if commit:
            add(run, "Git commit", commit + (" + uncommitted changes (git.patch)" if info.git_dirty else ""))
        if info.resumed_from:
            add(run, "Resumed from", info.resumed_from)
        add(run, "Dataset version", getattr(info, "dataset_version", ""))
        add(run, "Fine-tuned from", f"model version {info.from_version}" if getattr(info, "from_version", "") else "")
        if getattr(info, "model_version", ""):
            add(run, "Model version", info.model_version + (f" ({info.registry_note})" if info.registry_note else ""))
        elif getattr(info, "registry_note", "") and info.state == "completed":
            add(run, "Model version", f"none: {info.registry_note}")
        add(run, "Started", _when(info.started_at))
        for resume in getattr(info, "resumes", None) or []:
            add(run, "Resumed", _resume_text(resume))
        if not info.is_active:
            add(run, "Ended", _when(info.ended_at))
        if info.exit_code is not None:
            add(run, "Exit code", exit_code_text(info))
        if info.error and not outage_note(info):
            add(run, "Problem", info.error)
        for title, rows_of in self._sections:
            rows = list(rows_of(info) or [])
            if rows:
                section = add(None, title, "")
                for name, value in rows:
                    add(section, name, value)
        self._add_written_files(info, add)
        metrics = add(None, "Final metrics", "")
        self._metrics_item = metrics
        final = dict(info.final_metrics or {})
        if info.is_active:
            final.update(self._live)  # read since the listing: newer
        self._show_metrics(metrics, final)
        hparams = add(None, "Hyper-parameters", "")
        for name, value in sorted((info.hparams or {}).items()):
            add(hparams, name, format_value(value))
        for index in range(self.info.topLevelItemCount()):
            item = self.info.topLevelItem(index)
            item.setExpanded(not expanded or item.text(0) in expanded)
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
        self.info.verticalScrollBar().setValue(scroll)

    @staticmethod
    def _add_written_files(info, add) -> None:
        """The model files and TensorBoard event files the run wrote in the project folder."""
        products = [] if info.is_cluster else read_products(info.run_dir)
        if not (products or info.event_files):
            return
        written = add(None, "Written in the project", "")
        for product in products:
            add(written, product["path"], f"model · {_size(product.get('size'))}")
        for name in info.event_files:
            add(written, name, "TensorBoard events (read as curves)")

    def _show_metrics(self, group: QTreeWidgetItem, metrics: dict) -> None:
        """Set the group's rows to ``metrics`` in place (sorted by name), so a live update keeps
        the scroll position and selection."""
        rows = {group.child(i).text(0): group.child(i) for i in range(group.childCount())}
        for name, value in metrics.items():
            text = format_value(value)
            row = rows.get(name)
            if row is None:
                row = QTreeWidgetItem([name, text])
                names = [group.child(i).text(0) for i in range(group.childCount())]
                group.insertChild(sum(1 for other in names if other < name), row)
                rows[name] = row
            elif row.text(1) != text:
                row.setText(1, text)
            row.setToolTip(1, text)


def _resume_text(resume) -> str:
    if not isinstance(resume, dict):
        return str(resume)
    parts = []
    if resume.get("step") is not None:
        parts.append(f"at step {resume['step']}")
    if resume.get("time"):
        parts.append(_when(resume["time"]))
    return ", ".join(parts)


def _size(size) -> str:
    if not isinstance(size, (int, float)):
        return "?"
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def _when(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S") if timestamp else ""


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
