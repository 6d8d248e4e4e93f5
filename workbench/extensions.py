"""Plugins: Python packages that add model tools, model runtimes and run backends through the
entry-point group ``workbench.plugins``. Each entry point names a function taking an
``Extensions`` object:

    [project.entry-points."workbench.plugins"]
    mnn = "workbench_mnn:register"

    def register(extensions):
        extensions.add_model_tool(SPEC)
        extensions.add_model_runtime((".mnn",), "workbench_mnn.runtime:open_mnn_model")
        extensions.add_run_backend("k8s", "workbench_k8s.backend:KubernetesBackend")

Workbench's own cluster backends (Slurm, plain SSH hosts) register through this same group.

Workbench never imports a plugin by name; a plugin that fails to load is logged and listed in
``errors``, and the rest of Workbench goes on without it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "workbench.plugins"


@dataclass
class Extensions:
    """What the plugins added. ``model_runtimes`` maps a file suffix to ``"module:function"``,
    a function ``(path, threads) -> ModelSession`` (see workbench.modeltools.runtimes).
    ``run_backends`` maps a backend's name (``RunInfo.backend``) to ``"module:factory"``, a
    callable taking no arguments that returns a ``workbench.training.backends.RunBackend``."""

    model_tools: list[Any] = field(default_factory=list)
    model_runtimes: dict[str, str] = field(default_factory=dict)
    run_backends: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    _current_plugin: str = ""

    def add_model_tool(self, spec: Any) -> None:
        from dataclasses import replace

        self.model_tools.append(replace(spec, plugin=spec.plugin or self._current_plugin))

    def add_model_runtime(self, suffixes: tuple[str, ...], opener: str) -> None:
        for suffix in suffixes:
            self.model_runtimes[suffix.lower()] = opener

    def add_run_backend(self, name: str, factory: str) -> None:
        """Runs recorded with backend ``name`` train through the backend ``factory()`` makes
        (``"module:callable"``, imported when a run needs it)."""
        self.run_backends[name] = factory


_loaded: Extensions | None = None


def load_extensions(reload: bool = False) -> Extensions:
    """Every installed plugin registered, once per process."""
    global _loaded
    if _loaded is not None and not reload:
        return _loaded
    from importlib.metadata import entry_points

    extensions = Extensions()
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        extensions._current_plugin = entry.name
        try:
            entry.load()(extensions)
        except Exception as exc:  # a broken plugin must not take Workbench down
            log.exception("The plugin %s could not load", entry.name)
            extensions.errors[entry.name] = f"{type(exc).__name__}: {exc}"
    extensions._current_plugin = ""
    _loaded = extensions
    return extensions


def load_object(reference: str) -> Any:
    """The object a ``"module:name"`` reference names, its module imported now."""
    from importlib import import_module

    module_name, _, name = reference.partition(":")
    return getattr(import_module(module_name), name)
