"""What the walk for a run's event and model files costs on a 20,000-file project, printed as one
JSON object.

A run's supervisor walks the project folder for TensorBoard event files and model files the run
writes (workbench/training/written_files.py): every 0.1 s for the first 5 s, every 0.5 s to
30 s, every 2 s to 5 minutes, then every 10 s, but never sooner than ten times the last walk's
time after it (workbench/training/working_folder.py). This makes a project of 200 folders of 100 files
(with a .git and a .venv of 5,000 files each, which the walk skips) and times the walk; the CPU
share follows from the schedule.

Run: python benchmarks/working_folder_scan.py [files]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workbench.training.working_folder import WALK_PAUSE_FACTOR
from workbench.training.written_files import WorkingFolderScan, next_scan_delay


def make_project(root: Path, files: int) -> None:
    per_folder = 100
    for index in range(files):
        folder = root / "src" / f"package_{index // per_folder:03d}"
        if index % per_folder == 0:
            folder.mkdir(parents=True)
        (folder / f"module_{index % per_folder:03d}.py").write_text("x = 1\n")
    for skipped in (".git/objects", ".venv/lib"):
        for index in range(5000):
            folder = root / skipped / f"{index // 100:02d}"
            if index % 100 == 0:
                folder.mkdir(parents=True)
            (folder / f"{index:04d}").write_bytes(b"")


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory(prefix="wb-scan-") as folder:
        root = Path(folder)
        make_project(root, files)
        scan = WorkingFolderScan(root, time.time())
        scan.scan()  # the first walk fills the page cache, as the run's first seconds do
        times = []
        for _ in range(20):
            began = time.perf_counter()
            result = scan.scan()
            times.append(time.perf_counter() - began)
        walk = statistics.median(times)
        print(json.dumps({
            "files": files, "entries_walked": result.entries, "walk_median_s": round(walk, 4),
            "walk_max_s": round(max(times), 4),
            "cpu_share_first_5_s": round(walk / (walk + max(next_scan_delay(0), WALK_PAUSE_FACTOR * walk)), 3),
            "cpu_share_after_5_min": round(walk / (walk + max(next_scan_delay(600), WALK_PAUSE_FACTOR * walk)), 4),
        }))


if __name__ == "__main__":
    main()
