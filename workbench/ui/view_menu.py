"""View ▸ Reset Layout, and the View menu's groups: the window's own commands, one toggle per
dock (checked while the dock is shown), then Reset Layout."""

from __future__ import annotations

VIEW_RESET_LAYOUT = "view.resetLayout"


def install_view_menu(window) -> None:
    """Add Reset Layout to the project ``window`` (once its capabilities' docks are in): the
    docks go back where a first open puts them, and the window keeps that layout."""

    def reset_layout() -> None:
        window.dock_layout.reset()
        window.save_state()

    window.commands.add(VIEW_RESET_LAYOUT, "Reset Layout", reset_layout, category="View", menu="View")
    window.menus.add_separator_before("view.toggle.explorer")
    window.menus.add_separator_before(VIEW_RESET_LAYOUT)
