"""The adopt capability: bringing a folder of one's own training code into Workbench. Finds
its training entry points, reads the script's hyper-parameters (argparse flags, a Hydra config,
a ``.hparams`` file) and writes the ``workbench.toml`` that lets training run it
(``workbench init``, and the window's Set Up Training… banner in ``workbench.adopt.widgets``).

Qt-free. Training imports it (``script_parameters`` at Train time); it imports no training.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "AdoptError": "errors",
    "EntryPoint": "entry_points",
    "clear_choice": "entry_points",
    "entry_point_of": "entry_points",
    "find_entry_points": "entry_points",
    "ScriptParameter": "parameter",
    "ParameterReading": "parameters",
    "PARAMETER_STYLES": "parameters",
    "project_python": "parameters",
    "read_parameters": "parameters",
    "script_parameters": "parameters",
    "Adoption": "project_setup",
    "SeveralEntryPoints": "project_setup",
    "plan_adoption": "project_setup",
    "write_project_file": "project_setup",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.adopt.entry_points import EntryPoint, clear_choice, entry_point_of, find_entry_points
    from workbench.adopt.errors import AdoptError
    from workbench.adopt.parameter import ScriptParameter
    from workbench.adopt.parameters import (
        PARAMETER_STYLES,
        ParameterReading,
        project_python,
        read_parameters,
        script_parameters,
    )
    from workbench.adopt.project_setup import Adoption, SeveralEntryPoints, plan_adoption, write_project_file
