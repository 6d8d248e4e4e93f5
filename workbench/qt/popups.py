"""Popups over a window's top edge (the command palette, Quick Open) that are as tall as what
they list, as VS Code's are: one match makes a short popup, not a tall empty one."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QWidget


def fit_to_rows(popup: QWidget, view: QAbstractItemView, rows: int, max_view_height: int) -> None:
    """Size ``view`` to its ``rows`` (at most ``max_view_height``, then it scrolls) and
    ``popup`` to what its layout then needs; a hidden view (a message shown instead) takes no
    room."""
    if rows and view.isVisibleTo(popup):
        wanted = rows * max(1, view.sizeHintForRow(0)) + 2 * view.frameWidth()
        view.setFixedHeight(min(wanted, max_view_height))
    popup.layout().activate()
    popup.resize(popup.width(), popup.layout().sizeHint().height())
