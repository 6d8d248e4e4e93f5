"""A window whose language server cannot run says so once, in the Problems dock, and the
editor goes on working; other checkers' problems (.hparams) are listed there too; and nothing
of the language server is loaded on the window's way to its first paint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.lsp.conftest import TRAIN, close_window, make_project, open_window, wait_for
from workbench.lsp.widgets import controller_of
from workbench.lsp.widgets.problems_panel import ProblemsPanel


def test_a_missing_server_is_said_once_in_problems_and_the_editor_still_works(qtbot, tmp_path):
    root = make_project(tmp_path / "p", '[project]\nname = "p"\n\n[lsp]\ncommand = ["/no/such/python", "-m", "pylsp"]\n')
    window = open_window(root)
    try:
        controller = controller_of(window)
        failures: list[str] = []
        controller.sig_status_changed.connect(lambda status: failures.append(status.message)
                                              if status.state == "failed" else None)
        tab = window.open_file(root / "train.py")
        wait_for(lambda: failures, what="the failure")
        panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
        wait_for(panel.banner.isVisible, what="the banner")
        assert "/no/such/python was not found" in panel.banner_label.text()
        assert "pip install python-lsp-server" in panel.banner_label.text()
        status = window.findChild(type(panel.summary), "lsp-status")
        assert status.isVisible() and status.width() > 0 and "not running" in status.full_text()

        window.open_file(root / "model.py")  # another Python file: no second message
        tab = window.open_file(root / "train.py")
        tab.set_cursor_position(len(TRAIN.splitlines()) + 1, 1)
        qtbot.keyClicks(tab.editor, "layer = nn.")
        qtbot.keyClick(tab.editor, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
        qtbot.wait(200)
        assert tab.text().endswith("layer = nn.") and tab.editor.completions_shown() == []
        window.commands.execute("lsp.goToDefinition")
        qtbot.wait(200)
        assert len(failures) == 1
        assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]

        panel.restart_button.click()  # still missing: the same one message again, nothing more
        wait_for(lambda: len(failures) == 2, what="the second try")
        assert panel.banner.isVisible() and "/no/such/python" in panel.banner_label.text()
        tab.save()
        assert (root / "train.py").read_text().endswith("layer = nn.")
    finally:
        close_window(window)


def test_a_project_python_that_is_not_there_is_noted_in_problems(qtbot, tmp_path):
    root = make_project(tmp_path / "p", '[project]\nname = "p"\n\n[python]\ninterpreter = "envs/none/bin/python"\n'
                                        '\n[lsp]\ncommand = ["/no/such/python"]\n')
    window = open_window(root)
    try:
        panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
        wait_for(panel.settings_note.isVisible, what="the note")
        assert "envs/none/bin/python" in panel.settings_note.text()
        assert "[python] interpreter" in panel.settings_note.text()
    finally:
        close_window(window)


def test_problems_lists_the_hparams_checker_beside_the_language_server(qtbot, tmp_path):
    root = make_project(tmp_path / "p", '[project]\nname = "p"\n\n[training]\nscript = "train.py"\n'
                                        'hparams = "run.hparams"\n\n[lsp]\ncommand = ["/no/such/python"]\n')
    (root / "run.hparams").write_text("num_epochs=3\nlearnin_rate=0.1\n")
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow

    window = ProjectWindow(load_project(root))
    window.show()
    window.install_capabilities(("workbench.training.widgets:install", "workbench.lsp.widgets:install"))
    try:
        tab = window.open_file(root / "run.hparams")
        wait_for(tab.diagnostics, what="the .hparams checker")
        panel = window.findChild(ProblemsPanel, "lsp-problems-panel")
        wait_for(lambda: panel.problems(), what="the Problems dock")
        [(path, problem)] = panel.problems()
        assert path.name == "run.hparams" and "learning_rate" in problem.message
        assert panel.summary.text() == "1 error in 1 open file"
        window.close_tab(window.tabs.indexOf(tab))
        wait_for(lambda: panel.summary.text() == "No problems in the open files.", what="the list to empty")
    finally:
        close_window(window)


PROBE = textwrap.dedent('''
    import json, sys
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow
    window = ProjectWindow(load_project(sys.argv[1]))
    window.show()
    app.processEvents()
    before_install = sorted(m for m in sys.modules if m.startswith(("workbench.lsp", "sansio_lsp_client", "pydantic",
                                                                   "pylsp", "jedi")))
    window.install_capabilities(("workbench.lsp.widgets:install",))
    from workbench.lsp.widgets import controller_of
    controller = controller_of(window)
    installed = sorted(m for m in sys.modules if m.startswith(("sansio_lsp_client", "pydantic", "pylsp", "jedi",
                                                              "workbench.lsp.protocol")))
    started_without_python = controller.session is not None
    window.open_file(sys.argv[1] + "/train.py")
    started = controller.session is not None and controller.session.started
    controller.shut_down(wait=10)
    print(json.dumps({"before_install": before_install, "installed": installed,
                      "started_without_python": started_without_python, "started": started}))
''')


def test_nothing_of_the_language_server_loads_before_a_python_file_opens(tmp_path):
    root = make_project(tmp_path / "p", '[project]\nname = "p"\nmain = "notes.md"\n')
    (root / "notes.md").write_text("# notes\n")
    result = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"before_install": [], "installed": [], "started_without_python": False, "started": True}
