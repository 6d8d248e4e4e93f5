"""The Registry's commands in a project window: Models ▸ Registry shows the panel, Models ▸ Cut
Dataset Version… cuts the next dataset version, and each thing one does with a version is a
palette command too. Every command takes keyword arguments, so a
script or a test runs it without a menu (``commands.execute("registry.setAlias", version=3,
alias="production", reason="passed QA")``); without them it acts on the selected version and
asks what it needs. Rolling an alias back pushes the version it is back on to the devices that
served the one it left when the window has the device capability (``push=False``: it does not).
"""

from __future__ import annotations

CATEGORY = "Registry"


def register_commands(window, panel, show) -> list[str]:
    """Declare the commands of ``panel`` in ``window``; ``show()`` brings the panel forward."""
    add = window.commands.add

    def has_versions() -> bool:
        return bool(panel.versions)

    def shown(run):
        def run_shown(**options):
            show()
            return run(**options)
        return run_shown

    add("registry.show", "Registry", lambda: (show(), panel.refresh()), category="Models", menu="Models")
    add("registry.refresh", "Refresh Registry", panel.refresh, category=CATEGORY)
    add("registry.togglePin", "Pin or Unpin Version",
        shown(lambda version=None, pinned=None: panel.toggle_pin(version, pinned)),
        category=CATEGORY, enabled=has_versions)
    add("registry.setAlias", "Set Alias…",
        shown(lambda version=None, alias=None, reason=None: panel.set_alias(version, alias, reason)),
        category=CATEGORY, enabled=has_versions)
    add("registry.rollbackAlias", "Roll Back Alias…",
        shown(lambda alias=None, reason=None, push=True: panel.rollback(alias, reason, push)), category=CATEGORY,
        enabled=has_versions)
    add("registry.openInTool", "Open Version in Model Tool",
        shown(lambda version=None, tool=None: panel.open_in_tool(version, tool)), category=CATEGORY,
        enabled=has_versions)
    add("registry.remove", "Remove Version…",
        shown(lambda version=None, confirm=True: panel.remove_version(version, confirm)), category=CATEGORY,
        enabled=has_versions)
    add("registry.runRetention", "Run Retention…",
        shown(lambda keep=None, confirm=True: panel.run_retention(keep, confirm)), category=CATEGORY,
        enabled=has_versions)
    add("registry.aliasHistory", "Alias History", shown(panel.show_alias_history), category=CATEGORY)
    add("registry.cutDatasetVersion", "Cut Dataset Version…",
        shown(lambda fraction=None, reason=None, new_val=False: panel.cut_dataset_version(fraction, reason, new_val)),
        category=CATEGORY, menu="Models")
    add("registry.showDatasets", "Dataset Versions",
        shown(lambda: (panel.show_view("datasets"), panel.refresh())), category=CATEGORY)
    return ["registry.show", "registry.refresh", "registry.togglePin", "registry.setAlias",
            "registry.rollbackAlias", "registry.openInTool", "registry.remove", "registry.runRetention",
            "registry.aliasHistory", "registry.cutDatasetVersion", "registry.showDatasets"]
