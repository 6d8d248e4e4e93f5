"""What the cluster window tests share: a keyring of their own (never the tester's), no ssh-agent,
a committed training project with data to sync, project windows over it, and profiles for the
real sshd (``sshd_server`` comes from tests/services/sshd.py through the root conftest)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cluster.conftest import private_keyring_and_agent  # noqa: F401  (autouse fixture)
from tests.cluster.run_helpers import VENV_BIN, committed, end_followers
from tests.project_windows import ProjectWindows
from tests.git.conftest import git_identity  # noqa: F401  (autouse fixture: commits need an author, HOME is private)
from tests.training.conftest import make_project

TIMEOUT_MS = 30_000
SHOTS_DIR = os.environ.get("WORKBENCH_SCREENSHOTS", "")
"""Where ``screenshot`` saves pictures of the windows (nothing is saved when unset)."""


@pytest.fixture(autouse=True)
def private_keyring(private_keyring_and_agent):
    """The cluster tests' in-memory keyring (and no ssh-agent), under the name these tests use."""
    return private_keyring_and_agent


CLUSTER_SETTINGS = """
[cluster]
data = ["data/"]
exclude = ["*.tmp"]
"""


@pytest.fixture
def project(tmp_path) -> Path:
    """A committed training project (a small trainer that writes outputs/model.pt) with data:
    two files to send, one excluded, one symbolic link that is skipped."""
    root = make_project(tmp_path / "tiny", "stop_at_step=12\nstep_seconds=0.05\n")
    with (root / "workbench.toml").open("a") as settings:
        settings.write(CLUSTER_SETTINGS)
    data = root / "data"
    data.mkdir()
    (data / "train.csv").write_text("x,y\n" + "1,2\n" * 500)
    (data / "labels.txt").write_text("cat\ndog\n")
    (data / "scratch.tmp").write_text("not sent")
    (data / "elsewhere").symlink_to(tmp_path)
    (root / ".gitignore").write_text("runs/\n.workbench/\n")
    committed(root)
    yield root
    end_followers(root)


def profile_values(server, work_root: Path, **fields) -> dict:
    """The fields of a plain-SSH profile for the sshd ``server`` whose jobs run with this Python."""
    values = dict(name="box", host=server.host, port=server.port, user=server.user,
                  key_file=str(server.client_key), work_root=str(work_root),
                  data_root=str(work_root / "data"), scheduler="ssh",
                  python_setup=f"export PATH={VENV_BIN}:$PATH")
    values.update(fields)
    return values


def trust_host(server) -> None:
    from workbench.cluster.host_keys import remember_host_key

    host_key = " ".join((server.folder / "host_ed25519.pub").read_text().split()[:2])
    remember_host_key(f"[{server.host}]:{server.port} {host_key}")


@pytest.fixture
def open_window(qtbot):
    """``open_window(root) -> window``: a project window with its capabilities installed and its
    runs listed. Runs still active at the end are terminated (they outlive windows)."""
    windows = ProjectWindows(qtbot, TIMEOUT_MS)
    yield windows.open

    def end_run(service, info) -> None:
        try:
            service.terminate(info.id)
        except Exception:  # noqa: BLE001 — clean-up: the follower's end kills it anyway
            pass

    windows.close(end_run, after_root=end_followers)


def screenshot(widget, name: str) -> None:
    """Save a picture of ``widget`` as ``<WORKBENCH_SCREENSHOTS>/<name>.png`` when that is set."""
    if SHOTS_DIR:
        Path(SHOTS_DIR).mkdir(parents=True, exist_ok=True)
        widget.grab().save(str(Path(SHOTS_DIR) / f"{name}.png"))
