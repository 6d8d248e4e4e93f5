"""The form of a tool, generated from its declaration (``ToolSpec.params``), so the window and
the CLI take the same parameters and check them the same way.

One editor per parameter: a path gets a line edit and Browse… (a save dialog for an output), a
list of paths a list of files with Add…, Remove and Move (path_list), a flag a check box, a choice
a combo box, numbers spin boxes bounded by the parameter's minimum and maximum, text and lists
line edits. Combo and spin boxes take the wheel only once focused, so scrolling the form never
changes a value. The help is the tooltip and a grey line under the editor. Parameters sit in
their groups; the advanced ones in a folded "Advanced" section. A value that does not parse is
shown under its editor and the form is invalid until it is fixed.

A list of paths needs ``Param.minimum`` files when the parameter sets it (``minimum=2`` for models
compared with each other), else one when it is required; a reference parameter naming a file
outside the list counts as one of them, since the tool adds it first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.model_index import name_in_project
from workbench.modeltools.params import Param, ToolSpec, in_window_words
from workbench.modeltools.widgets.path_list import PathListEditor
from workbench.modeltools.widgets.scrolling import WheelGuard
from workbench.modeltools.widgets.suggestions import SuggestionButton
from workbench.qt import theme

INT_LIMIT = 2**31 - 1
FLOAT_LIMIT = 1e12
NOT_SET = "auto"
"""What an optional number shows while it is not set (the tool then picks the value)."""

HINT_STYLE = "color: @MUTED_TEXT; font-size: 11px;"
ERROR_STYLE = "color: @ERROR_TEXT; font-size: 11px;"
SECTION_STYLE = "font-weight: 600; color: @FOREGROUND;"
REFERENCE_PARAM = "reference"
"""A path parameter of this name picks the file of a list the others are measured against; the
list marks it (its first file while it is empty)."""


class _FloatSpinBox(QDoubleSpinBox):
    """A float spin box that shows values as people write them (0.01, 1e-05), not 0.010000."""

    def __init__(self):
        super().__init__()
        self.setDecimals(8)

    def textFromValue(self, value: float) -> str:
        if self.specialValueText() and value == self.minimum():
            return self.specialValueText()
        return f"{value:.6g}"

    def valueFromText(self, text: str) -> float:
        try:
            return float(text.replace(",", "."))
        except ValueError:
            return self.minimum()

    def validate(self, text, pos):
        from PySide6.QtGui import QValidator

        stripped = text.strip()
        if stripped in ("", "-", "+", ".", "e", "-.") or stripped == self.specialValueText():
            return QValidator.State.Intermediate, text, pos
        try:
            float(stripped.replace(",", "."))
        except ValueError:
            if stripped.lower().endswith(("e", "e-", "e+")):
                return QValidator.State.Intermediate, text, pos
            return QValidator.State.Invalid, text, pos
        return QValidator.State.Acceptable, text, pos


class ParamField:
    """The editor of one parameter, with its hint and error lines."""

    def __init__(self, form: "ParamForm", param: Param):
        self.form = form
        self.param = param
        self.help = in_window_words(param.help, form.spec)  # the fields' names, not the CLI's flags
        self.label = QLabel(param.title if param.type != "bool" else "")
        self.label.setToolTip(self.help)
        self.label.setObjectName(f"label-{param.name}")
        self.container = QWidget()
        self.container.setObjectName(f"field-{param.name}")
        column = QVBoxLayout(self.container)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        self.editor = self._make_editor()
        self.editor.setObjectName(f"editor-{param.name}")
        self.editor.setToolTip(self.help)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        if param.type in ("int", "float", "choice"):
            # A number or a choice is short: a full-width box would look like a text field.
            self.editor.setMaximumWidth(320 if param.type == "choice" else 200)
            row.addWidget(self.editor)
            row.addStretch(1)
        else:
            row.addWidget(self.editor, 1)
        self.browse: QPushButton | None = None
        if param.type == "path" and not param.one_of:
            self.browse = QPushButton("Browse…")
            self.browse.setObjectName(f"browse-{param.name}")
            self.browse.setToolTip("Choose the file")
            self.browse.clicked.connect(self._browse)
            row.addWidget(self.browse)
        self.suggestions: SuggestionButton | None = None
        if param.suggests and isinstance(self.editor, QLineEdit):
            self.suggestions = SuggestionButton(self.editor)
            self.suggestions.setObjectName(f"suggest-{param.name}")
            row.addWidget(self.suggestions)
        column.addLayout(row)
        self.hint = QLabel(self.help)
        self.hint.setObjectName(f"hint-{param.name}")
        self.hint.setWordWrap(True)
        theme.set_themed_style_sheet(self.hint, HINT_STYLE)
        self.hint.setVisible(bool(param.help))
        column.addWidget(self.hint)
        self.error = QLabel("")
        self.error.setObjectName(f"error-{param.name}")
        self.error.setWordWrap(True)
        theme.set_themed_style_sheet(self.error, ERROR_STYLE)
        self.error.hide()
        column.addWidget(self.error)
        self.set(param.default)

    # --- editors ------------------------------------------------------------------------------

    def _make_editor(self) -> QWidget:
        param = self.param
        if param.type == "bool":
            editor = QCheckBox(param.title)
            editor.toggled.connect(self.form._changed)
            return editor
        if param.type == "path" and param.one_of:
            # One of the files another parameter lists (Compare's reference among its models):
            # chosen in the window, never left to the order the files were picked in.
            editor = QComboBox()
            editor.addItem(f"(the first of {self._one_of_title()})", None)
            editor.setMinimumWidth(320)
            editor.currentIndexChanged.connect(self.form._changed)
            self.form.wheel_guard.guard(editor)
            return editor
        if param.type == "choice":
            editor = QComboBox()
            if param.default is None and not param.required:
                editor.addItem("(tool's choice)", None)
            for choice in param.choices:
                editor.addItem(choice, choice)
            editor.setMinimumWidth(200)
            editor.currentIndexChanged.connect(self.form._changed)
            self.form.wheel_guard.guard(editor)
            return editor
        if param.type == "paths":
            editor = PathListEditor(self.help)
            editor.ask_files = self._ask_files
            editor.shown_name = self._shown_name
            editor.exists = lambda path: self.form.absolute(Path(path)).exists()
            editor.sig_changed.connect(self.form._changed)
            return editor
        if param.type == "int":
            editor = QSpinBox()
            low = int(param.minimum) if param.minimum is not None else -INT_LIMIT
            high = int(param.maximum) if param.maximum is not None else INT_LIMIT
            if self.optional_number:
                low -= 1
                editor.setSpecialValueText(NOT_SET)
            editor.setRange(low, high)
            editor.valueChanged.connect(self.form._changed)
            editor.setMinimumWidth(140)
            self.form.wheel_guard.guard(editor)
            return editor
        if param.type == "float":
            editor = _FloatSpinBox()
            low = float(param.minimum) if param.minimum is not None else -FLOAT_LIMIT
            high = float(param.maximum) if param.maximum is not None else FLOAT_LIMIT
            step = _step_for(param)
            editor.setSingleStep(step)
            if self.optional_number:
                low -= step
                editor.setSpecialValueText(NOT_SET)
            editor.setRange(low, high)
            editor.valueChanged.connect(self.form._changed)
            editor.setMinimumWidth(140)
            self.form.wheel_guard.guard(editor)
            return editor
        editor = QLineEdit()
        editor.setClearButtonEnabled(param.type != "str")
        editor.setPlaceholderText(self._placeholder())
        editor.textChanged.connect(self.form._changed)
        return editor

    @property
    def optional_number(self) -> bool:
        return self.param.type in ("int", "float") and self.param.default is None

    @property
    def needed_files(self) -> int:
        """How many files a list of paths needs: the parameter's minimum, else one when it is
        required."""
        if self.param.minimum is not None:
            return int(self.param.minimum)
        return 1 if self.param.required else 0

    def _placeholder(self) -> str:
        param = self.param
        if param.is_output:
            return "beside the input (default)"
        if param.type == "strings":
            return "comma-separated" + ("" if param.required else " (optional)")
        if param.type == "path":
            return "required" if param.required else "optional"
        return "" if param.required else "optional"

    def _browse(self) -> None:
        param = self.param
        start = self.form.browse_folder(self.get())
        filters = self._filters()
        if param.is_output:
            chosen = self.form.ask_save_file(param.title, start, filters)
            if chosen:
                self.set(chosen)
        else:
            chosen = self.form.ask_open_file(param.title, start, filters)
            if chosen:
                self.set(chosen)

    def _one_of_title(self) -> str:
        other = next((p for p in self.form.spec.params if p.name == self.param.one_of), None)
        return other.title.lower() if other is not None else self.param.one_of

    def offer(self, paths: list[str]) -> None:
        """The files a ``one_of`` parameter chooses among: ``paths``, the choice kept while it
        is still one of them (or was a file of its own)."""
        editor = self.editor
        chosen = editor.currentData()
        blocker = _Blocker(editor)
        try:
            while editor.count() > 1:
                editor.removeItem(1)
            for path in paths:
                editor.addItem(self._shown_name(path), path)
            if chosen and editor.findData(chosen) < 0:
                editor.addItem(self._shown_name(chosen), chosen)
            editor.setCurrentIndex(max(editor.findData(chosen), 0) if chosen else 0)
        finally:
            blocker.release()

    def _shown_name(self, path: str) -> str:
        """A file of a list as the project names it (the whole path outside a project)."""
        if self.form.base_dir is None:
            return path
        return name_in_project(self.form.base_dir, self.form.absolute(Path(path)))

    def _filters(self) -> str:
        param = self.param
        patterns = " ".join(f"*{s}" for s in param.suffixes)
        return f"{param.title} ({patterns});;All files (*)" if patterns else "All files (*)"

    def _ask_files(self) -> list[str]:
        return self.form.ask_open_files(self.param.title, self.form.browse_folder(self.get()), self._filters())

    # --- values -------------------------------------------------------------------------------

    def get(self) -> Any:
        """The value as the form holds it: text for a path and lists of words, a list for a list
        of paths, None when not set."""
        editor, kind = self.editor, self.param.type
        if kind == "paths":
            return editor.paths() or None
        if kind == "bool":
            return editor.isChecked()
        if kind == "choice" or self.param.one_of:
            return editor.currentData()
        if kind in ("int", "float"):
            if self.optional_number and editor.value() == editor.minimum():
                return None
            return int(editor.value()) if kind == "int" else float(editor.value())
        text = editor.text().strip()
        return text or None

    def set(self, value: Any) -> None:
        editor, kind = self.editor, self.param.type
        blocker = _Blocker(editor)
        try:
            if kind == "bool":
                editor.setChecked(bool(value) if value is not None else False)
            elif kind == "choice":
                index = 0 if value is None else editor.findText(str(value))
                editor.setCurrentIndex(max(index, 0))
            elif self.param.one_of:
                if value and editor.findData(str(value)) < 0:
                    editor.addItem(self._shown_name(str(value)), str(value))  # a file not among them
                editor.setCurrentIndex(max(editor.findData(str(value)) if value else 0, 0))
            elif kind == "paths":
                items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
                editor.set_paths([str(v).strip() for v in items if str(v).strip()])
            elif kind in ("int", "float"):
                if value is None or value == "":
                    editor.setValue(editor.minimum() if self.optional_number else _clamp(0, editor))
                else:
                    try:
                        editor.setValue(int(value) if kind == "int" else float(value))
                    except (TypeError, ValueError):
                        pass
            else:
                if isinstance(value, (list, tuple)):
                    text = ", ".join(str(v) for v in value)
                else:
                    text = "" if value is None else str(value)
                editor.setText(text)
        finally:
            blocker.release()
        self.form._changed()

    def check(self) -> str:
        """What is wrong with the value ("" when nothing)."""
        param, value = self.param, self.get()
        try:
            typed = param.parse(value) if value is not None else None
        except ModelToolError as exc:
            return _without_flag(str(exc), param)
        if param.type == "paths":
            count = len(typed or []) + self.form.reference_outside(self)
            if count < self.needed_files:
                if count == 0 and self.needed_files == 1:
                    return f"{param.title} is required."
                return f"Add at least {self.needed_files} files ({count} given)."
        elif param.required and typed in (None, []):
            return f"{param.title} is required."
        if param.type == "path" and not param.is_output and typed and not self.form.absolute(typed).exists():
            return "File does not exist."
        if param.type == "paths" and not param.is_output:
            for path in typed or []:
                if not self.form.absolute(path).exists():
                    return f"{path} does not exist."
        return ""

    def reason(self, message: str) -> str:
        """``message`` as the one line beside Run: "Data: file does not exist"."""
        text = message.strip().rstrip(".")
        if text.startswith(self.param.title):
            return text
        first = text.split(" ", 1)[0]
        if first.isalpha() and first[:1].isupper() and first[1:].islower():
            text = text[:1].lower() + text[1:]
        return f"{self.param.title}: {text}"

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    def set_shown(self, shown: bool) -> None:
        self.label.setVisible(shown)
        self.container.setVisible(shown)


class ParamForm(QWidget):
    """The generated form of one tool."""

    sig_validity_changed = Signal(bool)
    """The form became valid (True) or invalid (False)."""

    sig_changed = Signal()
    """A value changed."""

    def __init__(self, spec: ToolSpec, base_dir: Path | str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec = spec
        self.base_dir = Path(base_dir) if base_dir else None
        self.ask_open_file: Callable[[str, str, str], str] = self._ask_open_file
        self.ask_open_files: Callable[[str, str, str], list[str]] = self._ask_open_files
        self.ask_save_file: Callable[[str, str, str], str] = self._ask_save_file
        """File dialogs: (title, start folder, filters) -> chosen path(s) ("" / [] when
        cancelled). Replaceable in tests."""
        self._building = True
        self._valid = False
        self.wheel_guard = WheelGuard(self)
        self.fields: dict[str, ParamField] = {}
        self.form_error = QLabel("")
        self.form_error.setObjectName("form-error")
        self.form_error.setWordWrap(True)
        theme.set_themed_style_sheet(self.form_error, ERROR_STYLE)
        self.form_error.hide()

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(8)
        grid.setColumnStretch(1, 1)
        self._grid = grid
        basic = [p for p in spec.params if not p.advanced]
        advanced = [p for p in spec.params if p.advanced]
        row = self._add_groups(basic, 0, show_first_title=False)
        self.advanced_toggle: QToolButton | None = None
        if advanced:
            toggle = QToolButton()
            toggle.setObjectName("advanced-toggle")
            toggle.setText("Advanced")
            toggle.setCheckable(True)
            toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            toggle.setArrowType(Qt.ArrowType.RightArrow)
            toggle.setAutoRaise(True)
            theme.set_themed_style_sheet(toggle, "QToolButton { font-weight: 600; color: @FOREGROUND;"
                                                 " padding: 6px 0 0 0; border: none; }")
            toggle.toggled.connect(self.show_advanced)
            grid.addWidget(toggle, row, 0, 1, 2)
            self.advanced_toggle = toggle
            row += 1
            self._advanced_start = row
            self._advanced_headers: list[QLabel] = []
            row = self._add_groups(advanced, row, show_first_title=False, headers=self._advanced_headers)
        grid.addWidget(self.form_error, row, 0, 1, 2)
        grid.setRowStretch(row + 1, 1)
        widest = max((f.label.sizeHint().width() for f in self.fields.values()), default=0)
        grid.setColumnMinimumWidth(0, widest)
        self._advanced_names = [p.name for p in advanced]
        self.show_advanced(False)
        self._building = False
        self._changed()

    def _add_groups(self, params: list[Param], row: int, show_first_title: bool,
                    headers: list[QLabel] | None = None) -> int:
        groups: dict[str, list[Param]] = {}
        for param in params:
            groups.setdefault(param.group, []).append(param)
        for number, (group, members) in enumerate(groups.items()):
            if group and (number or show_first_title or len(groups) > 1):
                header = QLabel(group)
                header.setObjectName(f"section-{group}")
                theme.set_themed_style_sheet(header, SECTION_STYLE)
                header.setIndent(0)
                header.setContentsMargins(0, 8, 0, 0)
                self._grid.addWidget(header, row, 0, 1, 2)
                if headers is not None:
                    headers.append(header)
                row += 1
            for param in members:
                field = ParamField(self, param)
                self.fields[param.name] = field
                self._grid.addWidget(field.label, row, 0, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
                self._grid.addWidget(field.container, row, 1)
                # The label sits level with the editor's text, not with the top of its box.
                field.label.setContentsMargins(0, 5, 0, 0)
                row += 1
        return row

    # --- public -------------------------------------------------------------------------------

    def show_advanced(self, shown: bool) -> None:
        if self.advanced_toggle is None:
            return
        if self.advanced_toggle.isChecked() != shown:
            self.advanced_toggle.setChecked(shown)  # comes back here through toggled
            return
        self.advanced_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        for name in self._advanced_names:
            self.fields[name].set_shown(shown)
        for header in self._advanced_headers:
            header.setVisible(shown)

    def offer_suggestions(self, name: str, suggestions: list[str]) -> None:
        """What the text field ``name`` (a parameter with ``suggests``) offers to pick from."""
        field = self.fields.get(name)
        if field is not None and field.suggestions is not None:
            field.suggestions.offer(suggestions)

    def values(self) -> dict[str, Any]:
        """The values set in the form, ready for a ToolInvocation (paths made absolute against
        the project; parameters left empty are left out, so the tool's defaults apply)."""
        values = {}
        for name, field in self.fields.items():
            value = field.get()
            if value is None:
                continue
            if field.param.type == "path":
                value = str(self.absolute(Path(value)))
            elif field.param.type == "paths":
                value = [str(self.absolute(Path(v))) for v in value]
            values[name] = value
        return values

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the form (unknown names are ignored); advanced values that differ from their
        defaults unfold the Advanced section so nothing set is hidden."""
        unfold = False
        for name, value in values.items():
            field = self.fields.get(name)
            if field is not None:
                field.set(value)
                if field.param.advanced and value != field.param.default:
                    unfold = True
        if unfold:
            self.show_advanced(True)

    def errors(self) -> dict[str, str]:
        """What is wrong, by parameter name ("" key: what is wrong with the whole)."""
        problems = {name: field.check() for name, field in self.fields.items()}
        problems = {name: message for name, message in problems.items() if message}
        if not problems:
            try:
                self.spec.resolve(self.values())
            except ModelToolError as exc:
                problems[""] = str(exc)
        return problems

    @property
    def is_valid(self) -> bool:
        return self._valid

    def first_problem(self) -> tuple[ParamField | None, str]:
        """The first thing in the way of a run, in the form's order: (its field, or None for the
        whole form; its one-line reason, e.g. "Data: file does not exist"). ``(None, "")`` when
        the form is valid."""
        problems = self.errors()
        for name, field in self.fields.items():
            if problems.get(name):
                return field, field.reason(problems[name])
        return None, problems.get("", "")

    def set_enabled(self, enabled: bool) -> None:
        for field in self.fields.values():
            field.editor.setEnabled(enabled)
            if field.browse is not None:
                field.browse.setEnabled(enabled)

    def absolute(self, path: Path) -> Path:
        path = Path(path).expanduser()
        if not path.is_absolute() and self.base_dir is not None:
            return self.base_dir / path
        return path

    def browse_folder(self, current: Any) -> str:
        """Where a file dialog opens: beside the current value (the last file of a list), else
        the project."""
        if isinstance(current, (list, tuple)):
            current = current[-1] if current else None
        if current:
            first = Path(str(current).strip())
            folder = self.absolute(first)
            folder = folder if folder.is_dir() else folder.parent
            if folder.is_dir():
                return str(folder / first.name) if not first.is_dir() else str(folder)
        return str(self.base_dir or Path.home())

    # --- validation ---------------------------------------------------------------------------

    def _changed(self, *_args) -> None:
        if self._building:
            return
        problems = self.errors()
        for name, field in self.fields.items():
            field.show_error(problems.get(name, ""))
            if problems.get(name) and field.param.advanced:
                self.show_advanced(True)
        self.form_error.setText(problems.get("", ""))
        self.form_error.setVisible(bool(problems.get("")))
        self._offer_files()
        self._mark_reference()
        valid = not problems
        if valid != self._valid:
            self._valid = valid
            self.sig_validity_changed.emit(valid)
        self.sig_changed.emit()

    def reference_outside(self, field: ParamField) -> int:
        """1 when the reference parameter names a file that ``field``'s list does not hold (the
        tool then adds it first), else 0."""
        reference = self.fields.get(REFERENCE_PARAM)
        if reference is None or reference is field or not field.param.positional or reference.param.type != "path":
            return 0
        chosen = reference.get()
        if not chosen:
            return 0
        listed = [self.absolute(Path(p)) for p in field.editor.paths()]
        return int(self.absolute(Path(chosen)) not in listed)

    def _offer_files(self) -> None:
        """Each ``one_of`` parameter offers the files its list holds now."""
        for field in self.fields.values():
            listed = self.fields.get(field.param.one_of) if field.param.one_of else None
            if listed is not None:
                field.offer(list(listed.get() or []))

    def _mark_reference(self) -> None:
        """Tag the file of a list that the others are measured against: the one the reference
        parameter names, else the first."""
        reference = self.fields.get(REFERENCE_PARAM)
        if reference is None or reference.param.type != "path":
            return
        chosen = reference.get()
        for field in self.fields.values():
            if field.param.type != "paths" or not field.param.positional:
                continue
            editor: PathListEditor = field.editor
            paths = [self.absolute(Path(p)) for p in editor.paths()]
            if not paths:
                editor.set_mark(None, "")
            elif chosen:
                target = self.absolute(Path(chosen))
                editor.set_mark(paths.index(target) if target in paths else None, "reference")
            else:
                editor.set_mark(0, "reference")

    # --- dialogs ------------------------------------------------------------------------------

    def _ask_open_file(self, title: str, start: str, filters: str) -> str:
        path, _ = QFileDialog.getOpenFileName(self, title, start, filters)
        return path

    def _ask_open_files(self, title: str, start: str, filters: str) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(self, title, start, filters)
        return paths

    def _ask_save_file(self, title: str, start: str, filters: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self, title, start, filters)
        return path


class _Blocker:
    """Silences an editor's signals while the form sets it (one change signal follows)."""

    def __init__(self, widget: QWidget):
        self._widget = widget
        self._was = widget.blockSignals(True)

    def release(self) -> None:
        self._widget.blockSignals(self._was)


def _clamp(value: float, editor) -> float:
    return min(max(value, editor.minimum()), editor.maximum())


def _step_for(param: Param) -> float:
    """A spin step that suits the parameter's scale (0.01 for a fraction, 1 for a count)."""
    reference = param.default if isinstance(param.default, (int, float)) and param.default else None
    if reference is None and param.maximum is not None and param.minimum is not None:
        reference = (param.maximum - param.minimum) / 10 or None
    if reference is None:
        return 0.1
    magnitude = abs(float(reference))
    step = 1.0
    while step > magnitude and step > 1e-6:
        step /= 10
    while step * 10 <= magnitude / 10:
        step *= 10
    return step


def _without_flag(message: str, param: Param) -> str:
    """A parse error as the form shows it: under the editor, without the CLI flag."""
    prefix = f"{param.flag}: "
    text = message[len(prefix):] if message.startswith(prefix) else message
    return text[:1].upper() + text[1:]
