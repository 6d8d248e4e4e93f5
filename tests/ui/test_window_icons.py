"""Icons: file-type icons in the Explorer and on the editor tabs, icons in the menus, Workbench's
own icon on its windows; all made after the first paint (the icon font is
slow to load) and made again in the new colours when the theme changes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication, QToolButton, QWidget

from workbench.project import create_from_template, load_project
from workbench.qt import theme
from workbench.qt.icons import ThemedIcons
from workbench.ui.project_window import ProjectWindow


def main_colour(icon: QIcon) -> QColor:
    """The most common opaque colour of the icon drawn at 32 px."""
    image = icon.pixmap(32, 32).toImage()
    counts = Counter(image.pixel(x, y) for x in range(image.width()) for y in range(image.height())
                     if QColor.fromRgba(image.pixel(x, y)).alpha() == 255)
    assert counts, "the icon drew nothing"
    return QColor.fromRgba(counts.most_common(1)[0][0])


def test_the_window_loads_the_icon_fonts_only_after_its_first_paint_and_never_qtawesome(tmp_path):
    root = create_from_template("digits", tmp_path / "digits").root
    script = textwrap.dedent("""
        import sys
        from PySide6.QtWidgets import QApplication
        app = QApplication(["workbench"])
        from workbench.project import load_project
        from workbench.qt.icon_font import loaded_fonts
        from workbench.ui.project_window import ProjectWindow
        window = ProjectWindow(load_project(sys.argv[1]))
        print("built", loaded_fonts())
        window.install_capabilities(())  # what runs just after the first paint
        print("installed", sorted(loaded_fonts()), "qtawesome" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stderr
    assert "built []" in done.stdout
    assert "installed ['mdi6', 'msc'] False" in done.stdout


def test_explorer_tabs_and_menus_show_their_icons(qtbot, tmp_path):
    root = create_from_template("digits", tmp_path / "digits").root
    (root / "notes.md").write_text("# notes\n")
    window = ProjectWindow(load_project(root))
    qtbot.addWidget(window)
    window.install_capabilities(())
    window.show()
    tree = window.tree
    qtbot.waitUntil(lambda: "notes.md" in tree.child_names() and "train.py" in tree.child_names())

    def icon_of(name: str) -> QIcon:
        return tree.index_of(root / name).data(Qt.ItemDataRole.DecorationRole)

    python, markdown = main_colour(icon_of("train.py")), main_colour(icon_of("notes.md"))
    assert python != markdown  # a colour per kind of file
    tab = window.open_file(root / "notes.md")
    assert main_colour(window.tabs.tabIcon(window.tabs.indexOf(tab))) == markdown
    assert not window.menus.actions["edit.copy"].icon().isNull()
    assert not QApplication.windowIcon().isNull()  # Workbench's own, for every window
    # A capability's document tab (a diff, a history) shows the icon it names.
    from PySide6.QtWidgets import QLabel

    from workbench.qt.icons import name_tab_icon

    history = QLabel("history")
    name_tab_icon(history, "msc.history")
    window.add_tab(history, "History")
    assert not window.tabs.tabIcon(window.tabs.indexOf(history)).isNull()
    plain = QLabel("no icon named")
    window.add_tab(plain, "Plain")
    assert window.tabs.tabIcon(window.tabs.indexOf(plain)).isNull()
    window.discard_changes_on_close = True


def test_icons_are_made_again_in_the_colours_of_a_new_theme(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    button = QToolButton(window)
    icons = ThemedIcons(window)
    theme.apply_theme("light")
    icons.set(button, "run")
    light = main_colour(button.icon())
    assert light == QApplication.palette().color(QPalette.ColorRole.WindowText)
    try:
        theme.apply_theme("dark")
        dark_text = QApplication.palette().color(QPalette.ColorRole.WindowText)
        qtbot.waitUntil(lambda: main_colour(button.icon()) == dark_text)
        assert dark_text != light
    finally:
        theme.apply_theme("light")
    qtbot.waitUntil(lambda: main_colour(button.icon()) == light)
