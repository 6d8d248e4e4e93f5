"""Under torchrun with two processes (DDP over gloo) a run finishes, and a stop stops both ranks.

Real ``python -m torch.distributed.run --standalone --nproc_per_node=2`` runs of the tiny
script; each rank writes its exit status into a folder so the test sees both.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from .conftest import child_environment, read_metrics, torchrun_command

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def start_torchrun(project, run_dir, exits, *args, **env):
    exits.mkdir()
    return subprocess.Popen(
        torchrun_command(2, "train.py", *args), cwd=project,
        env=child_environment(WORKBENCH_RUN_DIR=run_dir, TINY_EXIT_DIR=exits, **env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def rank_statuses(exits) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(exits.iterdir())}


def test_a_two_process_run_trains_on_half_the_data_each_and_rank_zero_writes(tiny_project,
                                                                             tmp_path):
    run_dir, exits = tmp_path / "run", tmp_path / "exits"
    process = start_torchrun(tiny_project, run_dir, exits)
    out, errors = process.communicate(timeout=110)

    assert process.returncode == 0, errors
    assert rank_statuses(exits) == {"rank-0": "0", "rank-1": "0"}
    # 96 samples, 48 a rank, batches of 16: 3 steps an epoch; each line printed once.
    steps = [line.split()[0] for line in out.splitlines() if line.startswith("step=")]
    assert steps == [f"step={n}" for n in range(1, 10)]
    assert [r["step"] for r in read_metrics(run_dir) if "loss" in r] == list(range(1, 10))
    assert out.splitlines()[-1] == "done at step 9"
    assert json.loads((run_dir / "checkpoints" / "latest.json").read_text())["step"] == 9
    assert (run_dir / "outputs" / "model.pt").is_file()


def test_sigterm_to_the_group_checkpoints_once_and_both_ranks_exit_zero(tiny_project, tmp_path):
    run_dir, exits = tmp_path / "run", tmp_path / "exits"
    process = start_torchrun(tiny_project, run_dir, exits, "--set", "num_epochs=1000",
                             TINY_STEP_SECONDS=0.05)
    for line in process.stdout:
        if line.startswith("step="):
            break
    os.killpg(process.pid, signal.SIGTERM)  # as Workbench stops a run: the whole group
    rest, errors = process.communicate(timeout=60)

    # torchrun itself reports the signal it got (and exits 1); what matters is the workers.
    assert rank_statuses(exits) == {"rank-0": "0", "rank-1": "0"}, errors
    stopped = [line for line in rest.splitlines() if line.startswith("stopped")]
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert stopped == [f"stopped at step {latest['step']}; checkpoint "
                       f"{run_dir}/checkpoints/{latest['file']}"]
    assert 'train.py", line' not in errors  # no worker died with a traceback
