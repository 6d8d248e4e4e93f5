"""The layout of one run folder, ``<project>/runs/<id>/``, and its ``run.json``.

    run.json          RunInfo, replaced atomically on every change
    <name>.hparams    the hyper-parameters as used (the file plus the overrides)
    command.json      argv, cwd and the environment that differs from Workbench's own
    git.json          commit, branch, dirty;  git.patch: the uncommitted changes
    stdout.log        what the trainer printed (appended to on resume);  stderr.log likewise
    log-order         for logs Workbench copies (cluster runs): the order the two logs came in
    metrics.jsonl     one JSON record a line
    checkpoints/      step-XXXXXXXX.pt and latest.json;  outputs/: the final model and more
    products.json     the model files the run wrote elsewhere in the project folder (written_files)
    outcome.json      how the trainer itself says it ended, written by the training helpers:
                      {"state": "completed"|"stopped", "step": N, "time": ...}
    stop-requested    written just before the runner asks the trainer to stop (SIGTERM)
    terminate-requested   written just before the runner kills the process group
    supervisor.log    what the supervisor itself printed (empty unless it broke)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from workbench.platform.atomic_files import write_text_atomically
from workbench.training.errors import TrainingError
from workbench.training.run_info import LATEST_CHECKPOINT, RunInfo

RUNS_DIR = "runs"
OUTCOME_FILE = "outcome.json"
OUTCOME_STATES = ("completed", "stopped")


class RunFolder:
    """Paths and files of the run folder at ``path``."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def run_json(self) -> Path:
        return self.path / "run.json"

    @property
    def command_json(self) -> Path:
        return self.path / "command.json"

    @property
    def git_json(self) -> Path:
        return self.path / "git.json"

    @property
    def git_patch(self) -> Path:
        return self.path / "git.patch"

    @property
    def stdout_log(self) -> Path:
        return self.path / "stdout.log"

    @property
    def stderr_log(self) -> Path:
        return self.path / "stderr.log"

    @property
    def supervisor_log(self) -> Path:
        return self.path / "supervisor.log"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def outputs(self) -> Path:
        return self.path / "outputs"

    @property
    def outcome_json(self) -> Path:
        return self.path / OUTCOME_FILE

    @property
    def no_register(self) -> Path:
        """Present when the run's model is not to become a model version (``--no-register``)."""
        return self.path / "no-register"

    @property
    def stop_requested(self) -> Path:
        return self.path / "stop-requested"

    @property
    def terminate_requested(self) -> Path:
        return self.path / "terminate-requested"

    def log(self, stream: str) -> Path:
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream must be 'stdout' or 'stderr', not {stream!r}")
        return self.path / f"{stream}.log"

    def read_info(self) -> RunInfo:
        """The run's ``run.json``; TrainingError when it is missing or unreadable."""
        try:
            data = json.loads(self.run_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TrainingError(f"{self.path} is not a run folder (it has no run.json).") from None
        except (OSError, ValueError) as exc:
            raise TrainingError(f"Cannot read {self.run_json}: {exc}.") from None
        info = RunInfo.from_json(data)
        # The folder may have moved with its project since run.json was written.
        info.run_dir = str(self.path)
        info.project_dir = str(self.path.parent.parent)
        return info

    def write_info(self, info: RunInfo) -> None:
        write_text_atomically(self.run_json, json.dumps(info.to_json(), indent=1) + "\n")

    def read_command(self) -> dict:
        """``{"argv": [...], "cwd": "...", "env": {...}}`` as the runner wrote it."""
        return json.loads(self.command_json.read_text(encoding="utf-8"))

    def write_command(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        write_text_atomically(self.command_json,
                              json.dumps({"argv": argv, "cwd": cwd, "env": env}, indent=1) + "\n")

    def read_outcome(self) -> dict | None:
        """``outcome.json`` when it is there and well formed: ``state`` is "completed" or
        "stopped" and ``time`` a number; None otherwise."""
        try:
            outcome = json.loads(self.outcome_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (not isinstance(outcome, dict) or outcome.get("state") not in OUTCOME_STATES
                or not isinstance(outcome.get("time"), (int, float))):
            return None
        return outcome

    def latest_checkpoint(self) -> dict | None:
        """``checkpoints/latest.json`` with ``path`` (absolute) added; None when there is none
        or the file it names is missing."""
        try:
            latest = json.loads((self.path / LATEST_CHECKPOINT).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(latest, dict) or not isinstance(latest.get("file"), str):
            return None
        checkpoint = self.checkpoints / latest["file"]
        if not checkpoint.is_file():
            return None
        return {**latest, "path": str(checkpoint)}


def runs_dir(project_dir: Path | str) -> Path:
    return Path(project_dir) / RUNS_DIR


def create_run_folder(project_dir: Path | str) -> RunFolder:
    """A new, empty run folder under ``<project>/runs/`` with a fresh id.

    Ids are the local creation time to the millisecond, ``20260509-143012-250``: safe in file
    names and sorted by creation time. The folder is created exclusively, so two runs started
    in the same millisecond (by two processes) still get two ids.
    """
    runs = runs_dir(project_dir)
    try:
        runs.mkdir(exist_ok=True)
        ignore = runs / ".gitignore"
        if not ignore.exists():
            # Runs are outputs: never shown as changes, nor copied into a run's git.patch.
            write_text_atomically(ignore, "# Training runs: outputs of Workbench, not sources.\n*\n")
    except OSError as exc:
        raise TrainingError(f"Cannot create {runs}: {exc.strerror or exc}. Check the project "
                            "folder's permissions and free space.") from None
    now = time.time()
    for attempt in range(1000):
        stamp = now + attempt / 1000
        run_id = time.strftime("%Y%m%d-%H%M%S", time.localtime(stamp)) + f"-{int(stamp * 1000) % 1000:03d}"
        folder = RunFolder(runs / run_id)
        try:
            folder.path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise TrainingError(f"Cannot create a run folder in {runs}: {exc.strerror or exc}.") from None
        folder.checkpoints.mkdir()
        folder.outputs.mkdir()
        return folder
    raise TrainingError(f"Cannot find a free run id in {runs}.")


def is_run_id(name: str) -> bool:
    """Whether ``name`` can be a run id (a plain folder name, not hidden)."""
    return bool(name) and not name.startswith(".") and os.sep not in name and name not in (".", "..")
