"""The Registry panel: the project's model versions as a table beside a plot of a metric across
them, and what one does with a version (pin, alias, roll an alias back, open in a model tool,
remove, run retention, read the alias history); a switch at the left of its tool bar turns it to
the dataset versions (``dataset_view.py``), where Cut Version… cuts the next one.

Versions are listed on the GUI thread (reading a few hundred small YAML files is quick) when
the panel opens, on Refresh, and shortly after anything under the registry folder changes:
training and the command line register and remove versions from other processes. Every change
runs on the window's task runner: it takes the registry's lock, which another process may hold
for a while.

Rolling an alias back also moves the devices when the window has the device capability: the
panel runs its ``device.redeployAlias`` command (the registry never imports the device
capability) and says on its status line that the push is under way, then how it went.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QFileSystemWatcher, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QLabel,
    QMenu,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.qt.tasks import Operation, TaskRunner
from workbench.registry.deployments import slots_serving, still_serving_hint
from workbench.registry.errors import RegistryError
from workbench.registry.models import ModelRegistry, ModelVersion, RetentionReport
from workbench.registry.settings import RegistrySettings, read_settings
from workbench.registry.store import format_number
from workbench.registry.widgets.dataset_view import DatasetView
from workbench.registry.widgets.dialogs import AliasHistoryDialog, RollbackDialog, SetAliasDialog
from workbench.registry.widgets.metric_plot import MetricPlot
from workbench.registry.widgets.version_rows import file_to_open, format_size, metric_columns, project_metric
from workbench.registry.widgets.versions_table import VersionsTable

log = logging.getLogger(__name__)

WATCH_DEBOUNCE_MS = 300
WATCHED_FILES = ("registry.json", "aliases.json", "alias-history.jsonl")
MODELS_VIEW = "models"
DATASETS_VIEW = "datasets"
VIEW_BUTTONS = {MODELS_VIEW: ("refresh", "pin", "alias", "rollback", "open", "remove", "gc", "history"),
                DATASETS_VIEW: ("refresh", "cut")}
"""The tool bar's buttons each view shows."""
VIEW_BUTTON_STYLE = ("QToolButton { padding: 2px 6px; border: 1px solid transparent; border-radius: 3px; }"
                     "QToolButton:checked { background: @INFO_BACKGROUND; border-color: @INFO_BORDER; }"
                     "QToolButton:hover:!checked { border-color: @PANEL_BORDER; }")
TOOLS_CATEGORY = "Model Tools"
"""The category of the model tools' commands, which the Explorer offers on a model file."""
DEVICE_PUSH_COMMAND = "device.redeployAlias"
"""The device capability's command (when the window has it) that pushes an alias's version to the
device slots that served the version it left: ``alias``, ``left``, ``on_finished(operation)``."""
MODELS_CONTEXT = "models"
"""The context of commands other capabilities offer on a model (Verify on Device…)."""
EMPTY_TEXT = ("No model versions yet.\n\nA run that makes a model registers it as the next version when it "
              "completes: train a run (Run ▸ Train…).\nTo train on a fixed dataset version, cut one with "
              "`workbench dataset version`, then `workbench train --dataset-version N`.")


class RegistryPanel(QWidget):
    """The model and dataset versions of one project."""

    sig_listed = Signal()
    """The table shows the registry as it is on disk now."""

    sig_operation_finished = Signal(object)
    """A change the panel started (an ``Operation``) is over: done or failed."""

    sig_devices_followed = Signal(object)
    """A push to the devices after a rollback is over (the device command's operation, with
    ``ok`` and ``summary``), and the status line says how it went."""

    def __init__(self, project_root: Path, project_settings: Callable[[], dict], tasks: TaskRunner,
                 commands=None, show_error: Callable[[str], None] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.project_root = Path(project_root)
        self._project_settings = project_settings
        self.tasks = tasks
        self.commands = commands
        self._show_error = show_error
        self.registry: ModelRegistry | None = None
        self.settings: RegistrySettings | None = None
        self.versions: list[ModelVersion] = []
        self.problems: dict[int, list[str]] = {}
        self.alias_targets: dict[str, int] = {}
        self._keys = itertools.count(1)
        self.operations: list[Operation] = []
        self.device_push = None
        """What the device command returned for the last push after a rollback."""

        self.buttons: dict[str, QToolButton] = {}
        self._bar_actions: dict[str, object] = {}
        # A tool bar, not a row of buttons: in a narrow dock the buttons that do not fit go to
        # its » menu instead of widening the dock past the window.
        bar = QToolBar()
        bar.setObjectName("registry-toolbar")
        bar.setIconSize(QSize(16, 16))
        bar.setContentsMargins(4, 0, 4, 0)
        self.view_buttons: dict[str, QToolButton] = {}
        self._view_group = QButtonGroup(self)
        self._view_group.setExclusive(True)
        for view, text, tip in ((MODELS_VIEW, "Models", "The model versions: every completed run's model"),
                                (DATASETS_VIEW, "Datasets", "The dataset versions: manifests of the samples "
                                                            "the data held when each was cut")):
            button = QToolButton()
            button.setObjectName(f"registry-view-{view}")
            button.setText(text)
            button.setToolTip(tip)
            button.setCheckable(True)
            button.setAutoRaise(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            theme.set_themed_style_sheet(button, VIEW_BUTTON_STYLE)
            button.clicked.connect(lambda _checked=False, view=view: self.show_view(view))
            self._view_group.addButton(button)
            bar.addWidget(button)
            self.view_buttons[view] = button
        self.view_buttons[MODELS_VIEW].setChecked(True)
        bar.addSeparator()
        for key, text, tip, run in (
                ("refresh", "Refresh", "Read the registry again", self.refresh),
                ("pin", "Pin", "Pin or unpin the selected version (retention keeps a pinned one)",
                 lambda: self.toggle_pin()),
                ("alias", "Set Alias…", "Point an alias (production, staging) at the selected version",
                 lambda: self.set_alias()),
                ("rollback", "Roll Back…", "Move an alias back to the version it was on before",
                 lambda: self.rollback()),
                ("open", "Open in Tool", "Open the selected version's model in a model tool",
                 lambda: self.open_in_tool()),
                ("remove", "Remove…", "Remove the selected version", lambda: self.remove_version()),
                ("gc", "Run Retention…", "Remove the versions retention does not keep",
                 lambda: self.run_retention()),
                ("history", "Alias History", "Every alias move: when, from which version to which, why",
                 lambda: self.show_alias_history()),
                ("cut", "Cut Version…", "Cut the next dataset version from what the data holds now",
                 lambda: self.cut_dataset_version())):
            button = QToolButton()
            button.setObjectName(f"registry-{key}")
            button.setText(text)
            button.setToolTip(tip)
            button.setAutoRaise(True)
            button.clicked.connect(run)
            self._bar_actions[key] = bar.addWidget(button)
            self.buttons[key] = button
        open_menu = QMenu(self.buttons["open"])
        open_menu.aboutToShow.connect(lambda: self._fill_tools_menu(open_menu))
        self.buttons["open"].setMenu(open_menu)
        self.buttons["open"].setPopupMode(QToolButton.ToolButtonPopupMode.MenuButtonPopup)

        self.table = VersionsTable()
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._show_context_menu)
        self.table.doubleClicked.connect(lambda _index: self.open_in_tool())
        self.plot = MetricPlot()
        self.plot.sig_number_clicked.connect(self.table.select_key)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.plot)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.empty_label = QLabel(EMPTY_TEXT)
        self.empty_label.setObjectName("registry-empty")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        theme.set_themed_style_sheet(self.empty_label, "color: @MUTED_TEXT; padding: 12px;")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_label)
        self.stack.addWidget(self.splitter)
        self.dataset_view = DatasetView(self.project_root, tasks, self.say, self._change, self.refresh)
        self.dataset_view.commands = commands
        self.dataset_view.setObjectName("registry-dataset-view")
        self.views = QStackedWidget()
        self.views.addWidget(self.stack)
        self.views.addWidget(self.dataset_view)
        self.status_line = QLabel()
        self.status_line.setObjectName("registry-status")
        self.status_line.setWordWrap(True)
        self.status_line.setContentsMargins(6, 2, 6, 2)
        self.status_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_line.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(bar)
        column.addWidget(self.views, 1)
        column.addWidget(self.status_line)

        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(self._soon)
        self._watcher.fileChanged.connect(self._soon)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(WATCH_DEBOUNCE_MS)
        self._debounce.timeout.connect(self.refresh)
        self._update_buttons()
        self.show_view(MODELS_VIEW)

    # --- listing ------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the registry again and show it (the selected versions stay selected)."""
        project_settings = self._project_settings()
        self.dataset_view.refresh(project_settings)
        try:
            self.settings = read_settings(self.project_root, project_settings)
            self.registry = ModelRegistry(self.settings)
            self.versions = self.registry.list()
            self.alias_targets = self.registry.aliases.all() if self.settings.folder.is_dir() else {}
            self.problems = {version.number: self.registry.problems(version) for version in self.versions}
        except (RegistryError, OSError) as exc:
            self.versions, self.problems, self.alias_targets = [], {}, {}
            self.empty_label.setText(f"The registry cannot be read: {exc}")
            self.stack.setCurrentWidget(self.empty_label)
            self._watch()
            self._update_buttons()
            self.sig_listed.emit()
            return
        chosen = project_metric(self.settings.metric, self.versions)
        self.table.show_versions(self.versions, metric_columns(self.settings.metric, self.versions), chosen,
                                 self.settings.mode, self.problems)
        self.plot.set_versions(self.versions, preferred=chosen)
        self.plot.select_number(self.table.selected_key())
        self.empty_label.setText(EMPTY_TEXT)
        self.stack.setCurrentWidget(self.splitter if self.versions else self.empty_label)
        if self.versions and self.table.selected_key() is None:
            self.table.selectRow(0)
        self._watch()
        self._update_buttons()
        self.sig_listed.emit()

    def watched_folders(self) -> list[Path]:
        """The registry folder and its models and datasets folders (the project folder while
        the registry folder is not there yet, so its creation is seen)."""
        if self.settings is None:
            return [self.project_root]
        folders = [self.settings.folder, self.settings.folder / "models", self.settings.folder / "datasets"]
        present = [folder for folder in folders if folder.is_dir()]
        return present if present else [self.settings.folder.parent]

    def watched_files(self) -> list[Path]:
        """The registry's own files: a change written in place (a hand edit) moves no entry of
        the folder, so the folder's watch would miss it."""
        if self.settings is None:
            return []
        return [path for path in (self.settings.folder / name for name in WATCHED_FILES) if path.is_file()]

    def _watch(self) -> None:
        # Paths replaced by renaming (every atomic write) leave the watcher: added again here.
        wanted = {str(path) for path in [*self.watched_folders(), *self.watched_files()]}
        watched = set(self._watcher.directories()) | set(self._watcher.files())
        if watched - wanted:
            self._watcher.removePaths(sorted(watched - wanted))
        if wanted - watched:
            self._watcher.addPaths(sorted(wanted - watched))

    def _soon(self, _path: str = "") -> None:
        self._debounce.start()

    def close_down(self) -> None:
        """Stop following the folders (the window is closing)."""
        self._debounce.stop()
        watched = self._watcher.directories() + self._watcher.files()
        if watched:
            self._watcher.removePaths(watched)

    # --- views --------------------------------------------------------------------------------

    @property
    def view(self) -> str:
        """The view shown: ``models`` or ``datasets``."""
        return DATASETS_VIEW if self.views.currentWidget() is self.dataset_view else MODELS_VIEW

    def show_view(self, view: str) -> None:
        """Show the model versions (``models``) or the dataset versions (``datasets``)."""
        if view not in VIEW_BUTTONS:
            raise ValueError(f"{view!r} is not a view of the Registry panel: models or datasets.")
        self.views.setCurrentWidget(self.dataset_view if view == DATASETS_VIEW else self.stack)
        self.view_buttons[view].setChecked(True)
        for key, action in self._bar_actions.items():
            action.setVisible(key in VIEW_BUTTONS[view])

    def cut_dataset_version(self, fraction: float | None = None, reason: str | None = None,
                            new_val: bool = False) -> object:
        """Show the dataset versions and cut the next one (without ``reason``: ask first)."""
        self.show_view(DATASETS_VIEW)
        return self.dataset_view.cut_version(fraction, reason, new_val)

    # --- selection ----------------------------------------------------------------------------

    def selected_version(self) -> ModelVersion | None:
        number = self.table.selected_key()
        return next((version for version in self.versions if version.number == number), None)

    def select_version(self, number: int) -> bool:
        return self.table.select_key(int(number))

    def _selection_changed(self) -> None:
        self.plot.select_number(self.table.selected_key())
        self._update_buttons()

    def _update_buttons(self) -> None:
        version = self.selected_version()
        for key in ("pin", "alias", "open", "remove"):
            self.buttons[key].setEnabled(version is not None)
        self.buttons["pin"].setText("Unpin" if version is not None and version.pinned else "Pin")
        self.buttons["rollback"].setEnabled(bool(self.alias_targets))
        self.buttons["gc"].setEnabled(bool(self.versions))

    def _registry_folder_exists(self) -> bool:
        return self.settings is not None and self.settings.folder.is_dir()

    def _version(self, number: int | str | None) -> ModelVersion | None:
        """The version ``number`` names (the selected one for None); says so when there is none."""
        if number is None:
            version = self.selected_version()
            if version is None:
                self.say("Select a model version first.", error=True)
            return version
        try:
            wanted = int(str(number).strip())
        except ValueError:
            self.say(f"{number!r} is not a model version number: give its number, as 0003 or 3.", error=True)
            return None
        version = next((version for version in self.versions if version.number == wanted), None)
        if version is None:
            self.say(f"There is no model version {format_number(wanted)}; Refresh if it was just registered.",
                     error=True)
        return version

    # --- messages -----------------------------------------------------------------------------

    def say(self, text: str, error: bool = False) -> None:
        """Show ``text`` on the panel's status line (an error also in the window's message box)."""
        self.status_line.setText(text)
        theme.set_themed_style_sheet(self.status_line, "color: @ERROR_TEXT;" if error else "color: @FOREGROUND;")
        self.status_line.setVisible(bool(text))
        if error and self._show_error is not None:
            self._show_error(text)

    # --- changes ------------------------------------------------------------------------------

    def _change(self, name: str, title: str, function: Callable, done: Callable[[object], str]) -> Operation:
        """Run ``function`` (a registry change) on the task runner; when it is over, say how it
        went and list the registry again."""
        operation = Operation(name, "Registry")
        self.operations.append(operation)

        def finished(result) -> None:
            operation.result, operation.finished = result, True
            self.refresh()
            self.say(done(result))
            self.sig_operation_finished.emit(operation)

        def failed(error) -> None:
            operation.error, operation.finished = error, True
            if not isinstance(error, RegistryError):
                log.error("Registry %s failed: %r", name, error)
            self.refresh()
            self.say(str(error) if isinstance(error, RegistryError) else f"{title} failed: {error}", error=True)
            self.sig_operation_finished.emit(operation)

        self.tasks.run(f"registry.{name}.{next(self._keys)}", function, on_done=finished, on_error=failed,
                       title=title)
        return operation

    def toggle_pin(self, version: int | str | None = None, pinned: bool | None = None) -> Operation | None:
        """Pin the version (``version``, else the selected one), or unpin a pinned one."""
        chosen = self._version(version)
        if chosen is None or self.registry is None:
            return None
        pin = (not chosen.pinned) if pinned is None else pinned
        return self._change("pin", "Pinning" if pin else "Unpinning",
                            lambda: self.registry.pin(chosen.number, pin),
                            lambda _result: f"Version {chosen.name} is {'pinned' if pin else 'no longer pinned'}.")

    def set_alias(self, version: int | str | None = None, alias: str | None = None,
                  reason: str | None = None) -> Operation | SetAliasDialog | None:
        """Point ``alias`` at the version; without ``alias``, ask for it (and the reason)."""
        chosen = self._version(version)
        if chosen is None or self.registry is None:
            return None
        if alias is None:
            dialog = SetAliasDialog(chosen.name, self._aliases(), self)
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.accepted.connect(lambda: self.set_alias(chosen.number, dialog.alias, dialog.reason))
            dialog.open()
            return dialog
        registry = self.registry
        return self._change("alias", f"Setting {alias}",
                            lambda: registry.set_alias(alias, chosen.number, reason or ""),
                            lambda move: f"{alias} now points to version {chosen.name}"
                            + (f" (it was on {format_number(move.previous)})" if move.previous is not None else "")
                            + ".")

    def rollback(self, alias: str | None = None, reason: str | None = None,
                 push: bool = True) -> Operation | RollbackDialog | None:
        """Move ``alias`` back one move; without ``alias``, ask which (and whether the devices
        follow). When device slots served the version it left, ``push`` and the window can push
        to devices, they get the version it is back on, as ``workbench registry rollback`` does;
        otherwise the status line names them and the command that pushes to them."""
        if self.registry is None:
            return None
        if alias is None:
            aliases = self._aliases()
            if not aliases:
                self.say("There is no alias to roll back: set one first (Set Alias…).", error=True)
                return None
            selected = self.selected_version()
            serving = self._slots_serving(aliases) if self.can_push_to_devices() else {}
            dialog = RollbackDialog(aliases, selected.aliases[0] if selected and selected.aliases else "", self,
                                    serving)
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.accepted.connect(lambda: self.rollback(dialog.alias, dialog.reason, dialog.push_to_devices))
            dialog.open()
            return dialog
        registry = self.registry
        return self._change("rollback", f"Rolling back {alias}", lambda: registry.rollback(alias, reason or ""),
                            lambda move: self._rolled_back(registry, move, push))

    def can_push_to_devices(self) -> bool:
        """Whether the window has the device capability's command that pushes an alias."""
        return self.commands is not None and DEVICE_PUSH_COMMAND in self.commands

    def _slots_serving(self, aliases: dict[str, int]) -> dict[str, list[str]]:
        """For each alias, the device slots that serve the version it is on (the deploy log's)."""
        return {name: [f"{served.device} ({served.slot})"
                       for served in slots_serving(self.registry.store.folder, version, name)]
                for name, version in aliases.items()}

    def _rolled_back(self, registry: ModelRegistry, move, push: bool) -> str:
        text = (f"{move.alias} is back on version {format_number(move.version)}"
                + (f" (from {format_number(move.previous)})." if move.previous is not None else "."))
        hint = still_serving_hint(registry.store.folder, move)
        if not hint:
            return text
        if not (push and self.can_push_to_devices()):
            return f"{text} {hint}"
        # The registry knows no devices: the device capability pushes, through its command.
        # Its answer is said on the next turn of the event loop, after this line.
        try:
            self.device_push = self.commands.execute(
                DEVICE_PUSH_COMMAND, alias=move.alias, left=move.previous,
                on_finished=lambda operation: QTimer.singleShot(0, lambda: self._devices_followed(text, operation)))
        except Exception as exc:  # another capability's code: never crash the panel
            log.exception("Pushing %s to the devices failed", move.alias)
            return f"{text} Pushing to the devices did not start ({exc or type(exc).__name__}): {hint}"
        return (f"{text} Pushing {format_number(move.version)} to the devices that serve "
                f"{format_number(move.previous)}…")

    def _devices_followed(self, text: str, operation) -> None:
        summary = getattr(operation, "summary", "") or "the push to the devices ended"
        self.say(f"{text} {summary}", error=not getattr(operation, "ok", False))
        self.sig_devices_followed.emit(operation)

    def remove_version(self, version: int | str | None = None, confirm: bool = True) -> Operation | QMessageBox | None:
        """Remove the version, after the user confirms (``confirm=False``: at once)."""
        chosen = self._version(version)
        if chosen is None or self.registry is None:
            return None
        if confirm:
            box = QMessageBox(QMessageBox.Icon.Question, "Remove Model Version",
                              f"Remove model version {chosen.name} and its files ({format_size(chosen.size)})?\n\n"
                              "Its number is never given again.",
                              QMessageBox.StandardButton.Cancel, self)
            box.setObjectName("registry-confirm-remove")
            remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.buttonClicked.connect(lambda button: button is remove and self.remove_version(chosen.number, False))
            box.open()
            return box
        registry = self.registry
        return self._change("remove", f"Removing version {chosen.name}", lambda: registry.remove(chosen.number),
                            lambda report: f"Removed version {chosen.name}: {_freed(report)}.")

    def run_retention(self, keep: int | None = None, confirm: bool = True) -> Operation | None:
        """Apply retention (keep the newest ``keep``, default ``[registry] version_max``, and the
        pinned and aliased ones): first what it would remove, for the user to confirm."""
        if self.registry is None:
            return None
        registry = self.registry
        if not confirm:
            return self._change("gc", "Running retention", lambda: registry.gc(keep), _retention_text)
        return self._change("gc-plan", "Planning retention", lambda: registry.gc(keep, dry_run=True),
                            lambda report: self._confirm_retention(report, keep))

    def _confirm_retention(self, report: RetentionReport, keep: int | None) -> str:
        plan = report.plan
        if not plan.remove:
            return f"Retention has nothing to remove ({_kept_text(report, keep, self.settings)})."
        names = ", ".join(format_number(number) for number in plan.remove)
        box = QMessageBox(QMessageBox.Icon.Question, "Run Retention",
                          f"Retention removes version{'s' if len(plan.remove) > 1 else ''} {names} "
                          f"({format_size(report.removed_bytes)}; {format_size(report.freed_bytes)} of disk "
                          f"freed).\n\n{_kept_text(report, keep, self.settings).capitalize()}.",
                          QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("registry-confirm-retention")
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda button: button is remove and self.run_retention(keep, confirm=False))
        box.open()
        return f"Retention would remove {names}: confirm to go on."

    def show_alias_history(self) -> AliasHistoryDialog | None:
        if self.registry is None:
            return None
        try:
            moves = self.registry.aliases.history() if self._registry_folder_exists() else []
        except RegistryError as exc:
            self.say(str(exc), error=True)
            return None
        dialog = AliasHistoryDialog(moves, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _aliases(self) -> dict[str, int]:
        try:
            return self.registry.aliases.all() if self._registry_folder_exists() else {}
        except RegistryError as exc:
            self.say(str(exc), error=True)
            return {}

    # --- model tools --------------------------------------------------------------------------

    def model_file(self, version: int | str | None = None) -> Path | None:
        """The file of the version a model tool opens (its ONNX export, else its weights)."""
        chosen = self._version(version)
        if chosen is None or self.registry is None:
            return None
        path = file_to_open(self.registry, chosen)
        if path is None:
            self.say(f"Version {chosen.name} has none of its files on disk: "
                     + (self.problems.get(chosen.number) or ["restore them or remove the version"])[0], error=True)
        return path

    def tool_commands(self, path: Path) -> list:
        """The window's commands that open ``path`` in a model tool (as the Explorer offers them),
        then the other commands offered on a model (Verify on Device…)."""
        if self.commands is None:
            return []
        found = [command for command in self.commands.for_context("explorer", path)
                 if command.category == TOOLS_CATEGORY]
        found += [command for command in self.commands.for_context(MODELS_CONTEXT, path)
                  if command not in found]
        return found

    def open_in_tool(self, version: int | str | None = None, tool: str | None = None) -> object:
        """Open the version's model in ``tool`` (a command id such as ``modeltools.inspect`` or a
        tool name such as ``inspect``; Inspect, else the first tool that takes the file)."""
        path = self.model_file(version)
        if path is None:
            return None
        commands = self.tool_commands(path)
        if not commands:
            self.say(f"No model tool in this window opens {path.name}.", error=True)
            return None
        ids = [command.id for command in commands]
        wanted = tool if tool in ids else f"modeltools.{tool}" if tool else "modeltools.inspect"
        if wanted not in ids:
            if tool:
                self.say(f"No tool {tool!r} opens {path.name} (tools: {', '.join(ids)}).", error=True)
                return None
            wanted = ids[0]
        return self._run_command(wanted, path)

    def _run_command(self, command_id: str, path: Path) -> object:
        try:
            return self.commands.execute(command_id, path=path)
        except Exception as exc:  # another capability's code: never crash the panel
            log.exception("Command %s failed on %s", command_id, path)
            self.say(str(exc) or type(exc).__name__, error=True)
            return None

    def _fill_tools_menu(self, menu: QMenu) -> None:
        menu.clear()
        version = self.selected_version()
        path = file_to_open(self.registry, version) if version is not None and self.registry else None
        commands = self.tool_commands(path) if path is not None else []
        for command in commands:
            action = menu.addAction(command.title, lambda cid=command.id, p=path: self._run_command(cid, p))
            action.setObjectName(command.id)
            action.setEnabled(command.is_enabled())
        if not commands:
            menu.addAction("No model tool takes this version's files").setEnabled(False)

    # --- context menu -------------------------------------------------------------------------

    def context_menu(self) -> QMenu:
        """The right-click menu of the selected version; actions are named ``registry-<key>``."""
        menu = QMenu(self)
        version = self.selected_version()
        entries = [("pin", "Unpin" if version is not None and version.pinned else "Pin", self.toggle_pin),
                   ("alias", "Set Alias…", self.set_alias), ("rollback", "Roll Back Alias…", self.rollback)]
        for key, text, run in entries:
            action = menu.addAction(text, lambda run=run: run())
            action.setObjectName(f"registry-{key}")
            action.setEnabled(self.buttons[key].isEnabled())
        tools = menu.addMenu("Open in Model Tool")
        tools.setObjectName("registry-open-menu")
        tools.setEnabled(version is not None)
        self._fill_tools_menu(tools)
        menu.addSeparator()
        for key, text, run in (("remove", "Remove…", self.remove_version), ("gc", "Run Retention…", self.run_retention),
                               ("history", "Alias History…", self.show_alias_history),
                               ("refresh", "Refresh", self.refresh)):
            action = menu.addAction(text, lambda run=run: run())
            action.setObjectName(f"registry-{key}")
            action.setEnabled(self.buttons[key].isEnabled())
        return menu

    def _show_context_menu(self, position: QPoint) -> None:
        if self.table.itemAt(position) is None:
            return
        menu = self.context_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.table.viewport().mapToGlobal(position))


def _freed(report: RetentionReport) -> str:
    shared = len(report.plan.files_kept_shared)
    return (f"{format_size(report.freed_bytes)} freed" if report.freed_bytes else "no disk space freed (its files "
            "were linked from a run folder or shared)") + (f", {shared} shared file{'s' * (shared > 1)} kept"
                                                          if shared else "")


def _kept_text(report: RetentionReport, keep: int | None, settings: RegistrySettings | None) -> str:
    newest = keep if keep is not None else (settings.version_max if settings is not None else 0)
    why = "; ".join(f"{format_number(number)} {reason}" for number, reason in sorted(report.plan.why_kept.items()))
    return f"it keeps the newest {newest}" + (f" and {why}" if why else "")


def _retention_text(report: RetentionReport) -> str:
    if not report.plan.remove:
        return "Retention removed nothing."
    names = ", ".join(format_number(number) for number in report.plan.remove)
    return (f"Retention removed version{'s' if len(report.plan.remove) > 1 else ''} {names} "
            f"({len(report.plan.files_removed)} files, {format_size(report.removed_bytes)}): {_freed(report)}.")

