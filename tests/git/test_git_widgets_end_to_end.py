"""What a new user does with Git in one project window, all through the window: edit files,
stage a single hunk in the diff tab, commit, a git-flow feature, push to a remote over SSH,
stash and pop, and resolve a merge conflict."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QDockWidget

from tests.git.conftest import git
from tests.git.test_git_widgets_support import (  # noqa: F401
    click_action_column, finish, open_window, panel_of, session_of, wait_for)
from tests.services.sshd import sshd_server  # noqa: F401

TRAIN = "".join(f"line {n}\n" for n in range(1, 21)).replace("line 10\n", "lr = 0.1\n")

pytestmark = pytest.mark.slow


def _click_name(qtbot, panel, item) -> None:
    rect = panel.files.visualItemRect(item)
    qtbot.mouseClick(panel.files.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 20, rect.center().y()))


def test_a_new_user_works_through_git_in_one_window(make_repo, tmp_path, open_window, qtbot, monkeypatch,
                                                      sshd_server):  # noqa: F811
    root = make_repo(files={"train.py": TRAIN, "README.md": "# digits\n"})
    window = open_window(root)
    session, panel = session_of(window), panel_of(window)
    window.findChild(QDockWidget, "dock-scm").raise_()

    # 1. Two edits far apart in train.py, saved in the editor: one file, two hunks.
    tab = window.open_file(root / "train.py")
    tab.set_cursor_position(1, 1)
    window.commands.execute("editor.insertText", text="import torch\n")
    tab.set_cursor_position(21, 1)
    window.commands.execute("editor.insertText", text="print('done')\n")
    window.commands.execute("file.save")
    wait_for(qtbot, lambda: panel.group_paths("unstaged") == ["train.py"])

    # 2. Select the file: its diff opens; stage only the first hunk there.
    _click_name(qtbot, panel, panel.file_item("train.py", "unstaged"))
    from workbench.git.widgets.diff_view import DiffView

    wait_for(qtbot, lambda: isinstance(window.tabs.currentWidget(), DiffView)
             and window.tabs.currentWidget().diff is not None)
    diff_tab = window.tabs.currentWidget()
    assert diff_tab.title == "train.py (Working Tree)" and diff_tab.hunk_count() == 2
    diff_tab.stage_hunk(0)
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["train.py"] and not diff_tab.is_busy)
    assert panel.group_paths("unstaged") == ["train.py"]  # the second hunk is still to stage
    assert "+import torch" in git(root, "diff", "--cached") and "done" not in git(root, "diff", "--cached")

    # 3. Commit it with Ctrl+Enter.
    panel.message.setFocus()
    qtbot.keyClicks(panel.message, "Import torch")
    qtbot.keyClick(panel.message, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    wait_for(qtbot, lambda: git(root, "log", "-1", "--format=%s").strip() == "Import torch")
    wait_for(qtbot, lambda: panel.group_paths("staged") == [])
    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Say when training is done"))

    # 4. A git-flow feature, started and finished.
    finish(qtbot, window.commands.execute("git.flow.init", master="main"))
    finish(qtbot, window.commands.execute("git.flow.startFeature", name="tiny-cnn"))
    (root / "model.py").write_text("class TinyCNN:\n    pass\n")
    wait_for(qtbot, lambda: session.status.branch == "feature/tiny-cnn")
    session.refresh(force=True)
    wait_for(qtbot, lambda: panel.group_paths("untracked") == ["model.py"])
    click_action_column(qtbot, panel, panel.file_item("model.py", "untracked"))
    wait_for(qtbot, lambda: panel.group_paths("staged") == ["model.py"])
    finish(qtbot, window.commands.execute("git.commit", message="Add a tiny CNN"))
    finish(qtbot, window.commands.execute("git.flow.finishFeature", name="tiny-cnn"))
    wait_for(qtbot, lambda: session.status.branch == "develop")
    assert "Add a tiny CNN" in git(root, "log", "--format=%s", "develop")

    # 5. Push develop to a bare repository over SSH; its first push sets the upstream.
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    # The key to use is the repository's own setting, as a user would configure it.
    git(root, "config", "core.sshCommand", sshd_server.ssh_command_for(sshd_server.client_key, port=None))
    finish(qtbot, window.commands.execute("git.addRemote", name="origin", url=sshd_server.url(remote)))
    result = finish(qtbot, window.commands.execute("git.push"))
    assert result.upstream_set and result.remote == "origin"
    wait_for(qtbot, lambda: session.status.upstream == "origin/develop"
             and (session.status.ahead, session.status.behind) == (0, 0))
    assert git(remote, "log", "-1", "--format=%s", "develop").strip().startswith("Merge branch 'feature/tiny-cnn'") \
        or "Add a tiny CNN" in git(remote, "log", "--format=%s", "develop")

    # 6. Stash work in progress, untracked notes included, and pop it back.
    (root / "README.md").write_text("# digits\n\nA tiny CNN.\n")
    (root / "notes.txt").write_text("try lr 0.05\n")
    finish(qtbot, window.commands.execute("git.stashIncludeUntracked", message="wip"))
    wait_for(qtbot, lambda: session.status.is_clean)
    assert not (root / "notes.txt").exists()
    finish(qtbot, window.commands.execute("git.stashPopLatest"))
    wait_for(qtbot, lambda: panel.group_paths("untracked") == ["notes.txt"]
             and panel.group_paths("unstaged") == ["README.md"])
    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Notes"))

    # 7. A conflicting merge (run in a terminal), resolved in the conflict view, then committed.
    finish(qtbot, window.commands.execute("git.createBranch", name="tuning"))
    (root / "train.py").write_text((root / "train.py").read_text().replace("lr = 0.1", "lr = 0.01"))
    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Lower lr"))
    finish(qtbot, window.commands.execute("git.switchBranch", name="develop"))
    (root / "train.py").write_text((root / "train.py").read_text().replace("lr = 0.1", "lr = 0.5"))
    finish(qtbot, window.commands.execute("git.stageAll"))
    finish(qtbot, window.commands.execute("git.commit", message="Raise lr"))
    git(root, "merge", "tuning", check=False)
    session.refresh(force=True)
    wait_for(qtbot, lambda: panel.banner.isVisible() and panel.group_paths("conflicted") == ["train.py"])
    assert panel.banner_label.text() == "Merging tuning into develop: 1 conflict left"

    _click_name(qtbot, panel, panel.file_item("train.py", "conflicted"))
    from workbench.git.widgets.conflict_view import ConflictView

    wait_for(qtbot, lambda: isinstance(window.tabs.currentWidget(), ConflictView)
             and window.tabs.currentWidget().selected_path == "train.py"
             and window.tabs.currentWidget().snapshot is not None)
    conflict_tab = window.tabs.currentWidget()
    conflict_tab.take_file("theirs")
    wait_for(qtbot, lambda: panel.group_paths("conflicted") == [] and panel.continue_button.isEnabled())
    panel.continue_button.click()
    wait_for(qtbot, lambda: not panel.banner.isVisible() and not session.state.in_progress)
    assert "lr = 0.01" in (root / "train.py").read_text()
    assert git(root, "log", "-1", "--format=%P").count(" ") == 1  # a merge commit
    assert git(root, "status", "--porcelain") == ""

    window.findChild(QDockWidget, "dock-scm").raise_()
    qtbot.wait(50)
    window.grab().save("/tmp/scm.png")
