from workbench.project import RecentProjects, create_from_template
from workbench.ui.welcome_window import WelcomeWindow


def test_recent_projects_are_listed_and_open_on_activation(qtbot, tmp_path):
    project = create_from_template("empty", tmp_path / "notes").root
    recent = RecentProjects(tmp_path / "config")
    recent.add(project, "notes")
    window = WelcomeWindow(recent)
    qtbot.addWidget(window)
    assert "notes" in window.recent_list.item(0).text()
    with qtbot.waitSignal(window.sig_open_project) as opened:
        window.recent_list.itemActivated.emit(window.recent_list.item(0))
    assert opened.args == [str(project)]


def test_a_crashed_window_is_offered_for_reopening(qtbot, tmp_path):
    window = WelcomeWindow(RecentProjects(tmp_path / "config"))
    qtbot.addWidget(window)
    entry = {"window_id": "w1", "pid": 42, "kind": "project", "project": "/p/digits", "state": "crashed"}
    window.set_windows([{**entry, "window_id": "w0", "state": "ready", "project": "/p/other"}, entry])
    window.offer_reopen(entry)
    assert not window.notice.isHidden() and "digits" in window.notice.text()
    assert window.reopen_button.isEnabled()
    with qtbot.waitSignal(window.sig_reopen_window) as reopen:
        window.reopen_button.click()
    assert reopen.args == ["w1"]
    window.windows_list.setCurrentRow(0)
    assert not window.reopen_button.isEnabled()


def test_the_crash_notice_goes_when_the_crashed_window_leaves_the_list(qtbot, tmp_path):
    window = WelcomeWindow(RecentProjects(tmp_path / "config"))
    qtbot.addWidget(window)
    digits = {"window_id": "w1", "pid": 42, "kind": "project", "project": "/p/digits", "state": "crashed"}
    notes = {"window_id": "w2", "pid": 43, "kind": "project", "project": "/p/notes", "state": "crashed"}
    window.set_windows([digits, notes])
    window.offer_reopen(digits)
    window.offer_reopen(notes)
    assert "digits" in window.notice.text() and "notes" in window.notice.text()

    # digits was opened again (from the recent list, `workbench open` …): a new window, no crash.
    window.set_windows([notes, {**digits, "window_id": "w3", "pid": 44, "state": "ready"}])
    assert not window.notice.isHidden()
    assert "digits" not in window.notice.text() and "notes" in window.notice.text()
    window.set_windows([{**digits, "window_id": "w3", "pid": 44, "state": "ready"}])
    assert window.notice.isHidden()
    assert window.describe()["notice"] == ""


def test_quit_workbench_is_in_the_welcome_windows_file_menu(qtbot, tmp_path):
    window = WelcomeWindow(RecentProjects(tmp_path / "config"))
    qtbot.addWidget(window)
    assert [a.text() for a in window.menuBar().actions()] == ["File"]  # there from the first paint
    window.install_commands()
    assert [a.text() for a in window.menuBar().actions() if a.isVisible()] == ["File"]
    file_menu = window.menuBar().actions()[0].menu()
    assert [a.text() for a in file_menu.actions() if not a.isSeparator()] == [
        "New Project from Template…", "Open Folder…", "Quit Workbench"]
    assert window.menus.actions["workbench.quit"].shortcut().toString() == "Ctrl+Q"
    with qtbot.waitSignal(window.sig_quit_requested):
        window.commands.execute("workbench.quit")


def test_open_windows_are_grouped_by_project_and_tool_windows_named_by_tool_and_model(qtbot, tmp_path):
    window = WelcomeWindow(RecentProjects(tmp_path / "config"))
    qtbot.addWidget(window)
    window.set_windows([
        {"window_id": "t1", "pid": 11, "kind": "tool", "project": "/p/digits", "state": "ready",
         "title": "Quantize — runs/r1/outputs/model.onnx → model.int8.onnx"},
        {"window_id": "w2", "pid": 12, "kind": "project", "project": "/p/notes", "state": "ready"},
        {"window_id": "t2", "pid": 13, "kind": "tool", "project": "/p/digits", "state": "ready",
         "title": "Inspect — runs/r1/outputs/model.onnx"},
        {"window_id": "w1", "pid": 14, "kind": "project", "project": "/p/digits", "state": "ready"},
        {"window_id": "t3", "pid": 15, "kind": "tool", "project": None, "state": "starting", "title": ""},
    ])
    assert window.describe()["windows"] == [
        "digits — /p/digits",
        "    Project window · ready",
        "    Inspect — model.onnx · ready",
        "    Quantize — model.onnx → model.int8.onnx · ready",
        "notes — /p/notes",
        "    Project window · ready",
        "Without a project",
        "    Tool window · starting",
    ]
    quantize = next(window.windows_list.item(i) for i in range(window.windows_list.count())
                    if "Quantize" in window.windows_list.item(i).text())
    assert quantize.toolTip().startswith("Quantize — runs/r1/outputs/model.onnx → model.int8.onnx\n")
    window.windows_list.setCurrentRow(0)  # a heading cannot be chosen
    assert window.windows_list.currentItem() is None or window._selected_window() is None
    assert not window.reopen_button.isEnabled()
