"""The table of versions the Registry and the Pipeline share: the selected version stays selected
and the column the user sorted by stays sorting when the rows (and the metric columns) change,
and a cell's theme colour follows the theme."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.qt import theme
from workbench.qt.version_table import TableCell, VersionTable

COLUMNS = ["Version", "loss", "Note"]


def rows(*versions: tuple[int, float | None]):
    return [(number, [TableCell(f"{number:04d}", number), TableCell("" if loss is None else f"{loss}", loss),
                      TableCell(f"note {number}")]) for number, loss in versions]


def make_table(qtbot, sortable: bool) -> VersionTable:
    table = VersionTable("test-versions", sortable=sortable)
    qtbot.addWidget(table)
    table.resize(500, 200)
    table.show()
    return table


def test_a_sorting_table_shows_the_newest_first_until_the_user_sorts(qtbot):
    table = make_table(qtbot, sortable=True)
    table.show_rows(COLUMNS, rows((0, 0.5), (2, 0.3), (1, 0.4)), stretch="Note")
    assert table.keys_shown() == [2, 1, 0]
    assert table.cell_text(1, "loss") == "0.4" and table.cell_text(7, "loss") == "" and table.row_of(7) == -1


def test_the_column_sorted_by_still_sorts_after_a_refresh_that_adds_columns(qtbot):
    table = make_table(qtbot, sortable=True)
    table.show_rows(COLUMNS, rows((0, 0.5), (1, 0.3), (2, 0.4)), stretch="Note")
    table.sortItems(COLUMNS.index("loss"), Qt.SortOrder.AscendingOrder)
    assert table.keys_shown() == [1, 2, 0]
    # A new metric column before "loss" moves it: the sort follows its name, not its index;
    # a blank value sorts last.
    table.show_rows(["Version", "acc", "loss", "Note"],
                    [(number, [TableCell(f"{number:04d}", number), TableCell("1", 1), *cells[1:]])
                     for number, cells in rows((0, 0.5), (1, 0.3), (2, 0.4), (3, None))], stretch="Note")
    assert table.keys_shown() == [1, 2, 0, 3]
    assert table.horizontalHeader().sortIndicatorSection() == 2


def test_the_selected_version_stays_selected_across_refreshes_and_is_said_when_gone(qtbot):
    table = make_table(qtbot, sortable=False)
    assert table.show_rows(COLUMNS, rows((2, 0.3), (1, 0.4), (0, 0.5)), stretch="Note") is False
    assert table.select_key(1) and table.selected_key() == 1
    assert table.show_rows(COLUMNS, rows((3, 0.2), (2, 0.3), (1, 0.4), (0, 0.5)), stretch="Note") is True
    assert table.selected_key() == 1 and table.keys_shown() == [3, 2, 1, 0]
    assert table.show_rows(COLUMNS, rows((3, 0.2), (2, 0.3)), stretch="Note") is False
    assert table.selected_key() is None and not table.select_key(1)


def test_the_stretched_column_takes_the_width_the_others_leave(qtbot):
    table = make_table(qtbot, sortable=False)
    table.show_rows(COLUMNS, rows((0, 0.5)), stretch="Note")
    header = table.horizontalHeader()
    assert header.sectionResizeMode(2) == header.ResizeMode.Stretch
    assert header.sectionResizeMode(0) == header.sectionResizeMode(1) == header.ResizeMode.ResizeToContents
    qtbot.waitUntil(lambda: sum(header.sectionSize(c) for c in range(3)) >= table.viewport().width() - 1)


def test_a_cells_theme_colour_follows_the_theme(qtbot):
    table = make_table(qtbot, sortable=False)
    theme.apply_theme("light")
    try:
        table.show_rows(["Version", "State"], [("0001", [TableCell("0001"), TableCell("failed", colour="ERROR_TEXT")])],
                        stretch="State")
        state = table.item(0, 1)
        assert state.foreground().color().name() == theme.colour("ERROR_TEXT", "light").lower()
        theme.apply_theme("dark")
        assert state.foreground().color().name() == theme.colour("ERROR_TEXT", "dark").lower()
        assert theme.colour("ERROR_TEXT", "dark") != theme.colour("ERROR_TEXT", "light")
    finally:
        theme.apply_theme("light")
