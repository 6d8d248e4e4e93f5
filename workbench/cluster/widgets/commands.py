"""The cluster commands: Run ▸ Cluster Profiles…, Run ▸ Run on Cluster… (Shift+F5) and
Run ▸ Pull Products, in the menu and the palette.

Every command takes keyword arguments, so a script or a test runs it without a dialog where it
can (``commands.execute("cluster.pullProducts", run_id=…)``).
"""

from __future__ import annotations

from workbench.cluster.widgets.runs_extension import PULL_COMMAND, RunsExtension
from workbench.cluster.widgets.session import ClusterSession
from workbench.qt.tasks import Operation

PROFILES_COMMAND = "cluster.profiles"
RUN_COMMAND = "cluster.runOnCluster"


class ClusterCommands:
    """Declares the cluster commands of one window and opens their dialogs."""

    def __init__(self, window, session: ClusterSession, panel=None, runs: RunsExtension | None = None):
        self.window = window
        self.session = session
        self.panel = panel
        self.runs = runs
        self.profiles_dialog = None
        """The Cluster Profiles dialog while it is open."""
        self.run_dialog = None
        """The Run on Cluster dialog while it is open."""

    def register(self) -> list[str]:
        add = self.window.commands.add
        add(PROFILES_COMMAND, "Cluster Profiles…", self.show_profiles, category="Cluster", menu="Run")
        add(RUN_COMMAND, "Run on Cluster…", self.run_on_cluster, category="Cluster", menu="Run",
            shortcut="Shift+F5")
        add(PULL_COMMAND, "Pull Products", self.pull_products, category="Cluster", menu="Run",
            enabled=lambda: self._target() is not None)
        return [PROFILES_COMMAND, RUN_COMMAND, PULL_COMMAND]

    # --- dialogs ------------------------------------------------------------------------------

    def show_profiles(self, select: str = ""):
        """Open the Cluster Profiles dialog (on ``select`` when given); returns it."""
        from workbench.cluster.widgets.profiles_dialog import ProfilesDialog

        if self.profiles_dialog is not None:
            self.profiles_dialog.raise_()
            self.profiles_dialog.activateWindow()
            return self.profiles_dialog
        parent = self.run_dialog if self.run_dialog is not None else self.window
        dialog = ProfilesDialog(self.session, select, parent)
        self.profiles_dialog = dialog
        dialog.finished.connect(lambda _result: setattr(self, "profiles_dialog", None))
        dialog.open()
        return dialog

    def run_on_cluster(self):
        """Open the Run on Cluster dialog, after saving the open files so the run ships what is
        on screen; returns it."""
        from workbench.cluster.widgets.run_dialog import RunOnClusterDialog

        if self.run_dialog is not None:
            self.run_dialog.raise_()
            return self.run_dialog
        if "file.saveAll" in self.window.commands:
            self.window.commands.execute("file.saveAll")
        dialog = RunOnClusterDialog(self.session, self.show_profiles, self.window)
        self.run_dialog = dialog
        dialog.sig_run_started.connect(self._on_run_started)
        dialog.finished.connect(lambda _result: setattr(self, "run_dialog", None))
        dialog.open()
        return dialog

    def _on_run_started(self, info) -> None:
        if self.panel is not None:
            self.panel.select_runs([info.id])
            self.panel.refresh()
        if "training.showRuns" in self.window.commands:
            self.window.commands.execute("training.showRuns")

    # --- products -----------------------------------------------------------------------------

    def _target(self, run_id: str | None = None):
        """The cluster run Pull Products acts on: ``run_id``, else the one selected run."""
        if self.panel is None:
            return None
        if run_id is not None:
            row = self.panel.session.row(run_id)
        else:
            rows = self.panel.selected_rows()
            row = rows[0] if len(rows) == 1 else None
        if row is None or not row.info.is_cluster or not row.info.remote_run_dir:
            return None
        return row

    def pull_products(self, run_id: str | None = None) -> Operation | None:
        """Fetch the run's checkpoints and outputs from the cluster now (only what is new)."""
        row = self._target(run_id)
        if row is None:
            self.window.show_error("Select a run that trained on a cluster in the Runs panel first.")
            return None
        operation = Operation("pull", "Cluster")
        info = row.info

        def done(report) -> None:
            operation.result, operation.finished = report, True
            if self.panel is not None:
                self.panel.refresh()
            if self.runs is not None and report.fetched:
                self.runs.show_products(info, report.outputs or report.fetched)
            elif not report.fetched:
                self.window.statusBar().showMessage(f"Run {info.id}: nothing new on the cluster to pull.", 8000)

        def failed(error) -> None:
            operation.error, operation.finished = error, True
            self.window.show_error(str(error), getattr(error, "details", ""))

        self.session.pull(info.id, done, failed)
        return operation


def install_commands(window, session: ClusterSession, panel=None, runs: RunsExtension | None = None) -> ClusterCommands:
    commands = ClusterCommands(window, session, panel, runs)
    commands.register()
    return commands
