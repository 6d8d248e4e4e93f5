"""What keeps the panel current and readable: full refreshes after big operations, the watcher on
.git, the placeholder and the elided branch names, and committing with nothing staged."""

from __future__ import annotations

from tests.git.conftest import git
from tests.git.test_git_widgets_support import finish, open_window, panel_of, session_of, wait_for  # noqa: F401
from workbench.git.widgets.branch_button import BranchButton


def _settled(session) -> bool:
    """The status is read and nothing more is on its way: no refresh running or asked for, no
    burst of watcher events being waited out."""
    return (session.status is not None and not session.refreshing and not session._pending_requested
            and not session._refresh_timer.isActive() and not session._watch_timer.isActive())


def _spy_on_refreshes(session):
    calls = []
    refresh = session.cache.refresh

    def spy(paths=None, **kwargs):
        calls.append(None if paths is None else list(paths))
        return refresh(paths, **kwargs)

    session.cache.refresh = spy
    return calls


def test_staging_many_paths_refreshes_the_whole_status_instead_of_a_huge_pathspec(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    for i in range(250):
        (root / f"f{i:03}.txt").write_text(f"{i}\n")
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: len(panel.group_paths("untracked")) == 250)
    calls = _spy_on_refreshes(session)

    finish(qtbot, panel.stage(panel.group_paths("untracked")))
    wait_for(qtbot, lambda: len(panel.group_paths("staged")) == 250 and not session.refreshing)
    assert calls and all(paths is None for paths in calls)

    calls.clear()
    finish(qtbot, panel.stage(["a.py"]))
    wait_for(qtbot, lambda: calls)
    assert calls[0] == ["a.py"]  # a few paths: still only those


def test_the_placeholder_follows_the_branch(make_repo, open_window, qtbot):
    window = open_window(make_repo(files={"a.py": "a\n"}))
    panel = panel_of(window)
    assert panel.message.placeholderText() == "Message (Ctrl+Enter to commit on main)"
    finish(qtbot, window.commands.execute("git.createBranch", name="experiment"))
    wait_for(qtbot, lambda: panel.message.placeholderText() == "Message (Ctrl+Enter to commit on experiment)")


def test_the_placeholder_is_set_in_a_new_repository(tmp_path, open_window, qtbot):
    folder = tmp_path / "fresh"
    folder.mkdir()
    window = open_window(folder)
    panel = panel_of(window)
    finish(qtbot, window.commands.execute("git.init"))
    wait_for(qtbot, lambda: panel.message.placeholderText().startswith("Message (Ctrl+Enter to commit on ")
             and "detached" not in panel.message.placeholderText())


def test_a_long_branch_name_is_elided_and_whole_in_the_tooltip(make_repo, open_window, qtbot):
    name = "feature/" + "a-very-long-branch-name-" * 10 + "end"
    window = open_window(make_repo(files={"a.py": "a\n"}))
    session, panel = session_of(window), panel_of(window)
    button = window.findChild(BranchButton)
    finish(qtbot, window.commands.execute("git.createBranch", name=name))
    wait_for(qtbot, lambda: session.status.branch == name and name in button.toolTip())

    assert "…" in button.text()
    assert button.sizeHint().width() < 400
    assert name in panel.branch_label.toolTip() and name not in panel.branch_label.text()
    assert panel.minimumSizeHint().width() < 400


def test_changes_made_in_a_terminal_show_without_a_refresh(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("changed\n")
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: panel.group_paths("unstaged") == ["a.py"])

    git(root, "add", "a.py")  # .git/index replaced
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["a.py"])
    git(root, "switch", "-q", "-c", "elsewhere")  # HEAD replaced
    wait_for(qtbot, lambda: session.status.branch == "elsewhere")
    git(root, "commit", "-qm", "From the terminal")  # index and refs/heads again: still watched
    wait_for(qtbot, lambda: panel.group_paths("staged") == [])


def test_a_burst_of_changes_gives_one_refresh(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n", "b.py": "b\n"})
    window = open_window(root)
    session = session_of(window)
    wait_for(qtbot, lambda: _settled(session))  # the window's first status, read before counting
    # The refreshes counted are the watcher's: the periodic one (every 5 s while the window is
    # active, from the moment the repository is found) could land in the middle on a slow machine.
    session._periodic_timer.stop()
    calls = _spy_on_refreshes(session)
    for name in ("a.py", "b.py"):
        (root / name).write_text("x\n")
        git(root, "add", name)
    git(root, "commit", "-qm", "Burst")
    wait_for(qtbot, lambda: None in calls and _settled(session))
    qtbot.wait(800)  # a late watcher event would start another debounce meanwhile
    wait_for(qtbot, lambda: _settled(session))
    assert calls.count(None) == 1  # (a saved file may still refresh its own path)


def test_commit_with_nothing_staged_offers_to_stage_everything(make_repo, open_window, qtbot):
    root = make_repo(files={"a.py": "a\n"})
    (root / "a.py").write_text("changed\n")
    (root / "new.py").write_text("new\n")
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    wait_for(qtbot, lambda: panel.commit_button.isEnabled())

    session.confirm = lambda question: session.questions.append(question) and False
    panel.message.setPlainText("Everything")
    assert panel.commit() is None
    assert session.questions == ["There are no staged changes. Stage all changes and commit?"]

    session.confirm = lambda question: True
    finish(qtbot, panel.commit())
    assert git(root, "status", "--porcelain") == ""
    assert sorted(git(root, "show", "--name-only", "--format=", "HEAD").split()) == ["a.py", "new.py"]
