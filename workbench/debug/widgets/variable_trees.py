"""The Debug dock's trees: the call stack by thread, the variables of the selected frame, and
the watch expressions. Children are asked of the adapter only when an item is expanded."""

from __future__ import annotations

import itertools

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QGuiApplication
from PySide6.QtWidgets import QHeaderView, QInputDialog, QMenu, QTreeWidget, QTreeWidgetItem, QWidget

from workbench.debug.model import StackFrame, Variable
from workbench.debug.widgets.controller import DebugController

VARIABLE_ROLE = Qt.ItemDataRole.UserRole
FRAME_ROLE = Qt.ItemDataRole.UserRole + 1
LOADED_ROLE = Qt.ItemDataRole.UserRole + 2
PLACEHOLDER = "…"
ERROR_GREY = "#8a8a8a"
SUMMARY_BLUE = "#1a5fb4"


class StackTree(QTreeWidget):
    """Threads, each with its frames (the stopped thread's shown at once, the others when
    expanded); choosing a frame selects it in the controller."""

    def __init__(self, controller: DebugController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setHeaderLabels(["Call Stack"])
        self.setRootIsDecorated(True)
        self.itemExpanded.connect(self._on_expanded)
        self.currentItemChanged.connect(self._on_current_changed)
        controller.sig_stopped.connect(self.show_stop)
        controller.sig_frame_selected.connect(self.select_frame)
        controller.sig_state_changed.connect(self._on_state)
        self._showing = False

    def show_stop(self, event) -> None:
        self._showing = True
        self.clear()
        for thread in event.threads or ():
            item = QTreeWidgetItem([thread.name + ("  (stopped)" if thread.id == event.thread_id else "")])
            item.setData(0, VARIABLE_ROLE, thread.id)
            self.addTopLevelItem(item)
            if thread.id == event.thread_id:
                self._add_frames(item, list(event.frames))
                item.setExpanded(True)
            else:
                item.addChild(QTreeWidgetItem([PLACEHOLDER]))
        self._showing = False
        self.select_frame(self.controller.current_frame)

    def select_frame(self, frame: StackFrame | None) -> None:
        """Mark ``frame``'s row (without selecting it again in the controller)."""
        if frame is None:
            return
        for index in range(self.topLevelItemCount()):
            thread = self.topLevelItem(index)
            for child in range(thread.childCount()):
                item = thread.child(child)
                if item.data(0, FRAME_ROLE) == frame:
                    self._showing = True
                    self.setCurrentItem(item)
                    self._showing = False
                    return

    def _add_frames(self, parent: QTreeWidgetItem, frames: list[StackFrame]) -> None:
        parent.takeChildren()
        for frame in frames:
            item = QTreeWidgetItem([frame.location()])
            item.setData(0, FRAME_ROLE, frame)
            item.setToolTip(0, f"{frame.path or frame.name}:{frame.line}")
            if frame.path is None:
                item.setForeground(0, QBrush(QColor(ERROR_GREY)))
            parent.addChild(item)
        parent.setData(0, LOADED_ROLE, True)

    def _on_expanded(self, item: QTreeWidgetItem) -> None:
        if item.parent() is not None or item.data(0, LOADED_ROLE) or self.controller.session is None:
            return
        self.controller.call(self.controller.session.stack, item.data(0, VARIABLE_ROLE),
                             on_done=lambda frames, i=item: self._add_frames(i, frames))

    def _on_current_changed(self, current: QTreeWidgetItem | None, _previous) -> None:
        if self._showing or current is None:
            return
        frame = current.data(0, FRAME_ROLE)
        if isinstance(frame, StackFrame):
            self.controller.select_frame(frame)

    def _on_state(self, state: str) -> None:
        if state != "stopped":
            self.clear()


class _LazyVariableTree(QTreeWidget):
    """Rows of ``Variable``s whose children load when the row is expanded."""

    sig_show_values = Signal(str, str)
    """Show all the values of an array (title, text)."""

    def __init__(self, controller: DebugController, headers: list[str], parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setHeaderLabels(headers)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.setColumnWidth(0, 150)
        self.setColumnWidth(2, 110)
        self.setUniformRowHeights(True)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._on_menu)
        self.itemExpanded.connect(self._on_expanded)
        self._generation = itertools.count(1)
        self.generation = 0

    def frame_id(self) -> int | None:
        frame = self.controller.current_frame
        return frame.id if frame is not None else None

    def fill_item(self, item: QTreeWidgetItem, variable: Variable) -> None:
        item.setText(0, variable.name)
        item.setText(1, variable.display_value())
        item.setText(2, variable.type)
        item.setData(0, VARIABLE_ROLE, variable)
        tip = variable.value if variable.summary is None else f"{variable.display_value()}\n\n{variable.value}"
        item.setToolTip(1, tip[:4000])
        if variable.summary is not None and not isinstance(variable.summary, str):
            item.setForeground(1, QBrush(QColor(SUMMARY_BLUE)))
        item.takeChildren()
        item.setData(0, LOADED_ROLE, False)
        if variable.expandable:
            item.addChild(QTreeWidgetItem([PLACEHOLDER]))

    def _on_expanded(self, item: QTreeWidgetItem) -> None:
        variable = item.data(0, VARIABLE_ROLE)
        if not isinstance(variable, Variable) or item.data(0, LOADED_ROLE) or self.controller.session is None:
            return
        item.setData(0, LOADED_ROLE, True)
        generation = self.generation
        self.controller.call(self.controller.session.variables, variable.reference, self.frame_id(),
                             on_done=lambda children: self._add_children(item, children, generation),
                             on_error=lambda exc: self._child_error(item, exc, generation))

    def _add_children(self, item: QTreeWidgetItem, children: list[Variable], generation: int) -> None:
        if generation != self.generation:
            return
        item.takeChildren()
        for child in children:
            row = QTreeWidgetItem()
            item.addChild(row)
            self.fill_item(row, child)

    def _child_error(self, item: QTreeWidgetItem, exc: Exception, generation: int) -> None:
        if generation == self.generation:
            item.takeChildren()
            item.addChild(QTreeWidgetItem(["", str(exc)]))

    def _on_menu(self, point) -> None:
        menu = self.menu_for(self.itemAt(point))
        if not menu.isEmpty():
            menu.exec(self.viewport().mapToGlobal(point))

    def menu_for(self, item: QTreeWidgetItem | None) -> QMenu:
        """The context menu of ``item`` (a row, or None for the empty space)."""
        menu = QMenu(self)
        variable = item.data(0, VARIABLE_ROLE) if item is not None else None
        if isinstance(variable, Variable) and (variable.value or variable.summary is not None):  # not a scope
            if variable.is_array and variable.evaluate_name:
                menu.addAction("Show Values", lambda: self.show_values(variable))
            if variable.evaluate_name:
                menu.addAction("Add to Watch", lambda: self.controller.add_watch(variable.evaluate_name))
            menu.addAction("Copy Value", lambda: QGuiApplication.clipboard().setText(variable.value))
        return menu

    def show_values(self, variable: Variable) -> None:
        """Ask the program for all of ``variable``'s values; they go to ``sig_show_values``."""
        frame = self.frame_id()
        if frame is None or self.controller.session is None:
            return
        self.controller.call(self.controller.session.values_text, variable.evaluate_name, frame,
                             on_done=lambda text: self.sig_show_values.emit(variable.evaluate_name, text))


class VariablesTree(_LazyVariableTree):
    """The scopes of the selected frame (Locals open, the others closed) and their variables."""

    def __init__(self, controller: DebugController, parent: QWidget | None = None):
        super().__init__(controller, ["Name", "Value", "Type"], parent)
        controller.sig_frame_selected.connect(self.show_frame)

    def show_frame(self, frame: StackFrame | None) -> None:
        self.generation = next(self._generation)
        self.clear()
        if frame is None or self.controller.session is None:
            return
        generation = self.generation
        self.controller.call(self.controller.session.scopes, frame.id,
                             on_done=lambda scopes: self._add_scopes(scopes, generation))

    def _add_scopes(self, scopes, generation: int) -> None:
        if generation != self.generation:
            return
        for scope in scopes:
            item = QTreeWidgetItem([scope.name])
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setData(0, VARIABLE_ROLE, Variable(scope.name, "", reference=scope.reference))
            item.addChild(QTreeWidgetItem([PLACEHOLDER]))
            self.addTopLevelItem(item)
            if not scope.expensive and scope.name.lower().startswith("locals"):
                item.setExpanded(True)

    def loaded_names(self) -> dict[str, Variable]:
        """The variables listed under the first scope (for tests and screenshots)."""
        if not self.topLevelItemCount():
            return {}
        scope = self.topLevelItem(0)
        found = {}
        for index in range(scope.childCount()):
            variable = scope.child(index).data(0, VARIABLE_ROLE)
            if isinstance(variable, Variable):
                found[variable.name] = variable
        return found


class WatchTree(_LazyVariableTree):
    """The watch expressions, evaluated in the selected frame whenever it changes."""

    def __init__(self, controller: DebugController, parent: QWidget | None = None):
        super().__init__(controller, ["Expression", "Value", "Type"], parent)
        controller.sig_frame_selected.connect(self.refresh)
        controller.sig_watches_changed.connect(self.refresh)
        self.refresh()

    def refresh(self, *_args) -> None:
        self.generation = next(self._generation)
        self.clear()
        frame = self.frame_id()
        generation = self.generation
        for expression in self.controller.state.watches:
            item = QTreeWidgetItem([expression, "" if frame is not None else "(not stopped)"])
            item.setData(0, VARIABLE_ROLE, Variable(expression, "", evaluate_name=expression))
            self.addTopLevelItem(item)
            if frame is not None and self.controller.session is not None:
                self.controller.call(self.controller.session.evaluate, expression, frame, "watch",
                                     on_done=lambda result, i=item: self._show(i, result.variable, generation),
                                     on_error=lambda exc, i=item: self._failed(i, exc, generation))
        add = QTreeWidgetItem(["+ Add Expression…"])
        add.setForeground(0, QBrush(QColor(ERROR_GREY)))
        self.addTopLevelItem(add)

    def _show(self, item: QTreeWidgetItem, variable: Variable, generation: int) -> None:
        if generation == self.generation:
            self.fill_item(item, variable)

    def _failed(self, item: QTreeWidgetItem, exc: Exception, generation: int) -> None:
        if generation == self.generation:
            item.setText(1, str(exc).splitlines()[-1] if str(exc) else "could not be evaluated")
            item.setForeground(1, QBrush(QColor(ERROR_GREY)))

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802 (Qt override)
        item = self.itemAt(event.pos())
        if item is not None and item.parent() is None and item.data(0, VARIABLE_ROLE) is None:
            self.ask_for_expression()
            return
        super().mouseDoubleClickEvent(event)

    def ask_for_expression(self) -> None:
        expression, ok = QInputDialog.getText(self, "Add Watch", "Expression (evaluated in the selected frame):")
        if ok:
            self.controller.add_watch(expression)

    def menu_for(self, item: QTreeWidgetItem | None) -> QMenu:
        menu = super().menu_for(item)
        menu.addAction("Add Expression…", self.ask_for_expression)
        variable = item.data(0, VARIABLE_ROLE) if item is not None else None
        if isinstance(variable, Variable) and item.parent() is None:
            menu.addAction("Remove Expression", lambda: self.controller.remove_watch(variable.name))
        return menu
