"""benchmarks/fleet.py, run small: three agent processes, each slot under a steady stream of
requests, a deploy to all of them; not one request fails and every device switches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "fleet.py"


def test_a_deploy_to_three_agents_under_load_fails_no_request():
    done = subprocess.run([sys.executable, str(BENCHMARK), "--agents", "3"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["fleet_failed_requests"] == 0, figures["failures"]
    assert figures["devices_not_switched"] == [] and figures["single_switched"]
    assert figures["requests"] > 0 and figures["answers_from_new_model_after_deploy"] > 0
    assert figures["fleet_deploy_s"] > 0 and figures["single_deploy_s"] > 0
    assert figures["fleet_deploy_ratio"] is not None
