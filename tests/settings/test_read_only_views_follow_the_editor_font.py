"""The hex view of a binary file and the read-only view of a huge file take the editor's font
family and size, follow them as they change, and zoom with the window's other editors."""

from __future__ import annotations

from workbench.editor.line_index import LARGE_FILE_BYTES

LOG_LINE = b"2026-01-01 12:00:00.000 INFO  trainer  step=000000 loss=0.1234\n"


def _write_large_log(path) -> None:
    block = LOG_LINE * 10_000
    with open(path, "wb") as handle:
        for _ in range(LARGE_FILE_BYTES // len(block) + 2):
            handle.write(block)


def test_the_hex_view_opens_in_the_editor_font_and_follows_its_size_and_the_zoom(
        open_window, project_root, user_settings_file):
    user_settings_file.write_text("[editor]\nfont_family = \"Noto Sans Mono\"\nfont_size = 14\n")
    (project_root / "weights.bin").write_bytes(bytes(range(256)) * 16)
    window = open_window()
    code = window.open_file(project_root / "a.py")
    tab = window.open_file(project_root / "weights.bin")
    assert tab.hex_view is not None
    assert tab.hex_view.font().family() == "Noto Sans Mono" and tab.hex_view.font().pointSizeF() == 14
    window.settings.set("editor.font_family", "DejaVu Sans Mono")
    window.settings.set("editor.font_size", 16)
    assert tab.hex_view.font().family() == "DejaVu Sans Mono" and tab.hex_view.font().pointSizeF() == 16
    window.commands.execute("view.zoomIn")
    assert tab.hex_view.font().pointSizeF() == code.editor.font().pointSizeF() == 17
    window.commands.execute("view.resetZoom")
    assert tab.hex_view.font().pointSizeF() == 16


def test_the_large_file_view_opens_in_the_editor_font_and_its_lines_grow_with_the_zoom(
        open_window, project_root, user_settings_file, qtbot):
    user_settings_file.write_text("[editor]\nfont_family = \"Noto Sans Mono\"\nfont_size = 9\n")
    _write_large_log(project_root / "train.log")
    window = open_window()
    tab = window.open_file(project_root / "train.log")
    view = tab.large_view
    assert view is not None
    qtbot.waitUntil(lambda: view.indexing_done, timeout=30_000)
    assert view.font().family() == "Noto Sans Mono" and view.font().pointSizeF() == 9
    lines_shown = view.visible_line_count()
    view.go_to_line(lines_shown)  # the last line on screen: a larger font must scroll to keep it
    for _ in range(6):
        window.commands.execute("view.zoomIn")
    assert view.font().pointSizeF() == 15
    assert view.visible_line_count() < lines_shown
    assert view.cursor_line() == lines_shown - 1
    assert view.first_visible_line() <= view.cursor_line() < view.first_visible_line() + view.visible_line_count()
    window.settings.set("editor.font_size", 12)
    assert view.font().pointSizeF() == 18
