"""Bringing a main window's docks back where the user left them, docks added late included.

A project window's own dock (the Explorer) exists when the window is built; the capabilities'
docks (Source Control, Runs, Models, ...) are added just after its first paint. Restoring docks
one by one as they come cannot rebuild tab groups (a dock restored before its tab mates exist is
split off on its own), so the whole saved state is restored again once every dock is there.

View ▸ Reset Layout brings back the layout of the window's first open, kept with the saved
layout. A window whose saved layout has none (saved before it was kept) lets the capabilities
place their docks as on a first open once, with the saved layout put aside, to learn it.
"""

from __future__ import annotations

import base64

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QTabBar, QWidget

# How long after the restore a dock's panel may still be loading and need more room than the
# user left it (see DockLayout.eventFilter).
SETTLE_SECONDS = 5.0
USER_INPUT = (QEvent.Type.MouseButtonPress, QEvent.Type.KeyPress, QEvent.Type.Wheel)


class DockLayout(QObject):
    """The saved dock layout of ``window``: restored at once for the docks that exist, and in
    full by ``restore_all`` when the late docks are in."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self._window = window
        self._saved: QByteArray | None = None
        self._saved_fronts: list[str] = []
        self.restored = False
        """Whether ``restore_all`` has run: a dock added after it is restored on its own."""
        self._new_docks: list[tuple[QDockWidget, int | None]] = []
        self._new_tabs: list[tuple[QDockWidget, QDockWidget]] = []
        self._new_fronts: list[str] = []
        self._minimums: list = []
        self._settling = False
        self._first_open_early: QByteArray | None = None
        self.first_open_state: QByteArray | None = None
        """The layout a first open gives, every dock of the capabilities in (None before)."""
        self._first_open_fronts: list[str] = []

    # --- saving -----------------------------------------------------------------------------

    def state_b64(self) -> str:
        """``QMainWindow.saveState()`` as base64 text."""
        return base64.b64encode(bytes(self._window.saveState().data())).decode("ascii")

    def front_docks(self) -> list[str]:
        """The object names of the docks whose tabs are in front in their tab groups."""
        window = self._window
        tabbed = [dock for dock in window.findChildren(QDockWidget) if window.tabifiedDockWidgets(dock)]
        front: list[str] = []
        for bar in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if bar.isVisibleTo(window) and bar.currentIndex() >= 0:
                title = bar.tabText(bar.currentIndex())
                front += [dock.objectName() for dock in tabbed
                          if dock.windowTitle() == title and dock.objectName() not in front][:1]
        return front

    # --- restoring --------------------------------------------------------------------------

    def load(self, state_b64: str | None, front_docks: list[str], first_open_b64: str | None = None,
             first_open_fronts: list[str] = ()) -> None:
        """Take the saved layout and restore it for the docks there are now; ``first_open_b64``
        and ``first_open_fronts`` are the first open's layout, kept with it."""
        self._saved_fronts = list(front_docks)
        self._first_open_early = self._window.saveState()
        if first_open_b64:
            try:
                self.first_open_state = QByteArray(base64.b64decode(first_open_b64))
                self._first_open_fronts = list(first_open_fronts)
            except ValueError:
                pass  # learnt again (see the module)
        if not state_b64:
            return
        try:
            self._saved = QByteArray(base64.b64decode(state_b64))
        except ValueError:
            return  # a damaged file: the default layout
        self._window.restoreState(self._saved)

    def first_open_b64(self) -> tuple[str | None, list[str]]:
        """The first open's layout as base64 text and its front docks, to keep."""
        if self.first_open_state is None:
            return None, []
        return base64.b64encode(bytes(self.first_open_state.data())).decode("ascii"), list(self._first_open_fronts)

    def place_as_on_first_open(self) -> None:
        """When the first open's layout is not known: put the docks there are now back where a
        first open has them, for the capabilities to add theirs as on a first open
        (``restore_all`` learns that layout, then brings the saved one back)."""
        if self._saved is not None and self.first_open_state is None and self._first_open_early is not None:
            self._window.restoreState(self._first_open_early)

    def reset(self) -> None:
        """Bring back the layout of a first open (View ▸ Reset Layout)."""
        if self.first_open_state is None:
            return
        self._stop_settling()
        for dock in self._window.findChildren(QDockWidget):
            dock.setFloating(False)
        self._window.restoreState(self.first_open_state)
        for name in self._first_open_fronts:
            dock = self._window.findChild(QDockWidget, name)
            if dock is not None:
                dock.raise_()

    def restore_all(self) -> None:
        """Restore the whole saved layout, now that every dock exists. A dock the saved layout
        does not know keeps the place its capability gave it: its area, or its place among the
        tabs of a known dock."""
        self.restored = True
        window = self._window
        if self.first_open_state is None:
            window.layout().activate()  # the places and sizes the capabilities gave their docks
            self.first_open_state = window.saveState()
            self._first_open_fronts = [dock.objectName() for dock in window.findChildren(QDockWidget)
                                       if window.tabifiedDockWidgets(dock) and self._front_of(
                                           [dock, *window.tabifiedDockWidgets(dock)]) is dock]
        if self._saved is None:
            return
        window.layout().activate()  # the places and sizes the capabilities gave their docks
        known = bytes(self._saved.data())

        def is_known(dock: QDockWidget) -> bool:
            return dock.objectName().encode("utf-16-be") in known

        new = [dock for dock in window.findChildren(QDockWidget) if not is_known(dock)]
        self._new_docks = [(dock, self._height_for_new(dock)) for dock in new]
        # Restoring puts a dock the saved layout does not know at the end of its area, out of
        # the tab group its capability put it in: it joins that group again afterwards, with
        # the tab its capability brought forward still in front.
        self._new_tabs = [(mates[0], dock) for dock in new
                          if (mates := [m for m in window.tabifiedDockWidgets(dock) if is_known(m)])]
        # When the group's tab bar is not made yet, the known dock is the front: a capability
        # puts its new dock behind the one the user knows.
        self._new_fronts = [(self._front_of([dock, *window.tabifiedDockWidgets(dock)]) or known).objectName()
                            for known, dock in self._new_tabs]
        self._settling = True
        self._window.installEventFilter(self)
        QApplication.instance().installEventFilter(self)
        QTimer.singleShot(int(SETTLE_SECONDS * 1000), self, self._stop_settling)
        self._apply()

    def _apply(self) -> None:
        window = self._window
        window.restoreState(self._saved)
        for known, dock in self._new_tabs:
            if not known.isHidden() and not dock.isHidden():
                window.tabifyDockWidget(known, dock)
        for dock, height in self._new_docks:
            # Qt puts a dock the saved layout does not know at the end of its area with the
            # least room it can have.
            if height is not None and not dock.isHidden():
                window.resizeDocks([dock], [height], Qt.Orientation.Vertical)
        self._minimums = self._dock_minimums()
        # Tabifying a new dock brings it in front of its group: the saved fronts are raised at
        # once, so the layout is never seen with the new dock in front (this runs again while
        # the docks settle, between any two events). Restoring also hides and shows each dock,
        # and a dock may bring itself forward on that after a zero timer (Source Control
        # does): the saved front tabs are raised again after it.
        self._raise_fronts()
        QTimer.singleShot(0, self, self._raise_fronts)

    def _raise_fronts(self) -> None:
        for name in self._new_fronts + self._saved_fronts:
            dock = self._window.findChild(QDockWidget, name)
            if dock is not None:
                dock.raise_()

    def _front_of(self, group: list[QDockWidget]) -> QDockWidget | None:
        """The dock of a tab group whose tab is current, also before its tab bar is shown (as
        it is not yet when the capabilities have just made the group)."""
        titles = sorted(dock.windowTitle() for dock in group)
        for bar in self._window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if bar.currentIndex() >= 0 and sorted(bar.tabText(i) for i in range(bar.count())) == titles:
                current = bar.tabText(bar.currentIndex())
                return next(dock for dock in group if dock.windowTitle() == current)
        return None

    def _height_for_new(self, dock: QDockWidget) -> int | None:
        """The height a dock the saved layout does not know keeps in a side area (the left or
        right one, where docks are stacked): what its capability gave it, and at least a third
        of the area, as it has on a first open. None for a dock in the top or bottom area."""
        if self._window.dockWidgetArea(dock) not in (Qt.DockWidgetArea.LeftDockWidgetArea,
                                                     Qt.DockWidgetArea.RightDockWidgetArea):
            return None
        return max(dock.height(), self._window.centralWidget().height() // 3)

    def _dock_minimums(self) -> list:
        return [(dock.objectName(), dock.minimumSize().toTuple(), dock.minimumSizeHint().toTuple())
                for dock in self._window.findChildren(QDockWidget)]

    def _stop_settling(self) -> None:
        if not self._settling:
            return
        self._settling = False
        self._window.removeEventFilter(self)
        QApplication.instance().removeEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """While the docks settle: a dock whose minimum size changed gets the saved layout
        applied again, until the user does anything in the window.

        A panel may need more room while it loads than once it has (Source Control does until
        Git answers), and Qt then gives its dock more than the user left it."""
        kind = event.type()
        if kind in USER_INPUT:
            if isinstance(watched, QWidget) and watched.window() is self._window:
                self._stop_settling()
        elif kind == QEvent.Type.LayoutRequest and watched is self._window:
            if self._dock_minimums() != self._minimums:
                self._apply()
        return False


def toggle_dock(dock: QDockWidget) -> None:
    """Show a hidden dock, bring forward one behind another's tab, hide one in view (View ▸
    Toggle ...): the dock's ``toggleViewAction``, except that a dock the user cannot see for a
    tab in front of it comes forward instead of going away, and a dock shown comes in front."""
    # A dock behind a tab may still be "visible" to Qt (it is on X11: only covered); what the
    # user sees of it is its visible region.
    behind_a_tab = not dock.isHidden() and (not dock.isVisible() or dock.visibleRegion().isEmpty())
    if behind_a_tab and not dock.isFloating():
        dock.raise_()
        return
    dock.toggleViewAction().trigger()
    if not dock.isHidden():
        dock.raise_()
