"""Finding things in a 20,000-file project: Quick Open per key, and Find in Files.

Prints one JSON object, one entry per figure (``--only NAME`` runs one):
- quick_open_p90_ms (with quick_open_p50_ms, quick_open_keys): a key typed into the Quick Open
  popup to its list updated and painted, over queries typed a key at a time as a person types
  them (names, initials, a folder path, two words); goal ≤ 30 ms. Between keys the event loop
  runs, as it does while a person reaches for the next key. ``quick_open_p90_cpu_ms`` is the
  same in the GUI thread's processor time, which a busy machine (see ``load_average``) does not
  inflate.

- find_in_files_ratio (with find_in_files_first_ratio): a literal found in about one file in
  ten, from asking the Find in Files panel to all its results listed and painted (to its first
  results painted), over ``rg --json`` with the same arguments alone, read to its end (to its
  first match), in the same run; alternated runs, medians; goal ≤ 1.5 for all results. The
  ``find_everywhere_*`` entries are the same for a literal in every file (20,000 results, as
  many as the panel lists).

The project is built once under /tmp/workbench-bench-cache/ and reused: 20,000 files in nested
folders named like a machine-learning project's, a ``.gitignore``, and an ignored ``build/``
folder of 1,000 more that must not be listed.

Run: .venv/bin/python benchmarks/find.py [--files N] [--only quick_open|find_in_files]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CACHE = Path("/tmp/workbench-bench-cache")
WORDS = ["model", "train", "data", "loader", "utils", "config", "test", "quant", "export", "onnx",
         "device", "agent", "layer", "conv", "attention", "tokenizer", "metrics", "runner",
         "cluster", "sync", "dataset", "augment", "schedule", "optimizer", "checkpoint", "eval"]
SUFFIXES = [".py", ".py", ".py", ".md", ".json", ".yaml", ".txt", ".cfg"]

QUICK_OPEN_QUERIES = ["trainer", "data_loader", "cfgtest", "model/conv", "quant export", "tokenizer.py",
                      "evsch", "checkpoint_utils"]


def build_project(files: int) -> Path:
    """A project folder of ``files`` listed files (and an ignored ``build/``), made once."""
    root = CACHE / f"find_{files}"
    marker = root / "build" / "bench-complete"  # inside the ignored folder: not listed
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    generator = random.Random(19)
    made: set[str] = set()
    while len(made) < files:
        depth = generator.randint(1, 4)
        folder = "/".join(generator.choice(WORDS) + generator.choice(["", "s", "_v2", "_tools"])
                          for _ in range(depth))
        words = generator.sample(WORDS, generator.randint(1, 3))
        name = "_".join(words) + generator.choice(SUFFIXES)
        relative = f"{folder}/{name}"
        if relative in made:
            continue
        made.add(relative)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {relative}\nlearning_rate = {len(made) % 97 / 1000}\n")
    for n in range(1000):
        path = root / "build" / f"lib{n // 100}" / f"generated_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# generated\n")
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    marker.write_text("")
    return root


def measure_quick_open(root: Path, files: int) -> dict:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QWidget

    from workbench.search.file_index import FileIndex
    from workbench.search.widgets.quick_open import QuickOpen

    app = QApplication.instance() or QApplication([])
    window = QWidget()
    window.resize(1200, 800)
    window.show()
    index = FileIndex(root)
    started = time.perf_counter()
    listed = index.refresh()
    walk_ms = (time.perf_counter() - started) * 1000
    if len(listed) != files + 1:  # and the .gitignore itself
        raise SystemExit(f"The walk listed {len(listed)} files, not {files + 1}: is .gitignore respected?")
    recent = [listed.paths[n] for n in range(0, len(listed), len(listed) // 8)][:8]
    popup = QuickOpen(lambda: recent, window)
    popup.set_files(listed)
    popup.open()
    app.processEvents()
    key_ms: list[float] = []
    key_cpu_ms: list[float] = []
    slowest: list[tuple[float, str]] = []
    for query in QUICK_OPEN_QUERIES:
        popup.query.clear()
        app.processEvents()
        for char in query:
            started, cpu_started = time.perf_counter(), time.thread_time()
            QTest.keyClicks(popup.query, char)
            popup.results.viewport().repaint()
            key_ms.append((time.perf_counter() - started) * 1000)
            key_cpu_ms.append((time.thread_time() - cpu_started) * 1000)
            slowest.append((key_ms[-1], popup.query.text()))
            for _ in range(3):  # the person reaches for the next key: queued work runs now
                app.processEvents()
        if not popup.matches():
            raise SystemExit(f"Quick Open found nothing for {query!r}")
    QTest.keyClick(popup.query, Qt.Key.Key_Escape)
    window.close()
    key_ms.sort()
    key_cpu_ms.sort()
    return {"quick_open_p90_ms": round(key_ms[int(0.9 * (len(key_ms) - 1))], 1),
            "quick_open_p50_ms": round(statistics.median(key_ms), 1),
            "quick_open_p90_cpu_ms": round(key_cpu_ms[int(0.9 * (len(key_cpu_ms) - 1))], 1),
            "quick_open_slowest_keys": [f"{text} {ms:.0f}" for ms, text in sorted(slowest)[-5:]],
            "quick_open_max_ms": round(key_ms[-1], 1),
            "quick_open_keys": len(key_ms),
            "quick_open_walk_ms": round(walk_ms)}


FIND_LITERAL = "learning_rate = 0.01"  # in about one file in ten
FIND_EVERYWHERE = "learning_rate"  # in every file: the 20,000 results the panel lists at most
FIND_RUNS = 5


def _rg_alone(root: Path, text: str) -> tuple[float, float]:
    """Seconds from starting ``rg --json`` (the arguments the panel uses) to its first match
    line read, and to all of its output read."""
    import subprocess

    from workbench.search.ripgrep import SearchQuery, ripgrep_arguments, ripgrep_binary

    started = time.perf_counter()
    process = subprocess.Popen([ripgrep_binary(), *ripgrep_arguments(SearchQuery(text))], cwd=root,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    first = None
    for line in process.stdout:
        if first is None and line.startswith(b'{"type":"match"'):
            first = time.perf_counter() - started
    process.wait()
    return first, time.perf_counter() - started


def _panel(app, panel, text: str) -> tuple[float, float, int]:
    """Seconds from asking the Find in Files panel for ``text`` to its first results painted,
    and to all of them painted; and the results it listed."""
    from PySide6.QtCore import QEventLoop

    times: dict[str, float] = {}

    def shown(_files: int) -> None:
        if "first" not in times:
            panel.results_tree.viewport().repaint()
            times["first"] = time.perf_counter() - started

    def finished(_summary) -> None:
        panel.results_tree.viewport().repaint()
        times["all"] = time.perf_counter() - started
        loop.quit()

    loop = QEventLoop()
    panel.sig_results_shown.connect(shown)
    panel.sig_search_finished.connect(finished)
    started = time.perf_counter()
    panel.find(text)
    loop.exec()
    panel.sig_results_shown.disconnect(shown)
    panel.sig_search_finished.disconnect(finished)
    if panel.summary is None:
        raise SystemExit(f"Find in Files failed: {panel.status_text()}")
    return times["first"], times["all"], sum(found.match_count for found in panel.results)


def measure_find_in_files(root: Path, files: int) -> dict:
    from PySide6.QtWidgets import QApplication, QMainWindow

    from workbench.qt.tasks import TaskRunner
    from workbench.search.widgets.find_panel import FindInFilesPanel

    app = QApplication.instance() or QApplication([])
    window = QMainWindow()
    window.resize(1200, 800)
    tasks = TaskRunner(window)
    panel = FindInFilesPanel(root, tasks, lambda *args: None)
    window.setCentralWidget(panel)
    window.show()
    app.processEvents()
    results: dict = {}
    for name, text in (("find_in_files", FIND_LITERAL), ("find_everywhere", FIND_EVERYWHERE)):
        _rg_alone(root, text), _panel(app, panel, text)  # warm the file cache and the imports
        rg_first, rg_all, panel_first, panel_all = [], [], [], []
        for _ in range(FIND_RUNS):  # alternated, so a busy moment falls on both
            first, whole = _rg_alone(root, text)
            rg_first.append(first)
            rg_all.append(whole)
            first, whole, listed = _panel(app, panel, text)
            panel_first.append(first)
            panel_all.append(whole)
        ms = lambda values: round(statistics.median(values) * 1000, 1)  # noqa: E731
        results.update({
            f"{name}_ratio": round(statistics.median(panel_all) / statistics.median(rg_all), 2),
            f"{name}_first_ratio": round(statistics.median(panel_first) / statistics.median(rg_first), 2),
            f"{name}_results": listed,
            f"{name}_all_ms": ms(panel_all), f"{name}_first_ms": ms(panel_first),
            f"{name}_rg_all_ms": ms(rg_all), f"{name}_rg_first_ms": ms(rg_first)})
    tasks.wait()
    window.close()
    return results


FIGURES = {"quick_open": measure_quick_open, "find_in_files": measure_find_in_files}
"""Each figure's measuring function: (project root, file count) → its JSON entries."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--only", choices=sorted(FIGURES), help="measure one figure")
    args = parser.parse_args()
    root = build_project(args.files)
    results: dict = {"files": args.files}
    for name, measure in FIGURES.items():
        if args.only in (None, name):
            results.update(measure(root, args.files))
    results["load_average"] = round(os.getloadavg()[0], 1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
