"""How much slower typing gets in a big file: types N characters into a 20,000-line and a
200-line Python file in one process and prints {"typing_20k_over_200_ratio": ...} as JSON.

A ratio near 1 means a keystroke costs the same whatever the file size (highlighting and the
gutter only touch what changed); run: python benchmarks/editor_typing.py [N]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.editor.widgets import open_editor_tab  # noqa: E402


def python_source(lines: int) -> str:
    """A plausible Python file of ``lines`` lines."""
    body = []
    for i in range(lines // 4):
        body += [f"def step_{i}(batch, lr=0.001):", f'    """Step {i}."""',
                 f"    return batch * lr + {i}  # scale", ""]
    return "\n".join(body) + "\n"


def seconds_per_keystroke(app: QApplication, path: Path, characters: int) -> float:
    """Open ``path`` in an EditorTab, wait for highlighting, then time typing in the middle."""
    tab = open_editor_tab(path, None)
    tab.resize(1000, 700)
    tab.show()
    editor, highlighter = tab.editor, tab.highlighter
    while highlighter.blocks_highlighted < editor.document().blockCount():
        app.processEvents()
    tab.set_cursor_position(editor.document().blockCount() // 2, 5)
    app.processEvents()
    start = time.perf_counter()
    for index in range(characters):
        QTest.keyClick(editor, Qt.Key.Key_A if index % 2 else Qt.Key.Key_B)
        app.processEvents()
    elapsed = time.perf_counter() - start
    tab.close()
    tab.deleteLater()
    app.processEvents()
    return elapsed / characters


def main() -> None:
    characters = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        big, small = Path(folder, "big.py"), Path(folder, "small.py")
        big.write_text(python_source(20_000))
        small.write_text(python_source(200))
        seconds_per_keystroke(app, small, 20)  # warm up fonts, lexer caches and Qt
        big_time = seconds_per_keystroke(app, big, characters)
        small_time = seconds_per_keystroke(app, small, characters)
    print(json.dumps({
        "typing_20k_over_200_ratio": round(big_time / small_time, 3),
        "ms_per_key_20k": round(big_time * 1000, 3),
        "ms_per_key_200": round(small_time * 1000, 3),
        "characters": characters,
    }))


if __name__ == "__main__":
    main()
