"""The training capability: runs of a project's training script on this machine, their folders,
metrics and history (Qt-free), the ``workbench train`` / ``workbench runs`` commands, and the
runs panel in ``workbench.training.widgets``.

Names are imported from their modules on first use (PEP 562): the run supervisor imports this
package on every run start, and the window imports it before its first run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "TrainingError": "errors",
    "RunInfo": "run_info",
    "ACTIVE_STATES": "run_info",
    "END_STATES": "run_info",
    "STATES": "run_info",
    "RunService": "service",
    "MetricsTail": "metrics",
    "read_metrics": "metrics",
    "parse_metric_line": "metrics",
    "final_metrics": "metrics",
    "RunFolder": "run_folder",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.training.errors import TrainingError
    from workbench.training.metrics import MetricsTail, final_metrics, parse_metric_line, read_metrics
    from workbench.training.run_folder import RunFolder
    from workbench.training.run_info import ACTIVE_STATES, END_STATES, STATES, RunInfo
    from workbench.training.service import RunService
