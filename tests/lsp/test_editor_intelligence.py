"""Code intelligence in a project window with a real python-lsp-server (one for the module):
completion as you type, signature help, problems underlined and listed, F12, Shift+F12, F2,
the outline, formatting, a late answer dropped, and a killed server coming back."""

from __future__ import annotations

import os
import signal

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCharFormat
from PySide6.QtWidgets import QApplication, QInputDialog

from tests.lsp.conftest import MODEL, TRAIN, UGLY, close_window, line_of, make_project, open_window, wait_for
from workbench.lsp.widgets import controller_of

SHAPES = '''def area(width, height):
    return width * height
'''

REPORT = '''from shapes import area

print(area(2, 3))
'''


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    folders = tmp_path_factory.mktemp("wb")
    patch = pytest.MonkeyPatch()
    patch.setenv("WORKBENCH_CONFIG_DIR", str(folders / "config"))
    patch.setenv("WORKBENCH_RUNTIME_DIR", str(folders / "run"))
    root = make_project(tmp_path_factory.mktemp("lsp") / "demo")
    (root / "shapes.py").write_text(SHAPES)
    (root / "report.py").write_text(REPORT)
    window = open_window(root)
    window.open_file(root / "train.py")
    controller = controller_of(window)
    wait_for(lambda: controller.status.state == "running", what="the language server")
    yield window
    close_window(window)
    patch.undo()


def fresh(window, name: str, text: str | None = None):
    """The editor of ``name`` showing its text as on disk (or ``text``), focused, the window active."""
    tab = window.open_file(window.project.root / name)
    wanted = text if text is not None else (window.project.root / name).read_text()
    if tab.text() != wanted:
        tab.editor.setPlainText(wanted)
    window.activateWindow()
    wait_for(window.isActiveWindow, what="the window to be active")
    tab.editor.setFocus()
    return tab


def wavy(tab) -> list[tuple[int, int, str]]:
    return [(s.cursor.selectionStart(), s.cursor.selectionEnd(), s.format.underlineColor().name())
            for s in tab.editor.extraSelections()
            if s.format.underlineStyle() == QTextCharFormat.UnderlineStyle.WaveUnderline]


def test_typing_nn_dot_lists_conv2d_and_enter_inserts_it(qtbot, window):
    tab = fresh(window, "train.py")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    qtbot.keyClicks(tab.editor, "layer = nn.")
    wait_for(lambda: "Conv2d" in [item.text for item in tab.editor.completions_shown()], what="Conv2d listed")
    qtbot.keyClicks(tab.editor, "Conv2")
    assert [item.text for item in tab.editor.completions_shown()][0] == "Conv2d"
    qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Return)  # the list has the keys
    assert tab.text().endswith("layer = nn.Conv2d")
    qtbot.wait(50)  # as between a person's keys: the list asks once more after inserting

    tab.editor.setPlainText(TRAIN + "\n")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)  # an empty line: nothing typed to go by
    qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: {"build", "net", "head"} <= {item.text for item in tab.editor.completions_shown()},
             what="Ctrl+Space")
    qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)


def test_a_list_answered_after_the_next_key_lists_the_rest_of_the_name_at_once(qtbot, window):
    # Keys 50 ms apart, faster than the pause after which a name is asked about: the list comes
    # only from the answer to the dot, which arrives after the keys that follow it.
    tab = fresh(window, "train.py")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    qtbot.keyClicks(tab.editor, "nn.")  # the server's first look into torch.nn takes seconds
    wait_for(lambda: tab.editor.completions_shown(), what="a first list")
    qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)
    qtbot.keyClick(tab.editor, Qt.Key.Key_Home, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(tab.editor, "kernel = nn.Conv")  # a line no other test asks about
    shown: list[str] = []
    for step in range(1200):  # a minute at most of typing "Conv" / "Con" back and forth
        qtbot.keyClick(tab.editor, Qt.Key.Key_Backspace if step % 2 == 0 else Qt.Key.Key_V)
        shown = [item.text for item in tab.editor.completions_shown()]
        if shown:
            break
        qtbot.wait(50)
    assert shown[:3] == ["Conv1d", "Conv2d", "Conv3d"], shown
    qtbot.keyClick(tab.editor, Qt.Key.Key_Escape)


def test_signature_help_of_conv2d_shows_in_channels_in_bold(qtbot, window):
    tab = fresh(window, "train.py")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    qtbot.keyClicks(tab.editor, "layer = nn.Conv2d")
    if tab.editor.completions_shown():
        qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)
    qtbot.keyClicks(tab.editor, "(")
    link = controller_of(window).link_for(tab.path)
    wait_for(link.signature_shown, what="signature help")
    popup = link.signature_popup
    assert popup.parameter == "in_channels" and "<b><u>in_channels</u></b>" in popup.label.text()
    qtbot.keyClicks(tab.editor, "1, ")
    wait_for(lambda: popup.parameter == "out_channels", what="the second parameter")
    qtbot.keyClick(tab.editor, Qt.Key.Key_Escape)
    assert not link.signature_shown()


def test_the_bold_parameter_follows_a_comma_and_space_typed_before_the_server_answers(qtbot, window):
    tab = fresh(window, "train.py")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    qtbot.keyClicks(tab.editor, "layer = nn.Conv2d")
    if tab.editor.completions_shown():
        qtbot.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)
    qtbot.keyClicks(tab.editor, "(")
    link = controller_of(window).link_for(tab.path)
    wait_for(link.signature_shown, what="signature help")
    qtbot.keyClicks(tab.editor, "1,")
    QApplication.processEvents()  # the comma's question goes out; the space comes before its answer
    qtbot.keyClicks(tab.editor, " ")
    wait_for(lambda: link.signature_popup.parameter == "out_channels", timeout=20, what="the second parameter")
    qtbot.keyClick(tab.editor, Qt.Key.Key_Escape)


def test_an_undefined_name_is_underlined_and_listed_in_problems(qtbot, window):
    tab = fresh(window, "train.py")
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    qtbot.keyClicks(tab.editor, "print(hed)")
    wait_for(lambda: [d for d in tab.diagnostics() if "hed" in d.message], what="the undefined name")
    [problem] = [d for d in tab.diagnostics() if "hed" in d.message]
    assert problem.severity == "error" and problem.source == "pyflakes"
    line, column = line_of(tab.text(), "hed)")
    start = tab.editor.document().findBlockByNumber(line - 1).position() + column
    assert (start, start + 3, "#e51400") in wavy(tab)

    from workbench.lsp.widgets.problems_panel import ProblemsPanel

    panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
    wait_for(lambda: any("hed" in d.message for _, d in panel.problems()), what="the Problems dock")
    file_item = next(panel.tree.topLevelItem(i) for i in range(panel.tree.topLevelItemCount())
                     if panel.tree.topLevelItem(i).text(0).startswith("train.py"))
    item = next(file_item.child(i) for i in range(file_item.childCount()) if "hed" in file_item.child(i).text(0))
    assert item.text(1) == "pyflakes" and item.text(2) == f"{line}:{column + 1}"
    assert panel.parentWidget().windowTitle().startswith("Problems (")
    tab.set_cursor_position(1, 1)
    panel.tree.itemClicked.emit(item, 0)
    assert window.current_editor() is tab and tab.cursor_position() == (line, column + 1)

    tab.editor.setPlainText(TRAIN)
    wait_for(lambda: not any("hed" in d.message for _, d in panel.problems()), what="the problem to go")


def test_a_bracket_left_open_while_typing_is_one_problem_not_a_warning_on_every_line_after(qtbot, window):
    unclosed = "layer = nn.Conv2d(1, \n" + TRAIN + "x = dict(a = 1)\n"
    tab = fresh(window, "train.py", unclosed)
    wait_for(lambda: [d for d in tab.diagnostics() if "never closed" in d.message], what="the syntax error")
    from workbench.lsp.widgets.problems_panel import ProblemsPanel

    panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
    wait_for(lambda: any("never closed" in d.message for _, d in panel.problems()), what="the Problems dock")
    style = [d.message for d in tab.diagnostics() if d.source == "pycodestyle"]
    assert all(message.startswith("E90") for message in style), style  # no E251 for "a = 1", no E128
    assert len([d for _, d in panel.problems() if d.source == "pycodestyle"]) <= 1
    fresh(window, "train.py", TRAIN + "x = dict(a = 1)\n")  # readable again: the style warning is back
    wait_for(lambda: [d for d in tab.diagnostics() if d.source == "pycodestyle" and "E251" in d.message],
             what="E251 once the file reads")
    tab.editor.setPlainText(TRAIN)


def test_f12_on_a_function_goes_to_its_definition_in_model_py(qtbot, window):
    tab = fresh(window, "train.py")
    line, column = line_of(TRAIN, "build(8)")
    tab.set_cursor_position(line, column + 2)
    qtbot.keyClick(tab.editor, Qt.Key.Key_F12)
    # Said while the server looks (seconds for its first question), gone once it has answered.
    assert window.statusBar().currentMessage() == "Looking for the definition of build…"
    wait_for(lambda: window.current_editor().path.name == "model.py", what="model.py")
    model = window.current_editor()
    def_line, def_column = line_of(MODEL, "build(width)")
    assert model.cursor_position() == (def_line, def_column + 1)
    assert not model.is_read_only()
    assert window.statusBar().currentMessage() == ""


def test_f12_into_torch_opens_the_installed_file_read_only(qtbot, window):
    tab = fresh(window, "train.py")
    line, column = line_of(TRAIN, "Linear(")
    tab.set_cursor_position(line, column + 2)
    qtbot.keyClick(tab.editor, Qt.Key.Key_F12)
    wait_for(lambda: "site-packages" in str(window.current_editor().path), what="torch's file")
    opened = window.current_editor()
    assert opened.path.name == "linear.py" and opened.is_read_only()
    assert "class Linear" in opened.editor.textCursor().block().text()
    notice = wait_for(lambda: opened.notices.notice("installed-package"), what="the read-only notice")
    assert "installed package" in notice.message
    assert not any(d for d in opened.diagnostics())  # an installed file is not linted
    window.close_tab(window.tabs.indexOf(opened))


def test_shift_f12_lists_the_references_in_a_dock(qtbot, window):
    tab = fresh(window, "train.py")
    line, column = line_of(TRAIN, "build(8)")
    tab.set_cursor_position(line, column + 1)
    qtbot.keyClick(tab.editor, Qt.Key.Key_F12, Qt.KeyboardModifier.ShiftModifier)
    from workbench.lsp.widgets.references_panel import ReferencesPanel

    panel = wait_for(lambda: window.findChild(ReferencesPanel, "lsp-references-panel"), what="the References dock")
    wait_for(lambda: len(panel.locations) == 3, what="three references")
    assert sorted((place.path.name, place.span.line) for place in panel.locations) == [
        ("model.py", line_of(MODEL, "def build")[0]), ("train.py", line_of(TRAIN, "import build")[0]),
        ("train.py", line)]
    assert panel.title.text() == "3 references to build in 2 files"
    assert panel.parentWidget().isVisible()
    model_item = next(panel.tree.topLevelItem(i) for i in range(panel.tree.topLevelItemCount())
                      if panel.tree.topLevelItem(i).text(0).startswith("model.py"))
    panel.tree.itemClicked.emit(model_item.child(0), 0)
    assert window.current_editor().path.name == "model.py"


def test_f2_renames_in_the_open_editor_and_in_the_file_on_disk(qtbot, window):
    root = window.project.root
    tab = fresh(window, "report.py")
    assert all(t.path.name != "shapes.py" for t in window.editors())
    line, column = line_of(REPORT, "area(2")
    tab.set_cursor_position(line, column + 1)

    def answer_dialog() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QInputDialog):
            QTimer.singleShot(50, answer_dialog)
            return
        assert dialog.textValue() == "area"
        dialog.setTextValue("surface")
        dialog.accept()

    QTimer.singleShot(50, answer_dialog)
    qtbot.keyClick(tab.editor, Qt.Key.Key_F2)
    wait_for(lambda: "surface" in tab.text(), what="the rename in the editor")
    assert tab.text() == REPORT.replace("area", "surface")
    assert (root / "shapes.py").read_text() == SHAPES.replace("area", "surface")
    assert tab.is_modified() and (root / "report.py").read_text() == REPORT  # the editor is not saved for you

    tab.editor.undo()  # one undo step takes the whole rename back in this file
    assert tab.text() == REPORT
    window.commands.execute("lsp.undoRenameOnDisk")
    assert (root / "shapes.py").read_text() == SHAPES


def test_the_outline_lists_the_classes_and_functions_and_goes_there(qtbot, window):
    fresh(window, "model.py")
    from workbench.lsp.widgets.outline_panel import OutlinePanel

    outline = window.findChild(OutlinePanel, "lsp-outline-panel")
    wait_for(lambda: outline.path is not None and outline.path.name == "model.py" and outline.symbols,
             what="the outline of model.py")
    names = {symbol.name: [child.name for child in symbol.children] for symbol in outline.symbols}
    assert names["build"] == [] and {"__init__", "forward"} <= set(names["Net"])
    window.commands.execute("lsp.goToSymbol")
    assert outline.filter.hasFocus()
    qtbot.keyClicks(outline.filter, "forw")
    qtbot.keyClick(outline.filter, Qt.Key.Key_Return)
    assert window.current_editor().cursor_position()[0] == line_of(MODEL, "def forward")[0]
    outline.filter.clear()


def test_format_document_and_selection_each_in_one_undo_step(qtbot, window):
    tab = fresh(window, "ugly.py")
    last = len(UGLY.splitlines())
    tab.set_cursor_position(last, 1)
    window.commands.execute("lsp.formatSelection")
    wait_for(lambda: "x = [1, 2, 3]" in tab.text(), what="the selection formatted")
    assert "def  squash( a,b ):" in tab.text()  # outside the selection
    window.commands.execute("lsp.formatDocument")
    wait_for(lambda: "def squash(a, b):" in tab.text(), what="the document formatted")
    tab.editor.undo()
    assert "def  squash( a,b ):" in tab.text() and "x = [1, 2, 3]" in tab.text()


def test_a_format_answer_for_text_typed_over_meanwhile_is_not_applied(qtbot, window):
    tab = fresh(window, "ugly.py")
    tab.set_cursor_position(1, 1)
    window.commands.execute("lsp.formatDocument")
    tab.insert_text("# typed while formatting\n")  # before the answer can come: it comes through the event loop
    wait_for(lambda: "changed before the language server answered" in window.statusBar().currentMessage(),
             what="the dropped answer")
    assert tab.text() == "# typed while formatting\n" + UGLY


def test_hover_help_over_a_name(qtbot, window):
    tab = fresh(window, "train.py")
    controller = controller_of(window)
    from workbench.editor.assist import PENDING, TextPosition

    replies: list = []
    line, column = line_of(TRAIN, "build(8)")
    position = TextPosition(tab.path, line, column + 1, TRAIN.splitlines()[line - 1], reply=replies.append)
    assert controller.hover(position) is PENDING
    wait_for(lambda: replies, what="the help")
    assert "build(width)" in replies[0]


def test_a_killed_server_comes_back_and_the_editor_keeps_working(qtbot, window):
    tab = fresh(window, "train.py")
    controller = controller_of(window)
    states: list[str] = []
    controller.sig_status_changed.connect(lambda status: states.append(status.state))
    tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
    killed = [controller.session.server_pid, controller.checker.server_pid]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    qtbot.keyClicks(tab.editor, "x")  # typing goes on while it is down
    wait_for(lambda: "running" in states, what="the server to come back")
    assert states[0] == "restarting"
    assert controller.session.server_pid not in killed and controller.checker.server_pid not in killed
    qtbot.keyClicks(tab.editor, " = 1")
    qtbot.keyClick(tab.editor, Qt.Key.Key_Return)
    qtbot.keyClicks(tab.editor, "print(after_restart)")
    wait_for(lambda: any("after_restart" in d.message for d in tab.diagnostics()), what="diagnostics again")
    line, column = line_of(TRAIN, "build(8)")
    tab.set_cursor_position(line, column + 2)
    window.commands.execute("lsp.goToDefinition")
    wait_for(lambda: window.current_editor().path.name == "model.py", what="navigation again")
    tab.editor.setPlainText(TRAIN)


def test_f2_in_the_explorer_still_renames_files(qtbot, window):
    fresh(window, "train.py")
    asked: list[str] = []
    tree = window.tree
    tree.ask_name = lambda title, label, initial="": asked.append(initial)  # answers None: no rename
    tree.select_path(window.project.root / "ugly.py")
    tree.setFocus()
    wait_for(tree.hasFocus, what="the Explorer's focus")
    qtbot.keyClick(tree, Qt.Key.Key_F2)
    assert asked == ["ugly.py"]
    assert not isinstance(QApplication.activeModalWidget(), QInputDialog)
