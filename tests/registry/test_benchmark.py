"""The registry benchmark runs (small) and reports every figure, its retention check passing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_registry_benchmark_runs_small_and_its_retention_check_passes():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "registry.py"), "--files", "300",
                           "--model-mb", "2"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"dataset_version_ratio", "register_s", "retention_ok", "files", "changed", "cut_s",
            "full_rehash_s"} <= set(report)
    assert report["files"] == 300 and report["changed"] == 3
    assert report["retention_ok"] is True, report
    assert report["register_hard_linked"] is True
    assert report["dataset_version_ratio"] > 0 and report["register_s"] > 0
