"""benchmarks/hot_swap.py, run small: a real agent process, an app process sending a steady
stream of requests to a slot on loopback, the slot's model swapped a few times; not one request
fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "hot_swap.py"


def test_a_few_swaps_under_a_steady_stream_fail_no_request():
    done = subprocess.run([sys.executable, str(BENCHMARK), "--swaps", "4", "--gap", "0.1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["failed_requests"] == 0, figures["failures"]
    assert figures["swaps"] == 4 and figures["requests_during_swaps"] > 0
    assert all(count > 0 for count in figures["answers_by_model"].values())
    assert len(figures["answers_by_model"]) == 2
    assert figures["p99_latency_steady_ms"] > 0 and figures["worst_latency_during_swap_ms"] > 0
    # The worst request of steady windows as long as the deploys, when a deploy took less than
    # the gap between two (else there is no room for such a window).
    assert "worst_latency_steady_windows_ms" in figures
