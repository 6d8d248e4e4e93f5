"""The Settings window (Ctrl+,), generated from the declarations of ``workbench.settings``: one
row per setting, grouped by section, with a search box, the User / Project switch, an editor of
the setting's type, a mark on the settings the chosen level sets, and a reset to what applies
without it. A change is written at once and applies live (the window's listeners hear it).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import theme
from workbench.settings import LEVELS, PROJECT, SECTION_TITLES, SETTINGS, USER, Setting, Settings, SettingsError


class SettingRow(QWidget):
    """One setting: title, help, its editor, the "modified" mark and Reset."""

    sig_value_edited = Signal(str, object)
    """The user gave ``key`` this value."""

    sig_reset_requested = Signal(str)
    """The user asked to take ``key`` out of the chosen level."""

    def __init__(self, declared: Setting, parent: QWidget | None = None):
        super().__init__(parent)
        self.setting = declared
        self.setObjectName(f"setting:{declared.key}")
        self._updating = False
        self.marker = QFrame()
        self.marker.setFixedWidth(3)
        self.marker.setAutoFillBackground(True)
        self.marker.setBackgroundRole(QPalette.ColorRole.Highlight)
        self.marker.setToolTip("Set at this level")
        self.title = QLabel(f"<b>{declared.label}</b>")
        self.key_label = QLabel(declared.key)
        self.key_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.help = QLabel(declared.help)
        self.help.setWordWrap(True)
        self.help.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.hide()
        self.editor = self._make_editor()
        self.reset_button = QToolButton(text="Reset")
        self.reset_button.setToolTip("Remove it from this level: the weaker level or the default applies")
        self.reset_button.clicked.connect(lambda: self.sig_reset_requested.emit(declared.key))

        heading = QHBoxLayout()
        heading.addWidget(self.title)
        heading.addWidget(self.key_label)
        heading.addStretch(1)
        heading.addWidget(self.reset_button)
        editor_line = QHBoxLayout()
        editor_line.addWidget(self.editor)
        editor_line.addStretch(1)
        text = QVBoxLayout()
        text.setSpacing(3)
        text.addLayout(heading)
        text.addWidget(self.help)
        text.addLayout(editor_line)
        text.addWidget(self.note)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 6, 8, 6)
        layout.addWidget(self.marker)
        layout.addLayout(text, 1)

    def _make_editor(self) -> QWidget:
        declared = self.setting
        if declared.type == "bool":
            editor = QCheckBox("On")
            editor.toggled.connect(lambda on: self._edited(on))
        elif declared.type == "int":
            editor = QSpinBox()
            editor.setRange(declared.minimum if declared.minimum is not None else -2**31,
                            declared.maximum if declared.maximum is not None else 2**31 - 1)
            editor.setKeyboardTracking(False)  # one change per finished number, not per digit
            editor.setMinimumWidth(110)
            editor.valueChanged.connect(lambda value: self._edited(value))
        elif declared.type == "choice":
            editor = QComboBox()
            titles = declared.choice_titles or declared.choices
            for choice, title in zip(declared.choices, titles):
                editor.addItem(title, choice)
            editor.currentIndexChanged.connect(lambda index: self._edited(editor.itemData(index)))
        else:
            editor = QLineEdit()
            editor.setMinimumWidth(320)
            if declared.type == "ints":
                editor.setPlaceholderText("e.g. 80, 100")
            editor.editingFinished.connect(lambda: self._edited(self._text_value(editor.text())))
        editor.setObjectName(f"editor:{declared.key}")
        return editor

    def _text_value(self, text: str) -> Any:
        if self.setting.type != "ints":
            return text
        parts = [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
        try:
            return [int(part) for part in parts]
        except ValueError:
            return parts  # refused by the setting's check, with its message

    def _edited(self, value: Any) -> None:
        if not self._updating:
            self.sig_value_edited.emit(self.setting.key, value)

    def show_value(self, value: Any, modified: bool, available: bool, note: str = "") -> None:
        """Show ``value``; ``modified`` when the chosen level sets it; ``available`` when the
        setting can be written at that level."""
        self._updating = True
        try:
            editor = self.editor
            if isinstance(editor, QCheckBox):
                editor.setChecked(bool(value))
            elif isinstance(editor, QSpinBox):
                editor.setValue(int(value))
            elif isinstance(editor, QComboBox):
                editor.setCurrentIndex(max(0, editor.findData(value)))
            elif self.setting.type == "ints":
                editor.setText(", ".join(str(item) for item in value))
            else:
                editor.setText(str(value))
        finally:
            self._updating = False
        self.marker.setVisible(modified)
        self.marker.setProperty("modified", modified)
        self.reset_button.setEnabled(modified and available)
        self.editor.setEnabled(available)
        self.show_note(note)

    def show_note(self, note: str, error: bool = False) -> None:
        self.note.setText(note)
        self.note.setStyleSheet(f"color: {theme.ERROR_TEXT};" if error else "")
        if not error:
            self.note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.note.setVisible(bool(note))

    @property
    def is_modified(self) -> bool:
        return bool(self.marker.property("modified"))


class SettingsWindow(QDialog):
    """Every setting of ``settings``, at the user's or the project's level."""

    def __init__(self, settings: Settings, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("Settings")
        self.setObjectName("settings-window")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.level = USER
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search settings")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        self.level_buttons = QButtonGroup(self)
        switch = QHBoxLayout()
        for level in LEVELS:
            button = QRadioButton(level.capitalize())
            button.setObjectName(f"level:{level}")
            button.setEnabled(settings.has_level(level))
            if level == PROJECT and not settings.has_level(level):
                button.setToolTip("This window has no project")
            button.toggled.connect(lambda on, chosen=level: on and self.show_level(chosen))
            self.level_buttons.addButton(button)
            switch.addWidget(button)
        self.where = QLabel()
        self.where.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        switch.addWidget(self.where, 1)

        self.rows: dict[str, SettingRow] = {}
        self.section_labels: dict[str, QLabel] = {}
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(12, 4, 12, 12)
        sections = list(SECTION_TITLES) + sorted({s.section for s in SETTINGS} - set(SECTION_TITLES))
        for section in sections:
            declared = [item for item in SETTINGS if item.section == section]
            if not declared:
                continue
            label = QLabel(SECTION_TITLES.get(section, section.capitalize()))
            font = label.font()
            font.setPointSizeF(font.pointSizeF() * 1.3)
            font.setWeight(QFont.Weight.DemiBold)
            label.setFont(font)
            label.setContentsMargins(0, 12, 0, 2)
            self.section_labels[section] = label
            column.addWidget(label)
            for item in declared:
                row = SettingRow(item)
                row.sig_value_edited.connect(self._write)
                row.sig_reset_requested.connect(self._reset)
                self.rows[item.key] = row
                column.addWidget(row)
        self.nothing_found = QLabel("No setting matches.")
        self.nothing_found.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.nothing_found.hide()
        column.addWidget(self.nothing_found)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(close)

        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addLayout(switch)
        layout.addWidget(self.problems)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)
        QShortcut(QKeySequence.StandardKey.Find, self, activated=self.search.setFocus)
        self._stop_listening = settings.on_changed(lambda _keys: self.refresh())
        theme.theme_changes().sig_theme_changed.connect(self._on_theme_changed)
        self.resize(760, 640)
        self.level_buttons.buttons()[0].setChecked(True)
        self.refresh()

    def show_level(self, level: str) -> None:
        """Show and edit the values of ``level`` ("user" or "project")."""
        self.level = level
        for button in self.level_buttons.buttons():
            if button.objectName() == f"level:{level}" and not button.isChecked():
                button.setChecked(True)
        self.refresh()

    def refresh(self) -> None:
        """Show the values in the files now, with the problems found in them."""
        settings, level = self.settings, self.level
        path = settings.files.get(level)
        self.where.setText(f"  {path}" if path else "")
        for key, row in self.rows.items():
            declared = row.setting
            own = settings.level_value(key, level)
            value = own if own is not None else self._below(key, level)
            available = level in declared.levels and settings.has_level(level)
            note = ""
            if level not in declared.levels:
                other = " and ".join(declared.levels)
                note = f"A {other} setting: switch to {declared.levels[0].capitalize()} to change it."
            elif level == PROJECT and own is None and settings.source(key) == USER:
                note = "Your user setting applies here."
            row.show_value(value, own is not None, available, note)
        self.problems.setText("\n".join(settings.problems))
        self.problems.setStyleSheet(f"color: {theme.ERROR_TEXT};")
        self.problems.setVisible(bool(settings.problems))

    def _below(self, key: str, level: str) -> Any:
        """What applies at ``level`` when it does not set ``key``: a weaker level's value or the
        default."""
        for weaker in reversed(LEVELS[:LEVELS.index(level)]):
            value = self.settings.level_value(key, weaker)
            if value is not None:
                return value
        return self.rows[key].setting.default

    def _write(self, key: str, value: Any) -> None:
        try:
            self.settings.set(key, value, self.level)
        except SettingsError as exc:
            self.rows[key].show_note(str(exc), error=True)
            return
        self.refresh()

    def _reset(self, key: str) -> None:
        try:
            self.settings.reset(key, self.level)
        except SettingsError as exc:
            self.rows[key].show_note(str(exc), error=True)
            return
        self.refresh()

    def _filter(self, text: str) -> None:
        shown = 0
        for section, label in self.section_labels.items():
            any_shown = False
            for row in self.rows.values():
                if row.setting.section == section:
                    visible = row.setting.matches(text)
                    row.setVisible(visible)
                    any_shown |= visible
                    shown += visible
            label.setVisible(any_shown)
        self.nothing_found.setVisible(shown == 0)

    def visible_keys(self) -> list[str]:
        """The keys of the rows the search leaves shown."""
        return [key for key, row in self.rows.items() if not row.isHidden()]

    def _on_theme_changed(self, _theme: str) -> None:
        self.refresh()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        self._stop_listening()
        super().closeEvent(event)
