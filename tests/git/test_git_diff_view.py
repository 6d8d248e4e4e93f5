"""The diff editor on real repositories: staging, unstaging and discarding from the view, the
aligned side-by-side rows, intra-line marks, change navigation, and a 10,000-line diff."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.git.conftest import git
from workbench.editor.highlighting import LineLexer
from workbench.git import diff_rows as diff_rows_module
from workbench.git.diff import INDEX_VS_HEAD, WORKTREE_VS_INDEX, parse_diff
from workbench.git.diff_rows import ADDED, FILLER, HEADER, REMOVED
from workbench.git.repository import open_repository
from workbench.git.widgets import diff_view as diff_view_module
from workbench.git.widgets.diff_panes import CURRENT_HEADER, INTRALINE_BACKGROUNDS, ROW_BACKGROUNDS
from workbench.git.widgets.diff_view import INLINE, SIDE_BY_SIDE, DiffView, open_diff_tab
from workbench.qt.tasks import TaskRunner

TWENTY = "".join(f"line {i}\n" for i in range(1, 21))
# Line 2 and line 18 change: far enough apart for two hunks.
TWO_CHANGES = TWENTY.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n")


class FakeWindow:
    """The part of the project window a diff tab uses."""

    def __init__(self) -> None:
        self.tasks = TaskRunner()
        self.tabs_added: list[tuple[object, str, str]] = []
        self.errors: list[str] = []
        self.events: list[str] = []

    def add_tab(self, widget, title: str, tooltip: str = "") -> None:
        self.tabs_added.append((widget, title, tooltip))

    def show_error(self, message: str) -> None:
        self.errors.append(message)

    def handle_event(self, name: str, data: object) -> None:
        self.events.append(name)


@pytest.fixture
def window():
    fake = FakeWindow()
    yield fake
    fake.tasks.wait(5000)


def open_view(qtbot, window, root, path="a.txt", source=WORKTREE_VS_INDEX) -> DiffView:
    view = open_diff_tab(window, open_repository(root), path, source)
    # The diff arrives from a worker through the event loop, so connecting now is in time.
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        pass
    if not view.isVisible():
        qtbot.addWidget(view)
        view.resize(1000, 600)
        view.show()
        qtbot.waitExposed(view)
    return view


def wait_loaded(qtbot, view: DiffView, action) -> None:
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        action()


def two_hunk_repo(make_repo):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "a.txt").write_text(TWO_CHANGES)
    return root


def test_staging_one_hunk_from_the_view_stages_exactly_that_hunk(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    assert view.hunk_count() == 2
    wait_loaded(qtbot, view, lambda: view.stage_hunk(0))
    cached = git(root, "diff", "--cached")
    assert cached.count("@@ ") == 1
    assert "+line two" in cached and "-line 2" in cached and "eighteen" not in cached
    assert view.hunk_count() == 1
    assert [line.text for line in view.diff.hunks[0].lines if line.kind == "+"] == ["line eighteen"]
    assert window.events == ["git.index_changed"]
    assert window.errors == []


def test_staging_two_selected_lines_stages_only_those_lines(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "a.txt").write_text(TWENTY.replace("line 10\n", "line 10\nnew a\nnew b\nnew c\n"))
    view = open_view(qtbot, window, root)
    lines = view.diff.hunks[0].lines
    added = [i for i, line in enumerate(lines) if line.kind == "+"]
    assert [lines[i].text for i in added] == ["new a", "new b", "new c"]
    view.select_lines(0, [added[0], added[2]])
    wait_loaded(qtbot, view, view.stage_selected)
    cached = git(root, "diff", "--cached")
    assert [l for l in cached.splitlines() if l.startswith("+") and not l.startswith("+++")] == ["+new a", "+new c"]
    assert [l.text for l in view.diff.hunks[0].lines if l.kind == "+"] == ["new b"]


def test_the_rows_selected_in_a_pane_are_what_stage_selected_takes(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "a.txt").write_text(TWENTY.replace("line 10\n", "line 10\nnew a\nnew b\nnew c\n"))
    view = open_view(qtbot, window, root)
    pane = view.right
    index_a = [line.text for line in view.diff.hunks[0].lines].index("new a")
    row_a = pane.rows.rows.row_of_line(0, index_a)
    pane.go_to_row(row_a, select_to=row_a + 1)  # "new a" and "new b", as a mouse drag would
    wait_loaded(qtbot, view, view.stage_selected)
    cached = git(root, "diff", "--cached")
    assert [l for l in cached.splitlines() if l.startswith("+") and not l.startswith("+++")] == ["+new a", "+new b"]


def test_unstaging_a_hunk_from_the_staged_view(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    git(root, "add", "a.txt")
    view = open_view(qtbot, window, root, source=INDEX_VS_HEAD)
    assert view.title == "a.txt (Staged)" and view.hunk_count() == 2
    wait_loaded(qtbot, view, lambda: view.unstage_hunk(1))
    cached = git(root, "diff", "--cached")
    assert "+line two" in cached and "eighteen" not in cached
    assert "+line eighteen" in git(root, "diff")
    assert view.hunk_count() == 1
    assert window.events == ["git.index_changed"]


def test_discarding_a_hunk_changes_the_file_on_disk_after_confirming(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    asked = []
    view.confirm_discard = lambda message: asked.append(message) or True
    wait_loaded(qtbot, view, lambda: view.discard_hunk(1))
    assert len(asked) == 1
    assert (root / "a.txt").read_text() == TWENTY.replace("line 2\n", "line two\n")
    assert view.hunk_count() == 1


def test_declining_the_discard_leaves_the_file_alone(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    view.confirm_discard = lambda message: False
    view.discard_hunk(0)
    window.tasks.wait(5000)
    qtbot.wait(50)
    assert (root / "a.txt").read_text() == TWO_CHANGES
    assert not view.is_busy and window.events == []


def test_side_by_side_rows_align_with_filler_where_one_side_has_no_line(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "a.txt").write_text(TWENTY.replace("line 10\n", "line ten\nextra 1\nextra 2\n")
                                .replace("line 15\n", ""))
    view = open_view(qtbot, window, root)
    assert view.mode == SIDE_BY_SIDE
    left, right = view.left, view.right
    assert left.blockCount() == right.blockCount() == len(left.rows) == len(right.rows)
    lk, rk = left.rows.kinds, right.rows.kinds
    # "line 10" pairs with "line ten"; the two extra lines face filler on the left.
    changed = [r for r, kind in enumerate(rk) if kind == ADDED]
    assert [lk[r] for r in changed] == [REMOVED, FILLER, FILLER]
    assert all(left.document().findBlockByNumber(r).text() == "" for r in changed[1:])
    # The removed "line 15" faces filler on the right.
    removed = [r for r, kind in enumerate(lk) if kind == REMOVED]
    assert [rk[r] for r in removed] == [ADDED, FILLER]
    assert right.document().findBlockByNumber(removed[1]).text() == ""
    assert left.document().findBlockByNumber(removed[1]).text() == "line 15"
    # The rows around the change show the same line on both sides, with their own numbers.
    after = removed[1] + 1
    assert left.document().findBlockByNumber(after).text() == right.document().findBlockByNumber(after).text()
    assert (left.rows.old_numbers[after], right.rows.new_numbers[after]) == (16, 17)
    # Scrolling one side scrolls the other.
    left.verticalScrollBar().setValue(3)
    assert right.verticalScrollBar().value() == 3 or right.verticalScrollBar().maximum() < 3


def test_intraline_ranges_are_marked_on_a_changed_line(qtbot, make_repo, window):
    root = make_repo(files={"m.py": "x = compute(alpha, beta)\n"})
    (root / "m.py").write_text("x = compute(alpha, gamma)\n")
    view = open_view(qtbot, window, root, path="m.py")
    for pane, kind, word in ((view.left, REMOVED, "beta"), (view.right, ADDED, "gamma")):
        row = pane.rows.kinds.index(kind)
        line = pane.rows.lines[row]
        assert [line.text[s:e] for s, e in line.intraline] == [word]
        (rect,) = pane.intraline_rects(row)
        image = pane.viewport().grab().toImage()
        # The top pixel row of a line is above the glyphs: only the backgrounds show there.
        assert image.pixelColor(int(rect.left()) + 2, int(rect.top()) + 1) == INTRALINE_BACKGROUNDS[kind]
        assert image.pixelColor(pane.viewport().width() - 3, int(rect.top()) + 1) == ROW_BACKGROUNDS[kind]


def test_next_and_previous_change_move_between_hunks(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    assert view.current_hunk() == 0  # the view opens at the first change
    assert view.next_change() == 1 and view.current_hunk() == 1
    assert view.next_change() == 0 and view.current_hunk() == 0  # wraps around
    assert view.previous_change() == 1 and view.current_hunk() == 1
    assert view.previous_change() == 0 and view.current_hunk() == 0
    view.set_mode(INLINE)
    assert view.current_hunk() == 0
    view.activateWindow()
    qtbot.waitActive(view)
    view.inline.setFocus()
    qtbot.keyClick(view.inline, Qt.Key.Key_F7)
    assert view.current_hunk() == 1
    qtbot.keyClick(view.inline, Qt.Key.Key_F7, Qt.KeyboardModifier.ShiftModifier)
    assert view.current_hunk() == 0


def test_inline_mode_shows_one_pane_with_the_lines_in_diff_order(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    view.next_change()
    view.set_mode(INLINE)
    assert view.panes() == [view.inline] and view.current_hunk() == 1
    rows = view.inline.rows
    assert rows.kinds.count(HEADER) == 2
    first = rows.kinds.index(REMOVED)
    assert rows.kinds[first + 1] == ADDED
    doc = view.inline.document()
    assert (doc.findBlockByNumber(first).text(), doc.findBlockByNumber(first + 1).text()) == ("line 2", "line two")
    assert (rows.old_numbers[first], rows.new_numbers[first + 1]) == (2, 2)
    view.set_mode(SIDE_BY_SIDE)
    assert view.current_hunk() == 1


def test_a_binary_file_shows_its_summary_and_no_panes(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    git(root, "add", "blob.bin")
    git(root, "commit", "-q", "-m", "blob")
    (root / "blob.bin").write_bytes(b"\x00\x03\x04" * 20)
    view = open_view(qtbot, window, root, path="blob.bin")
    assert view.diff.is_binary
    assert view._stack.currentWidget() is view._message
    assert "Binary file" in view._message.text() and "60 bytes" in view._message.text()
    assert view.current_hunk() == -1


def test_opening_the_same_diff_again_reuses_its_tab(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    assert window.tabs_added[-1][1] == "a.txt (Working Tree)"
    again = open_view(qtbot, window, root)
    assert again is view and len(window.tabs_added) == 2 and window.tabs_added[-1][0] is view
    git(root, "add", "a.txt")
    staged = open_view(qtbot, window, root, source=INDEX_VS_HEAD)
    assert staged is not view and window.tabs_added[-1][1] == "a.txt (Staged)"


def test_a_ten_thousand_line_diff_is_built_with_bounded_work(qtbot, make_repo, window, monkeypatch):
    root = make_repo(files={"big.py": "start = 1\n"})
    count = 10_000
    (root / "big.py").write_text("start = 1\n" + "".join(f"value_{i} = compute({i}, 'x')  # {i}\n"
                                                         for i in range(count)))
    lexed = []
    original = LineLexer.lex_line
    monkeypatch.setattr(LineLexer, "lex_line", lambda self, text, state=None: lexed.append(1)
                        or original(self, text, state))
    builds = []
    original_rows = diff_rows_module.side_by_side_rows
    # Built by load_diff in the worker, or by the view when it switches modes.
    for module in (diff_rows_module, diff_view_module):
        monkeypatch.setattr(module, "side_by_side_rows", lambda diff: builds.append(1) or original_rows(diff))
    view = open_view(qtbot, window, root, path="big.py")
    rows = len(view.right.rows)
    assert rows == count + 2  # the header, one context line and the added lines
    assert view.left.blockCount() == view.right.blockCount() == rows
    assert builds == [1]
    # The first screen is coloured at once, the rest in the background.
    highlighters = [view.left.highlighter, view.right.highlighter]
    qtbot.waitUntil(lambda: all(h.is_complete for h in highlighters), timeout=20_000)
    assert view.right.highlighter.rows_lexed == count + 1
    assert len(lexed) <= rows + 10  # every row of code is lexed once (the left has one context line)
    assert [h.rows_done for h in highlighters] == [rows, rows]  # each row visited once
    view.right.grab()
    assert 0 < view.right.rows_painted < 100  # painting touches the visible rows only
    view.next_change()
    assert view.current_hunk() == 0


LONG_CONTEXT = "def " + "a_very_long_function_name_" * 14 + "(" + ", ".join(f"argument_{i}" for i in range(30)) + "):"


def long_context_repo(make_repo):
    """A Python file whose change sits under a ``def`` line far longer than any window."""
    assert len(LONG_CONTEXT) > 400
    body = "".join(f"    value_{i} = {i}\n" for i in range(1, 21))
    root = make_repo("long", files={"m.py": LONG_CONTEXT + "\n" + body})
    (root / "m.py").write_text(LONG_CONTEXT + "\n" + body.replace("value_15 = 15", "value_15 = 'fifteen'"))
    return root


def test_a_long_hunk_context_never_makes_the_view_wider(qtbot, make_repo, window, monkeypatch):
    short = open_view(qtbot, window, two_hunk_repo(make_repo))
    # git cuts the context after its @@ to 80 characters; other tools and old gits do not.
    text = (f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@ {LONG_CONTEXT}\n"
            "     one = 1\n-    two = 2\n+    two = 'two'\n     three = 3\n")
    monkeypatch.setattr(diff_rows_module, "diff_file", lambda *args, **kwargs: parse_diff(text)[0])
    view = open_view(qtbot, window, long_context_repo(make_repo), path="m.py")
    assert len(view.diff.hunks[0].section) > 400
    label = view._hunk_label
    assert LONG_CONTEXT in label.full_text() and label.toolTip() == label.full_text()
    assert label.text() != label.full_text() and label.text().endswith("…")  # shortened to fit
    width = view.minimumSizeHint().width()
    assert width < 600 and width <= short.minimumSizeHint().width() + 20
    for pane in view.panes():
        assert pane.minimumSizeHint().width() < 200


def test_header_links_leave_the_header_text_room(qtbot, make_repo, window):
    view = open_view(qtbot, window, long_context_repo(make_repo), path="m.py")
    for pane in (view.right,):
        header = pane.rows.kinds.index(HEADER)
        pane.verticalScrollBar().setValue(0)
        links = pane.link_rects()
        assert len(links) == 2  # Stage Hunk and Discard Hunk
        text = pane.header_text_rect(header)
        assert text.width() > 50  # the start of the header is still shown
        assert all(not text.intersects(type(text)(link)) for link in links)
        assert text.right() < min(link.left() for link in links)
    view.set_mode(INLINE)
    header = view.inline.rows.kinds.index(HEADER)
    view.inline.verticalScrollBar().setValue(0)
    text = view.inline.header_text_rect(header)
    assert all(text.right() < link.left() for link in view.inline.link_rects())


def test_a_background_reload_of_a_vanished_file_says_so_in_the_tab(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    (root / "new.txt").write_text("fresh\n")
    view = open_view(qtbot, window, root, path="new.txt")
    assert view.hunk_count() == 1
    (root / "new.txt").unlink()
    wait_loaded(qtbot, view, view.on_index_changed)  # as when another part of the window changed the index
    assert window.errors == []
    assert view._stack.currentWidget() is view._message
    assert "The file is gone" in view._message.text()
    assert view.current_hunk() == -1 and view._hunk_label.text() == ""
    # The same failure from the user's own Refresh is told to them.
    wait_loaded(qtbot, view, view.reload)
    assert len(window.errors) == 1 and "neither tracked" in window.errors[0]


def test_a_background_reload_of_a_file_without_changes_shows_no_changes(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    (root / "a.txt").write_text(TWENTY)
    wait_loaded(qtbot, view, view.on_index_changed)
    assert window.errors == [] and "No changes to show" in view._message.text()


def test_a_diff_between_commits_opens_read_only_with_both_revisions_in_its_title(qtbot, make_repo, window):
    root = make_repo(files={"a.txt": TWENTY})
    first = git(root, "rev-parse", "HEAD").strip()
    (root / "a.txt").write_text(TWO_CHANGES)
    git(root, "commit", "-q", "-am", "two changes")
    second = git(root, "rev-parse", "HEAD").strip()
    (root / "a.txt").write_text(TWENTY)  # the working tree does not matter to a commit diff
    view = diff_view_module.open_commit_diff_tab(window, open_repository(root), "a.txt", first, second)
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        pass
    qtbot.addWidget(view)
    assert view.title == f"a.txt ({first[:7]}..{second[:7]})" and window.tabs_added[-1][1] == view.title
    assert view.is_read_only and view.hunk_count() == 2
    assert [l.text for l in view.diff.hunks[0].lines if l.kind == "+"] == ["line two"]
    assert view._hunk_buttons == {} and view.right.actions == () and view.inline.actions == ()
    assert view.right.link_rects() == []
    view.confirm_discard = lambda message: True
    view.stage_hunk(0)
    view.discard_hunk(0)
    assert not view.is_busy and (root / "a.txt").read_text() == TWENTY and git(root, "diff", "--cached") == ""
    # Asking again reuses the tab; other revisions get their own.
    again = diff_view_module.open_commit_diff_tab(window, open_repository(root), "a.txt", first, second)
    assert again is view
    with qtbot.waitSignal(view.sig_loaded, timeout=10_000):
        pass
    root_commit = diff_view_module.open_commit_diff_tab(window, open_repository(root), "a.txt", None, first)
    with qtbot.waitSignal(root_commit.sig_loaded, timeout=10_000):
        pass
    qtbot.addWidget(root_commit)
    assert root_commit is not view and root_commit.hunk_count() == 1
    assert all(l.kind == "+" for l in root_commit.diff.hunks[0].lines)
    assert window.errors == []


def test_the_mode_chosen_last_is_the_mode_of_new_diff_tabs(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    assert view.mode == SIDE_BY_SIDE
    view._mode_button.click()  # the user picks Inline
    assert view.mode == INLINE
    git(root, "add", "a.txt")
    staged = open_view(qtbot, window, root, source=INDEX_VS_HEAD)
    assert staged.mode == INLINE and staged._mode_button.isChecked()
    assert staged.panes() == [staged.inline] and staged.inline.rows is not None
    other = FakeWindow()
    try:
        assert open_view(qtbot, other, root, source=INDEX_VS_HEAD).mode == SIDE_BY_SIDE
    finally:
        other.tasks.wait(5000)


def test_next_change_marks_the_current_hunks_header_row(qtbot, make_repo, window):
    root = two_hunk_repo(make_repo)
    view = open_view(qtbot, window, root)
    view.next_change()
    assert view.current_hunk() == 1
    assert all(pane.current_hunk == 1 for pane in view.panes()) and view.inline.current_hunk == -1
    left = view.left
    headers = [row for row, kind in enumerate(left.rows.kinds) if kind == HEADER]
    image = left.viewport().grab().toImage()

    def colour_of(row):
        top = int(left.blockBoundingGeometry(left.document().findBlockByNumber(row))
                  .translated(left.contentOffset()).top())
        return image.pixelColor(left.viewport().width() - 3, top + 1)

    assert colour_of(headers[1]) == CURRENT_HEADER
    assert colour_of(headers[0]) == ROW_BACKGROUNDS[HEADER]
    view.previous_change()
    assert view.left.current_hunk == 0
