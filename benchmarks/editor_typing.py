"""How the editor's cost grows with the file: a 20,000-line against a 200-line Python file, in one
process, printed as one JSON object:

- typing_20k_over_200_ratio: time per keystroke typed in the middle of the file. Near 1 means a
  keystroke costs the same whatever the file size (highlighting and the gutter only touch what
  changed).
- open_20k_first_paint_blocks: blocks lexed when a 20,000-line file is opened in a tab, before the
  first event-loop turn (so before the first paint); the rest is lexed in the background.
- attach_20k_over_200_ratio: time to attach the syntax highlighter to the loaded document (until
  Qt's own deferred first pass has run), median of a few runs.
- open_20k_sweep_ms: time until the background highlighting of the 20,000-line file is done.

Run: python benchmarks/editor_typing.py [N characters to type]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.editor import LineLexer, lexer_for_path  # noqa: E402
from workbench.editor.widgets import open_editor_tab  # noqa: E402
from workbench.editor.widgets.code_editor import CodeEditor  # noqa: E402
from workbench.editor.widgets.syntax_highlighter import SyntaxHighlighter  # noqa: E402

ATTACH_RUNS = 5


def python_source(lines: int) -> str:
    """A plausible Python file of ``lines`` lines."""
    body = []
    for i in range(lines // 4):
        body += [f"def step_{i}(batch, lr=0.001):", f'    """Step {i}."""',
                 f"    return batch * lr + {i}  # scale", ""]
    return "\n".join(body) + "\n"


def wait_for_highlighting(app: QApplication, highlighter: SyntaxHighlighter) -> None:
    """Turn the event loop until the background highlighting is done."""
    while not highlighter.is_complete:
        app.processEvents()


def open_figures(app: QApplication, path: Path) -> tuple[int, float]:
    """Open ``path`` in a tab: (blocks lexed before the first event-loop turn, ms until the
    background highlighting is done)."""
    tab = open_editor_tab(path, None)
    tab.resize(1000, 700)
    tab.show()
    first_paint_blocks = tab.highlighter.blocks_highlighted
    start = time.perf_counter()
    wait_for_highlighting(app, tab.highlighter)
    sweep_ms = (time.perf_counter() - start) * 1000
    tab.close()
    tab.deleteLater()
    app.processEvents()
    return first_paint_blocks, sweep_ms


def attach_seconds(app: QApplication, text: str) -> float:
    """Median time to attach a highlighter to an editor holding ``text``."""
    times = []
    for _ in range(ATTACH_RUNS):
        editor = CodeEditor(language="Python")
        editor.setPlainText(text)
        line_lexer = LineLexer(lexer_for_path("a.py"))
        start = time.perf_counter()
        highlighter = SyntaxHighlighter(editor.document(), line_lexer)
        # Qt queues a whole-document pass when a highlighter is attached; it counts too.
        app.sendPostedEvents(highlighter)
        times.append(time.perf_counter() - start)
        editor.deleteLater()
        app.processEvents()
    return statistics.median(times)


def seconds_per_keystroke(app: QApplication, path: Path, characters: int) -> float:
    """Open ``path`` in an EditorTab, wait for highlighting, then time typing in the middle."""
    tab = open_editor_tab(path, None)
    tab.resize(1000, 700)
    tab.show()
    editor = tab.editor
    wait_for_highlighting(app, tab.highlighter)
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
        first_paint_blocks, sweep_ms = open_figures(app, big)
        big_attach = attach_seconds(app, big.read_text())
        small_attach = attach_seconds(app, small.read_text())
        big_time = seconds_per_keystroke(app, big, characters)
        small_time = seconds_per_keystroke(app, small, characters)
    print(json.dumps({
        "typing_20k_over_200_ratio": round(big_time / small_time, 3),
        "ms_per_key_20k": round(big_time * 1000, 3),
        "ms_per_key_200": round(small_time * 1000, 3),
        "characters": characters,
        "open_20k_first_paint_blocks": first_paint_blocks,
        "attach_20k_over_200_ratio": round(big_attach / small_attach, 3),
        "attach_ms_20k": round(big_attach * 1000, 3),
        "attach_ms_200": round(small_attach * 1000, 3),
        "open_20k_sweep_ms": round(sweep_ms, 1),
    }))


if __name__ == "__main__":
    main()
