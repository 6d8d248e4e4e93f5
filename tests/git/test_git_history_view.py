"""The history view over real repositories: paging, graph lanes, commit details, file history."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.git.conftest import git
from workbench.git.graph import layout_graph
from workbench.git.history import log
from workbench.git.repository import open_repository
from workbench.git.widgets.graph_delegate import GRAPH_ROLE
from workbench.git.widgets.history_view import ENTRY_ROLE, HistoryModel, HistoryView
from workbench.qt.tasks import TaskRunner


class FakeWindow:
    """The part of the project window the Git views use."""

    def __init__(self, root: Path | None = None):
        self.tasks = TaskRunner()
        self.tabs: list[tuple[object, str, str]] = []
        self.errors: list[str] = []
        self.events: list[tuple[str, object]] = []
        self.opened: list[tuple[Path, int | None]] = []

    def add_tab(self, widget, title, tooltip=""):
        self.tabs.append((widget, title, tooltip))

    def add_dock(self, dock_id, title, widget, area=None, shortcut=None):
        self.tabs.append((widget, title, dock_id))

    def show_error(self, message):
        self.errors.append(message)

    def handle_event(self, event, data):
        self.events.append((event, data))

    def open_file(self, path, line=None, column=1):
        self.opened.append((Path(path), line))


def commit_file(root: Path, name: str, text: str, message: str) -> None:
    (root / name).write_text(text)
    git(root, "add", name)
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def merged_repo(make_repo):
    """main: initial, on main, merge; feature: two commits merged into main."""
    root = make_repo("merged", {"a.txt": "one\n"})
    git(root, "checkout", "-q", "-b", "feature")
    commit_file(root, "feature.txt", "f1\n", "feature one")
    commit_file(root, "feature.txt", "f1\nf2\n", "feature two")
    git(root, "checkout", "-q", "main")
    commit_file(root, "a.txt", "one\ntwo\n", "on main")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge branch 'feature'", "feature")
    git(root, "tag", "v1.0")
    return root


def wait_loaded(qtbot, view: HistoryView, count: int) -> None:
    qtbot.waitUntil(lambda: len(view.model.entries) >= count and not view.model.loading)


def test_history_of_a_merge_shows_the_graph_lanes_of_layout_graph(qtbot, merged_repo):
    repo = open_repository(merged_repo)
    window = FakeWindow()
    view = HistoryView(window, repo)
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 5)

    model = view.model
    assert model.columns[0] == "graph"
    assert [model.index(r, 1).data() for r in range(model.rowCount())][0] == "Merge branch 'feature'"
    expected = layout_graph((e.sha, e.parents) for e in log(repo, all_refs=True, limit=500))
    rows = [model.index(r, 0).data(GRAPH_ROLE) for r in range(model.rowCount())]
    assert rows == expected
    assert max(row.column for row in rows) == 1  # the feature branch has a lane of its own
    merge = model.index(0, 0).data(ENTRY_ROLE)
    assert merge.is_merge and "v1.0" in merge.tags and "main" in merge.refs
    assert model.exhausted and not model.canFetchMore()

    view.resize(900, 500)
    view.show()
    qtbot.waitUntil(lambda: view.details is not None)
    view.grab().save("/tmp/history.png")


def test_history_loads_the_next_page_when_the_view_asks_for_more(qtbot, make_repo):
    root = make_repo("long", {"n.txt": "0\n"})
    for number in range(1, 8):
        commit_file(root, "n.txt", f"{number}\n", f"change {number}")
    model = HistoryModel(open_repository(root), TaskRunner(), page_size=3)
    with qtbot.waitSignal(model.sig_page_loaded):
        model.reload()
    assert model.rowCount() == 3 and model.canFetchMore()

    with qtbot.waitSignal(model.sig_page_loaded):
        model.fetchMore()
    assert model.rowCount() == 6 and model.canFetchMore()
    with qtbot.waitSignal(model.sig_page_loaded):
        model.fetchMore()
    assert model.rowCount() == 8 and not model.canFetchMore()
    summaries = [e.summary for e in model.entries]
    assert summaries == [f"change {n}" for n in range(7, 0, -1)] + ["initial"]
    # The graph after paging equals the graph of the whole log at once.
    whole = layout_graph((e.sha, e.parents) for e in log(open_repository(root)))
    assert model.graph == whole


def test_the_view_fetches_pages_until_its_viewport_is_full(qtbot, make_repo):
    root = make_repo("short-pages", {"n.txt": "0\n"})
    for number in range(1, 5):
        commit_file(root, "n.txt", f"{number}\n", f"change {number}")
    view = HistoryView(FakeWindow(), open_repository(root), page_size=2)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    wait_loaded(qtbot, view, 5)
    assert view.model.exhausted and view.status.text() == "5 commits"


def test_selecting_a_commit_shows_its_message_and_changed_files(qtbot, merged_repo):
    window = FakeWindow()
    view = HistoryView(window, open_repository(merged_repo))
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 5)
    feature_two = next(e for e in view.model.entries if e.summary == "feature two")

    with qtbot.waitSignal(view.sig_commit_selected):
        assert view.select_commit(feature_two.short_sha)
    qtbot.waitUntil(lambda: view.details is not None and view.details.sha == feature_two.sha)
    assert [(f.status, f.path) for f in view.changed_files()] == [("M", "feature.txt")]
    assert view.files.topLevelItemCount() == 1
    assert "feature two" in view.message.toPlainText()
    assert feature_two.sha in view.message.toPlainText()


def test_double_clicking_a_changed_file_opens_the_diff_editor_on_that_commit(qtbot, merged_repo, monkeypatch):
    from workbench.git.widgets import diff_view

    opened = []
    monkeypatch.setattr(diff_view, "open_commit_diff_tab", lambda *args: opened.append(args), raising=False)
    window = FakeWindow()
    repo = open_repository(merged_repo)
    view = HistoryView(window, repo)
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 5)
    feature_two = next(e for e in view.model.entries if e.summary == "feature two")
    view.select_commit(feature_two.sha)
    qtbot.waitUntil(lambda: view.details is not None and view.details.sha == feature_two.sha)

    view.files.itemActivated.emit(view.files.topLevelItem(0), 1)
    qtbot.waitUntil(lambda: bool(opened))
    assert opened == [(window, repo, "feature.txt", feature_two.parents[0], feature_two.sha)]
    assert window.tabs == [] and window.errors == []


def test_a_root_commit_is_compared_with_the_empty_tree(qtbot, make_repo, monkeypatch):
    from workbench.git.widgets import diff_view

    opened = []
    monkeypatch.setattr(diff_view, "open_commit_diff_tab", lambda *args: opened.append(args), raising=False)
    root = make_repo("rooted", {"a.txt": "a\n"})
    window = FakeWindow()
    view = HistoryView(window, open_repository(root))
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 1)
    view.select_commit(view.model.entries[0].sha)
    qtbot.waitUntil(lambda: view.files.topLevelItemCount() == 1)
    view.files.itemActivated.emit(view.files.topLevelItem(0), 1)
    qtbot.waitUntil(lambda: bool(opened))
    assert opened[0][3] == git(root, "hash-object", "-t", "tree", "/dev/null").strip()


def test_without_the_diff_editor_a_changed_file_opens_as_read_only_diff_text(qtbot, merged_repo, monkeypatch):
    from workbench.git.widgets import diff_view

    monkeypatch.delattr(diff_view, "open_commit_diff_tab", raising=False)
    monkeypatch.delattr(diff_view, "open_diff_tab", raising=False)
    window = FakeWindow()
    view = HistoryView(window, open_repository(merged_repo))
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 5)
    view.select_commit(next(e.sha for e in view.model.entries if e.summary == "feature two"))
    qtbot.waitUntil(lambda: view.files.topLevelItemCount() == 1)

    view.files.itemActivated.emit(view.files.topLevelItem(0), 1)
    qtbot.waitUntil(lambda: bool(window.tabs))
    widget, title, _ = window.tabs[-1]
    assert title.startswith("feature.txt @ ")
    assert "+f2" in widget.toPlainText()


def test_file_history_follows_a_renamed_file_and_has_no_graph(qtbot, make_repo):
    root = make_repo("renames", {"old_name.py": "x = 1\n", "other.txt": "o\n"})
    commit_file(root, "other.txt", "o2\n", "touch other")
    git(root, "mv", "old_name.py", "new_name.py")
    git(root, "commit", "-q", "-m", "rename")
    commit_file(root, "new_name.py", "x = 1\ny = 2\n", "extend")

    window = FakeWindow()
    view = HistoryView(window, open_repository(root), root / "new_name.py")
    qtbot.addWidget(view)
    wait_loaded(qtbot, view, 3)
    assert "graph" not in view.model.columns
    assert [e.summary for e in view.model.entries] == ["extend", "rename", "initial"]
    assert view.model.index(0, 0).data(GRAPH_ROLE) is None

    view.select_commit(view.model.entries[1].sha)
    qtbot.waitUntil(lambda: view.details is not None and view.details.entry.summary == "rename")
    renamed = view.changed_files()
    assert [(f.status, f.old_path, f.path) for f in renamed] == [("R", "old_name.py", "new_name.py")]


def test_the_commit_dot_of_a_selected_row_has_a_white_ring_on_the_highlight(qtbot):
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QColor, QImage, QPainter, QStandardItem, QStandardItemModel
    from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

    from workbench.git.graph import GraphRow
    from workbench.git.widgets.graph_delegate import DOT_RADIUS, GRAPH_ROLE, LANE_WIDTH, MARGIN, GraphDelegate

    model = QStandardItemModel(1, 1)
    item = QStandardItem()
    item.setData(GraphRow(sha="a" * 40, column=0, colour=0, lines=(), lines_in=(), width=1), GRAPH_ROLE)
    model.setItem(0, 0, item)
    delegate = GraphDelegate()
    highlight = QColor("#1f77d0")  # a highlight as blue as the first lane

    def ring_pixel(selected: bool) -> QColor:
        image = QImage(60, 22, QImage.Format.Format_RGB32)
        image.fill(highlight)
        option = QStyleOptionViewItem()
        option.rect = QRect(0, 0, 60, 22)
        option.state = QStyle.StateFlag.State_Enabled | (QStyle.StateFlag.State_Selected if selected
                                                         else QStyle.StateFlag.State_None)
        painter = QPainter(image)
        delegate.paint(painter, option, model.index(0, 0))
        painter.end()
        return image.pixelColor(int(MARGIN + LANE_WIDTH / 2 + DOT_RADIUS), 11)

    assert ring_pixel(True).lightness() > 200
    assert ring_pixel(False).lightness() < 150
