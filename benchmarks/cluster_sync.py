"""Syncing a project's data to the cluster, against a real sshd on 127.0.0.1.

Prints one JSON object:
- incremental_bytes_ratio: 2,000 files synced once, then 1% of them rewritten and synced again:
  bytes sent by the second sync over the first's. Goal ≤ 0.02.
- full_sync_vs_rsync: a full sync of 2,000 small files plus three 20 MB files into an empty
  folder, connection included, over ``rsync -a -e "ssh -p PORT -i KEY …"`` of the same tree
  through the same sshd, interleaved in the same run; the median of each side. Goal ≤ 1.3.
Also the times behind the ratios.

The sshd is the tests' own (tests/services/sshd.py), started in a temporary folder and stopped at
the end. The data tree is built once under /tmp/workbench-bench-cache/ and reused.

Run: .venv/bin/python benchmarks/cluster_sync.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.services.sshd import start_sshd, stop_sshd_process  # noqa: E402
from workbench.cluster.connection import ClusterConnection  # noqa: E402
from workbench.cluster.data_sync import sync_data  # noqa: E402
from workbench.cluster.profiles import ClusterProfile  # noqa: E402

CACHE = Path("/tmp/workbench-bench-cache")
SMALL_FILES = 2000
BIG_FILES = 3
BIG_SIZE = 20 * 1024 * 1024


def build_project(name: str, big_files: int) -> Path:
    """A project with ``SMALL_FILES`` files of 1–32 KB in 20 folders and ``big_files`` of 20 MB."""
    root = CACHE / name
    marker = root / ".complete"
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(5)
    for n in range(SMALL_FILES):
        path = root / "data" / f"class{n % 20:02d}" / f"sample_{n:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(1024, 32 * 1024)))
    for n in range(big_files):
        (root / "data" / "weights").mkdir(parents=True, exist_ok=True)
        (root / "data" / "weights" / f"shard{n}.bin").write_bytes(rng.randbytes(BIG_SIZE))
    (root / "workbench.toml").write_text('[cluster]\ndata = ["data/"]\n')
    marker.write_text("")
    return root


def fresh_profile(server, folder: Path, name: str) -> ClusterProfile:
    return ClusterProfile(name="bench", host=server.host, port=server.port, user=server.user,
                          key_file=str(server.client_key), work_root=str(folder / "work"),
                          data_root=str(folder / name), scheduler="ssh")


def connect(profile: ClusterProfile, folder: Path) -> ClusterConnection:
    return ClusterConnection(profile, known_hosts=folder / "known_hosts", accept_new_host=True,
                             user_known_hosts_file=None).connect()


def forget_hashes(project: Path) -> None:
    (project / ".workbench" / "data-hashes.json").unlink(missing_ok=True)


def incremental_ratio(server, folder: Path) -> dict:
    project = build_project("cluster_sync_small", big_files=0)
    forget_hashes(project)
    profile = fresh_profile(server, folder, "incremental")
    with connect(profile, folder) as conn:
        full = sync_data(conn, project, profile)
        files = sorted((project / "data").rglob("*.bin"))
        rng = random.Random(time.time())
        changed = rng.sample(files, len(files) // 100)
        for path in changed:
            path.write_bytes(rng.randbytes(path.stat().st_size))
        started = time.perf_counter()
        second = sync_data(conn, project, profile)
        incremental_s = time.perf_counter() - started
    assert second.files_sent == len(changed), (second.files_sent, len(changed))
    return {"incremental_bytes_ratio": round(second.bytes_sent / full.bytes_sent, 4),
            "incremental_files_sent": second.files_sent, "incremental_bytes": second.bytes_sent,
            "full_bytes": full.bytes_sent, "incremental_sync_s": round(incremental_s, 3)}


def ours(server, folder: Path, project: Path, run: int) -> float:
    forget_hashes(project)
    profile = fresh_profile(server, folder, f"ours{run}")
    started = time.perf_counter()
    with connect(profile, folder) as conn:
        report = sync_data(conn, project, profile)
    elapsed = time.perf_counter() - started
    assert report.files_sent == SMALL_FILES + BIG_FILES
    return elapsed


def rsync(server, folder: Path, project: Path, run: int) -> float:
    ssh = (f"ssh -p {server.port} -i {shlex.quote(str(server.client_key))} -o IdentitiesOnly=yes "
           f"-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR")
    target = folder / f"rsync{run}"
    started = time.perf_counter()
    subprocess.run(["rsync", "-a", "-e", ssh, f"{project}/data", f"{server.user}@{server.host}:{target}/"],
                   check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("rsync") is None:
        sys.exit("rsync is missing: apt-get install rsync")
    folder = Path(tempfile.mkdtemp(prefix="wb-bench-sync-"))
    server = start_sshd(folder / "sshd")
    try:
        figures = incremental_ratio(server, folder)
        project = build_project("cluster_sync_mix", big_files=BIG_FILES)
        ours(server, folder, project, -1)  # warm-up: page cache, first logins
        rsync(server, folder, project, -1)
        our_times, rsync_times = [], []
        for run in range(args.runs):
            first, second = (ours, rsync) if run % 2 == 0 else (rsync, ours)
            for side in (first, second):
                (our_times if side is ours else rsync_times).append(side(server, folder, project, run))
        mine, theirs = statistics.median(our_times), statistics.median(rsync_times)
        total = sum(p.stat().st_size for p in (project / "data").rglob("*") if p.is_file())
        figures.update({
            "full_sync_vs_rsync": round(mine / theirs, 3),
            "full_sync_s": round(mine, 3),
            "rsync_s": round(theirs, 3),
            "full_sync_mb": round(total / 1e6, 1),
            "full_sync_runs_s": [round(t, 3) for t in our_times],
            "rsync_runs_s": [round(t, 3) for t in rsync_times],
        })
    finally:
        stop_sshd_process(server.process)
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
