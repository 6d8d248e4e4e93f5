"""A new user's walk through the console, code intelligence and debugger, with screenshots.

Builds the project window in this process as the app does, shows it on a real X display and
acts as a person would: types into the editor at a person's pace, presses F12, runs commands
from the window's registry, and grabs the screen after each step::

    workbench new --template digits /tmp/walk
    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/walkthrough_ide.py \\
        /tmp/walk docs/screenshots/console-lsp-debug [STEPS]

STEPS (default all) is a comma-separated subset of 1-6:
1 completion after ``torch.nn.``; 2 signature help of ``nn.Conv2d(``; 3 a typo underlined and in
Problems; 4 F12 on ``count_parameters`` opens model.py there; 5 Run File in Console on data.py
and the tensors' shapes in the Variables view; 6 Debug Training Run stopped at a breakpoint
after the loss, the loss read in the Variables view and the debug console.
The edits are undone before the window closes, so the project can be walked again.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

if len(sys.argv) < 3:
    raise SystemExit(__doc__)
PROJECT = Path(sys.argv[1]).resolve()
OUT = Path(sys.argv[2]).resolve()
STEPS = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else {"1", "2", "3", "4", "5", "6"}
SIZE = (1400, 900)
KEY_GAP_MS = 120  # a person typing about eight characters a second

# A new user: no saved layout, recent projects or settings of this machine's user.
scratch = Path(tempfile.mkdtemp(prefix="workbench-walk-"))
os.environ.setdefault("WORKBENCH_CONFIG_DIR", str(scratch / "config"))
os.environ.setdefault("WORKBENCH_RUNTIME_DIR", str(scratch / "run"))

from PySide6.QtCore import QEventLoop, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication, QDockWidget  # noqa: E402

app = QApplication(["workbench"])

from workbench.project import load_project  # noqa: E402
from workbench.qt.paint import mark_first_paint  # noqa: E402
from workbench.ui.project_window import ProjectWindow  # noqa: E402

START = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - START:7.2f}] {message}", flush=True)


def wait_for(condition, what: str, timeout: float = 90.0):
    """The first truthy ``condition()``, the window's events going on meanwhile."""
    began = time.monotonic()
    while True:
        value = condition()
        if value:
            log(f"  {what}: after {time.monotonic() - began:.2f} s")
            return value
        if time.monotonic() - began > timeout:
            shot("timed-out")
            raise SystemExit(f"Timed out after {timeout:.0f} s waiting for {what}; see {OUT / 'timed-out.png'}.")
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.01)


def shot(name: str) -> None:
    """The screen under the window (completion lists and tips are windows of their own)."""
    QTest.qWait(300)  # the last paint reaches the screen
    OUT.mkdir(parents=True, exist_ok=True)
    frame = window.frameGeometry()
    picture = QApplication.primaryScreen().grabWindow(0, frame.x(), frame.y(), frame.width(), frame.height())
    path = OUT / f"{name}.png"
    if not picture.save(str(path)):
        raise SystemExit(f"Could not write {path}: check that its folder is writable.")
    log(f"  saved {path} ({path.stat().st_size // 1024} KiB)")


def type_slowly(widget, text: str) -> None:
    for character in text:
        QTest.keyClicks(widget, character)
        QTest.qWait(KEY_GAP_MS)


def dock(title_start: str) -> QDockWidget:
    return next(d for d in window.findChildren(QDockWidget) if d.windowTitle().startswith(title_start))


def line_of(tab, text: str) -> int:
    return next(number for number, line in enumerate(tab.text().splitlines(), 1) if text in line)


def clear_line(tab, line: int) -> None:
    tab.set_cursor_position(line, 1)
    QTest.keyClick(tab.editor, Qt.Key.Key_End, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(tab.editor, Qt.Key.Key_Delete)


def close_completions(tab) -> None:
    if tab.editor.completions_shown():
        QTest.keyClick(tab.editor.completion_popup.view, Qt.Key.Key_Escape)


window = ProjectWindow(load_project(PROJECT))
window.resize(*SIZE)
window.move(0, 0)
mark_first_paint(window, "project")
window.show()
window.raise_()
window.activateWindow()
wait_for(lambda: window.capabilities_installed, "the capabilities installed")

from workbench.lsp.widgets import controller_of  # noqa: E402 (installed with the window)

language = controller_of(window)
train = window.open_file(PROJECT / "train.py")
if train.is_modified():
    raise SystemExit(f"{train.path} has unsaved edits kept from an earlier window: save or revert them first.")
original = train.text()
wait_for(lambda: language.status.state == "running", "the language server running")
wait_for(window.isActiveWindow, "the window active")
train.editor.setFocus()
blank = line_of(train, "from model import count_parameters") + 1

if "1" in STEPS:
    log("1. completion after torch.nn.")
    train.set_cursor_position(blank, 1)
    QTest.keyClick(train.editor, Qt.Key.Key_Return)
    train.set_cursor_position(blank, 1)
    type_slowly(train.editor, "torch.nn.")
    wait_for(lambda: "Conv2d" in [item.text for item in train.editor.completions_shown()], "torch.nn's members listed")
    shot("1-completion")

if "2" in STEPS:
    log("2. signature help of nn.Conv2d(")
    close_completions(train)
    clear_line(train, blank)
    listed_while_typing = 0
    for character in "layer = nn.Conv2d(":
        type_slowly(train.editor, character)
        listed_while_typing = max(listed_while_typing, len(train.editor.completions_shown()))
    log(f"  the longest list while typing: {listed_while_typing} items")
    link = language.link_for(train.path)
    wait_for(link.signature_shown, "signature help")
    type_slowly(train.editor, "1, ")
    wait_for(lambda: link.signature_popup.parameter == "out_channels", "the second parameter in bold")
    shot("2-signature")
    QTest.keyClick(train.editor, Qt.Key.Key_Escape)

if "3" in STEPS:
    log("3. a typo")
    from workbench.lsp.widgets.problems_panel import ProblemsPanel

    close_completions(train)
    clear_line(train, blank)
    type_slowly(train.editor, "pritn(torch.__version__)")
    close_completions(train)
    wait_for(lambda: [d for d in train.diagnostics() if "pritn" in d.message], "the typo underlined")
    problems = dock("Problems")
    problems.show()
    problems.raise_()
    panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
    wait_for(lambda: any("pritn" in d.message for _, d in panel.problems()), "the typo in Problems")
    shot("3-problems")

if STEPS & {"1", "2", "3"}:
    for _ in range(500):  # Ctrl+Z as a person would, back to the file as it was
        if train.text() == original:
            break
        QTest.keyClick(train.editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        QApplication.processEvents()
    if train.text() != original:
        raise SystemExit("Undo did not bring train.py back to its text on disk.")
    log("  the edits undone")
    if "3" in STEPS:
        wait_for(lambda: not any("pritn" in d.message for _, d in panel.problems()), "the typo gone from Problems")

if "4" in STEPS:
    log("4. F12 on count_parameters")
    use = line_of(train, "count_parameters(net)")
    column = train.text().splitlines()[use - 1].index("count_parameters(net)") + 4
    train.set_cursor_position(use, column)
    train.editor.setFocus()
    QTest.keyClick(train.editor, Qt.Key.Key_F12)
    wait_for(lambda: getattr(window.current_editor(), "path", Path()).name == "model.py", "model.py opened")
    model_tab = window.current_editor()
    wait_for(lambda: "def count_parameters" in model_tab.text().splitlines()[model_tab.cursor_position()[0] - 1],
             "the caret on the definition", timeout=10)
    shot("4-definition")

if "5" in STEPS:
    log("5. Run File in Console on data.py")
    from workbench.console.widgets import panel_of

    window.open_file(PROJECT / "data.py")
    window.commands.execute("console.runFile")
    consoles = panel_of(window)
    wait_for(lambda: consoles.current() is not None and "splits" in {v.name for v in consoles.current().variables},
             "the script's variables", timeout=180)
    view = consoles.variables
    for path in (("splits",), ("splits", "train"), ("splits", "train", "tensors")):
        row = wait_for(lambda: view.item_for(*path), "the row " + ".".join(path), timeout=10)
        row.setExpanded(True)
    view.setCurrentItem(row.child(0))
    for index in range(row.childCount()):
        log(f"  splits.train.tensors[{index}]: {[row.child(index).text(c) for c in range(4)]}")
    shot("5-console")

if "6" in STEPS:
    log("6. Debug Training Run, stopped after the loss")
    from workbench.debug.widgets.debug_panel import DebugPanel

    train = window.open_file(PROJECT / "train.py")
    line = line_of(train, "lr = scheduler.get_last_lr()")  # the line after the loss is computed
    train.set_cursor_position(line, 1)
    debug_panel = window.findChild(DebugPanel, "debug-panel")
    debugger = debug_panel.controller
    # Breakpoints are kept per project: a second walk finds the first one's.
    if not any(b.line == line for b in debugger.breakpoints_in(train.path)):
        window.commands.execute("debug.toggleBreakpoint")
    window.commands.execute("debug.debugTraining")
    wait_for(lambda: debugger.stopped, "stopped at the breakpoint", timeout=240)
    wait_for(lambda: "loss" in debug_panel.variables.loaded_names(), "the frame's locals", timeout=60)
    local_rows = debug_panel.variables.topLevelItem(0)
    loss_row = next(local_rows.child(i) for i in range(local_rows.childCount())
                    if local_rows.child(i).text(0) == "loss")
    debug_panel.variables.setCurrentItem(loss_row)
    debug_panel.variables.scrollToItem(loss_row)
    log(f"  loss: {[loss_row.text(c) for c in range(3)]}")
    debug_panel.console.input.setFocus()
    type_slowly(debug_panel.console.input, "loss.shape, loss.item()")
    QTest.keyClick(debug_panel.console.input, Qt.Key.Key_Return)
    wait_for(lambda: "torch.Size" in debug_panel.console.text(), "the debug console's answer", timeout=30)
    shot("6-debug")
    window.commands.execute("debug.stop")
    wait_for(lambda: not debugger.active, "the debug session ended", timeout=30)

log("closing")
window.close()
language.shut_down(wait=10)
