"""Reading the status of a 20,000-file repository, as a ratio to plain ``git status``.

Prints one JSON object:
- status_ratio: median time of ``read_status`` (run + parse) over the median time of
  ``git status --porcelain=v2`` run by subprocess, interleaved in the same process. Goal ≤ 1.3.
- path_refresh_ratio: ``StatusCache.refresh([one file])`` over the same baseline (the
  incremental refresh after staging one file).

The repository is built once under /tmp/workbench-bench-cache/ and reused; each run resets it,
then modifies a few files and adds a few untracked ones.

Run: .venv/bin/python benchmarks/git_status.py [--runs N] [--files N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.git.repository import open_repository  # noqa: E402
from workbench.git.status import StatusCache, read_status  # noqa: E402

CACHE = Path("/tmp/workbench-bench-cache")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "LC_ALL": "C"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)


def build_repository(files: int) -> Path:
    root = CACHE / f"git_status_{files}"
    marker = root / ".git" / "workbench-bench-complete"
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    git(root, "init", "-q", "--initial-branch=main")
    per_folder = 100
    for n in range(files):
        folder = root / f"pkg{n // per_folder // 20:02d}" / f"mod{n // per_folder:03d}"
        if n % per_folder == 0:
            folder.mkdir(parents=True)
        (folder / f"file_{n:05d}.py").write_text(f"# file {n}\nVALUE = {n}\n\ndef f():\n    return VALUE\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "20,000 files")
    marker.write_text("")
    return root


def prepare(root: Path) -> None:
    git(root, "reset", "-q", "--hard")
    git(root, "clean", "-q", "-fd")
    for n in range(0, 20_000, 2_000):
        path = next((root / f"pkg{n // 100 // 20:02d}" / f"mod{n // 100:03d}").glob("file_*.py"))
        path.write_text(path.read_text() + "# modified\n")
    for n in range(10):
        (root / f"pkg{n:02d}" / f"untracked_{n}.txt").write_text("new\n")
    # Settle the index (stat data of the just-reset files) so both sides start from the same state.
    time.sleep(1.1)
    git(root, "update-index", "-q", "--refresh")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    root = build_repository(args.files)
    prepare(root)
    repo = open_repository(root)
    cache = StatusCache(repo)

    def plain() -> None:
        subprocess.run(["git", "status", "--porcelain=v2"], cwd=root, capture_output=True, check=True)

    def ours() -> None:
        read_status(repo)

    one_file = read_status(repo).unstaged[0].path

    def incremental() -> None:
        cache.refresh([one_file])

    for warm in (plain, ours, incremental, plain, ours):
        warm()
    timings: dict[str, list[float]] = {"plain": [], "ours": [], "incremental": []}
    for _ in range(args.runs):
        for name, action in (("plain", plain), ("ours", ours), ("incremental", incremental)):
            start = time.perf_counter()
            action()
            timings[name].append(time.perf_counter() - start)
    plain_median = statistics.median(timings["plain"])
    status = read_status(repo)
    print(json.dumps({
        "status_ratio": round(statistics.median(timings["ours"]) / plain_median, 3),
        "path_refresh_ratio": round(statistics.median(timings["incremental"]) / plain_median, 3),
        "files": args.files,
        "changed": len(status.unstaged),
        "untracked": len(status.untracked),
        "plain_git_status_ms": round(plain_median * 1000, 2),
        "read_status_ms": round(statistics.median(timings["ours"]) * 1000, 2),
        "path_refresh_ms": round(statistics.median(timings["incremental"]) * 1000, 2),
        "runs": args.runs,
    }))


if __name__ == "__main__":
    main()
