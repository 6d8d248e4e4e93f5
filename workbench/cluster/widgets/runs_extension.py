"""Cluster runs in the Runs panel: the Cluster, Job and Scheduler columns, a Cluster section in a
run's details, the Pull Products button, and the notice when a run's model arrives.

The panel belongs to the training capability; it offers ``table.add_column``,
``details.add_section``, ``add_button`` and ``add_banner`` for this, and its session's
``sig_runs_changed`` says when the list changed. Nothing here reads a file on the GUI thread:
what a row shows comes from its ``RunInfo``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

from workbench.cluster.backends import resources_text
from workbench.cluster.widgets.product_notice import ProductNotice, model_among
from workbench.training import run_text

PULL_COMMAND = "cluster.pullProducts"


# --- what a cluster run shows -----------------------------------------------------------------

def scheduler_text(info) -> str:
    """The scheduler's state and reason, as "pending (Resources)", or "completed (stopped on
    request)" for a stop asked for; "" for a local run."""
    return run_text.scheduler_text(info)


def cluster_text(info) -> str:
    return info.cluster if getattr(info, "is_cluster", False) else ""


def job_text(info) -> str:
    return str(info.job_id or "") if getattr(info, "is_cluster", False) else ""


def cluster_tooltip(info) -> str:
    if not getattr(info, "is_cluster", False):
        return ""
    kind = "Slurm" if info.backend == "slurm" else "a plain SSH host"
    lines = [f"Trains on {info.cluster} ({kind})"]
    if info.remote_run_dir:
        lines.append(f"There: {info.remote_run_dir}")
    return "\n".join(lines)


def cluster_rows(info) -> list[tuple[str, object]]:
    """The Details tab's "Cluster" section of a run (none for a local run)."""
    if not getattr(info, "is_cluster", False):
        return []
    rows: list[tuple[str, object]] = [
        ("Profile", info.cluster),
        ("Scheduler", "Slurm" if info.backend == "slurm" else "none (plain SSH host)"),
        ("Job", info.job_id or "not submitted yet"),
        ("State there", scheduler_text(info)),
        ("Folder there", info.remote_run_dir),
        ("Resources", resources_text(info.resources)),
    ]
    if info.products:
        rows.append(("Products", "  ".join(info.products)))
    if info.pulled_at:
        rows.append(("Pulled", datetime.fromtimestamp(info.pulled_at).strftime("%Y-%m-%d %H:%M:%S")))
    return rows


# --- the panel --------------------------------------------------------------------------------

def product_model(products: list[str]) -> str | None:
    """The model among a run's fetched ``products`` (run-folder-relative paths) worth a "Model
    produced" notice: one of its outputs; a checkpoint is no product."""
    return model_among([path for path in products if not path.startswith("checkpoints/")])


class RunsExtension:
    """Joins the cluster's parts to one window's Runs panel and watches for arriving models."""

    def __init__(self, window, panel, announce: Callable[[str], None] | None = None):
        self.window = window
        self.panel = panel
        self.announce = announce
        """``announce(absolute path)``: a model file was produced (tells other parts of Workbench)."""
        self.notice = ProductNotice(panel)
        self._products: dict[str, tuple[str, ...]] | None = None

        table = panel.table
        table.add_column("Cluster", cluster_text, cluster_tooltip, width=80)
        table.add_column("Job", job_text, cluster_tooltip, width=70)
        table.add_column("Scheduler", scheduler_text, lambda info: run_text.problem_text(info) or scheduler_text(info),
                         width=130)
        panel.details.add_section("Cluster", cluster_rows)
        panel.add_banner(self.notice)
        panel.session.sig_runs_changed.connect(self.on_runs_changed)

    def add_pull_button(self) -> None:
        self.panel.add_button(PULL_COMMAND, "Pull Products")

    def on_runs_changed(self, rows) -> None:
        """Tell about a cluster run whose model has arrived since the last listing (runs that
        already had their products when the window opened are not news)."""
        seen = {row.id: tuple(row.info.products or ()) for row in rows if row.info.is_cluster}
        before, self._products = self._products, seen
        if before is None:
            return
        for row in rows:
            info = row.info
            if not info.is_cluster or info.is_active:
                continue
            new = [path for path in seen[info.id] if path not in before.get(info.id, ())]
            if new:
                self.show_products(info, new)
                return

    def show_products(self, info, products: list[str]) -> None:
        """The notice for ``products`` (run-folder-relative paths) of run ``info``."""
        model = product_model(products)
        if model is not None:
            path = Path(info.run_dir) / model
            self.notice.show_notice(f"Model produced: {self._shown(path)}", str(path))
            if self.announce is not None:
                self.announce(str(path))
        else:
            self.notice.show_notice(f"Fetched {len(products)} file(s) of run {info.id} into "
                                    f"{self._shown(Path(info.run_dir))}", str(Path(info.run_dir) / products[0]))

    def _shown(self, path: Path) -> str:
        """``path`` relative to the project, the way the user sees it in the Explorer."""
        try:
            return path.relative_to(Path(self.window.project.root)).as_posix()
        except ValueError:
            return str(path)
