"""New project from a template: pick a template, a name and a parent folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QWidget,
)

from workbench.project import ProjectError, create_from_template, list_templates
from workbench.qt import theme


class NewProjectDialog(QDialog):
    """Creates the project itself on OK; ``created_project`` is its folder."""

    def __init__(self, parent: QWidget | None = None, location: Path | None = None):
        super().__init__(parent)
        self.setWindowTitle("New Project from Template")
        self.created_project: Path | None = None
        self.templates = QListWidget()
        # Descriptions wrap to the list's width and are read whole, never scrolled sideways.
        self.templates.setWordWrap(True)
        self.templates.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.templates.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.templates.setSpacing(2)
        for info in list_templates():
            item = QListWidgetItem(f"{info.title}\n{info.description}")
            item.setData(Qt.ItemDataRole.UserRole, info.name)
            self.templates.addItem(item)
        self.templates.setCurrentRow(0)
        self.name = QLineEdit("digits")
        self.location = QLineEdit(str(location or Path.home()))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        where = QHBoxLayout()
        where.addWidget(self.location, 1)
        where.addWidget(browse)
        self.error = QLabel()
        theme.set_themed_style_sheet(self.error, "color: @ERROR_TEXT;")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Create")
        buttons.accepted.connect(self.create)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Template", self.templates)
        form.addRow("Name", self.name)
        form.addRow("Location", where)
        form.addRow(self.error)
        form.addRow(buttons)
        self.resize(560, 420)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Location", self.location.text())
        if folder:
            self.location.setText(folder)

    def create(self) -> None:
        item = self.templates.currentItem()
        name = self.name.text().strip()
        if item is None or not name:
            self.error.setText("Choose a template and give the project a name.")
            return
        dest = Path(self.location.text()).expanduser() / name
        try:
            project = create_from_template(item.data(Qt.ItemDataRole.UserRole), dest, name)
        except ProjectError as exc:
            self.error.setText(str(exc))
            return
        self.created_project = project.root
        self.accept()
