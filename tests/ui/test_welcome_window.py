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
