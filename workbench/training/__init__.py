"""The training capability: runs of a project's training script, their folders, metrics and
history (Qt-free), the ``RunBackend`` protocol with the local backend (other backends, such as
the cluster's, are registered by plugins), the ``workbench train`` / ``workbench runs``
commands, and the runs panel in ``workbench.training.widgets``.

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
    "RunBackend": "backends",
    "RunProgress": "backends",
    "backend_for_target": "backends",
    "RunRecorder": "run_end",
    "keep_metrics_up_to": "metrics",
    "find_hparams_files": "hparams_files",
    "parse_overrides": "hparams_files",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.training.backends import RunBackend, RunProgress, backend_for_target
    from workbench.training.errors import TrainingError
    from workbench.training.hparams_files import find_hparams_files, parse_overrides
    from workbench.training.metrics import (
        MetricsTail,
        final_metrics,
        keep_metrics_up_to,
        parse_metric_line,
        read_metrics,
    )
    from workbench.training.run_end import RunRecorder
    from workbench.training.run_folder import RunFolder
    from workbench.training.run_info import ACTIVE_STATES, END_STATES, STATES, RunInfo
    from workbench.training.service import RunService
