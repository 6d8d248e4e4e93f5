"""The capabilities whose panels and commands join every project window.

Each entry is "module:function"; the function takes the window (its public surface:
``project``, ``commands``, ``tasks``, ``add_dock``, ``add_status_widget``, ``add_tab``,
``open_file``, ``diagnostics``, ``completions``, ``hovers``, ``on_event``, ``show_error``, and
``request_hub(method, params, on_result, on_error)`` to ask the hub, e.g. ``hub.open_tool``) and
installs the capability's parts. They are installed just after the window's first paint, so
none of them delays it.
"""

from __future__ import annotations

import importlib
import logging

log = logging.getLogger(__name__)

# In this order: the cluster's install extends the Runs panel that training's adds; the
# Pipeline's dock joins the Runs and Registry tabs.
BUILT_IN: tuple[str, ...] = ("workbench.git.widgets:install", "workbench.training.widgets:install",
                             "workbench.cluster.widgets:install", "workbench.modeltools.widgets:install",
                             "workbench.device.widgets:install", "workbench.console.widgets:install",
                             "workbench.lsp.widgets:install", "workbench.debug.widgets:install",
                             "workbench.search.widgets:install", "workbench.adopt.widgets:install",
                             "workbench.registry.widgets:install", "workbench.pipeline.widgets:install")


def install_capabilities(window, entries: tuple[str, ...] | None = None) -> list[str]:
    """Install each capability (BUILT_IN by default); one that fails is logged and shown, and
    the others go on."""
    installed = []
    for entry in BUILT_IN if entries is None else entries:
        module_name, _, function_name = entry.partition(":")
        try:
            getattr(importlib.import_module(module_name), function_name)(window)
        except Exception as exc:  # a broken capability must not take the window down
            log.exception("Could not install %s", entry)
            window.show_error(f"{module_name} could not start: {exc}")
            continue
        installed.append(entry)
    return installed
