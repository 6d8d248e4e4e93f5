"""Checkpoints that survive a crash or a full disk: save, keep the newest few, restore.

A checkpoint is ``checkpoints/step-00000120.pt``, a ``torch.save`` of a dict with the model,
optimizer and scheduler states, the step and epoch, the random number generator states (Python,
NumPy, torch) and the hyper-parameters. It holds only tensors and plain values, so
``torch.load(path)`` opens it with the default ``weights_only=True``.

Each file is written to a temporary file in the same folder, flushed to the disk, then renamed
over its name, and only then is ``latest.json`` (``{"file": ..., "step": ..., "epoch": ...,
"time": ...}``) replaced the same way. A crash or a full disk at any moment leaves the previous
checkpoint and a ``latest.json`` naming it.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from workbench_trainkit.errors import TrainkitError

LATEST_FILE = "latest.json"
CHECKPOINT_NAME = re.compile(r"^step-(\d+)\.pt$")
TEMPORARY_SUFFIX = ".tmp"
FORMAT = 1


def checkpoint_name(step: int) -> str:
    """The file name of the checkpoint taken after ``step`` steps: ``step-00000120.pt``."""
    return f"step-{step:08d}.pt"


class Checkpointer:
    """Writes checkpoints into ``folder`` and keeps the newest ``keep`` of them."""

    def __init__(self, folder: str | Path, keep: int = 3, hparams: dict | None = None):
        self.folder = Path(folder)
        self.keep = max(1, int(keep))
        self.hparams = dict(hparams or {})
        self.folder.mkdir(parents=True, exist_ok=True)
        self._remove_leftover_temporaries()

    def save(self, step: int, epoch: int, model, optimizer=None, scheduler=None,
             extra: dict | None = None, rng_states: list | None = None) -> Path:
        """Write the checkpoint of ``step`` and point ``latest.json`` at it; returns its path.

        ``extra`` holds anything else to restore (plain values and tensors). ``rng_states``
        replaces this process's generator states, e.g. with every rank's in a distributed run.
        On failure nothing changes on disk and TrainkitError names the last good checkpoint.
        """
        state = {
            "format": FORMAT,
            "step": int(step),
            "epoch": int(epoch),
            "time": time.time(),
            "model": unwrap_model(model).state_dict(),
            "optimizer": optimizer.state_dict() if optimizer is not None else None,
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            "rng": rng_states if rng_states is not None else [capture_rng_state()],
            # A plain dict: HParams is a subclass that weights_only loading would refuse.
            "hparams": dict(self.hparams),
            "extra": dict(extra or {}),
        }
        path = self.folder / checkpoint_name(step)
        try:
            write_file_atomically(path, lambda file: torch.save(state, file))
        except WriteFailed as failure:
            raise self._failure(path, failure.reason) from failure.cause
        latest = {"file": path.name, "step": int(step), "epoch": int(epoch), "time": state["time"]}
        try:
            write_file_atomically(self.folder / LATEST_FILE,
                              lambda file: file.write(json.dumps(latest).encode()))
        except WriteFailed as failure:
            # latest.json still names the previous checkpoint; drop the new file so the folder
            # says one consistent thing (and the space comes back).
            path.unlink(missing_ok=True)
            raise self._failure(path, failure.reason) from failure.cause
        self._remove_old()
        return path

    def latest(self) -> Path | None:
        """The checkpoint ``latest.json`` names, or None when there is none yet."""
        return _latest_in(self.folder)

    def _failure(self, path: Path, reason: str) -> TrainkitError:
        previous = self.latest()
        last = (f"the last good checkpoint is {previous.name}" if previous is not None
                else "there is no earlier checkpoint")
        return TrainkitError(f"could not write checkpoint {path}: {reason}; {last} "
                             f"(free some space, then resume)")

    def _remove_old(self) -> None:
        numbered = sorted((int(m.group(1)), p) for p in self.folder.iterdir()
                          if (m := CHECKPOINT_NAME.match(p.name)))
        current = self.latest()
        for _, path in numbered[:-self.keep]:
            if path != current:
                path.unlink(missing_ok=True)

    def _remove_leftover_temporaries(self) -> None:
        # A process killed while writing leaves its temporary file behind; nothing reads them.
        for path in self.folder.glob(f".*{TEMPORARY_SUFFIX}"):
            path.unlink(missing_ok=True)


def find_checkpoint(path_or_folder: str | Path) -> Path:
    """The checkpoint file meant by a file, a ``checkpoints/`` folder or a run folder."""
    path = Path(path_or_folder)
    if path.is_file():
        return path
    if path.is_dir():
        for folder in (path, path / "checkpoints"):
            found = _latest_in(folder) or _newest_in(folder)
            if found is not None:
                return found
        raise TrainkitError(f"no checkpoint in {path}: there is no latest.json nor any "
                            "step-*.pt; resume from a run that has saved a checkpoint")
    raise TrainkitError(f"cannot resume from {path}: no such file or folder")


def load_checkpoint(path_or_folder: str | Path) -> dict:
    """The saved dict of a checkpoint (see ``find_checkpoint`` for what the path may be)."""
    path = find_checkpoint(path_or_folder)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several kinds for a damaged or foreign file
        raise TrainkitError(f"cannot read checkpoint {path}: {_first_line(exc)}; resume from "
                            "another checkpoint") from exc
    if not isinstance(state, dict) or "model" not in state or "step" not in state:
        raise TrainkitError(f"{path} is not a checkpoint written by the training helpers "
                            "(it has no model and step); resume from one of theirs")
    state["path"] = str(path)
    return state


def apply_checkpoint(state: dict, model, optimizer=None, scheduler=None, rank: int = 0) -> None:
    """Put a loaded checkpoint's states into the model, optimizer, scheduler and generators."""
    try:
        unwrap_model(model).load_state_dict(state["model"])
    except RuntimeError as exc:
        raise TrainkitError(f"checkpoint {state.get('path', '')} does not fit this model "
                            f"({_first_line(exc)}); resume with the model_name it was trained "
                            "with") from exc
    if optimizer is not None and state.get("optimizer") is not None:
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None and state.get("scheduler") is not None:
        scheduler.load_state_dict(state["scheduler"])
    rng = state.get("rng") or []
    if rng:
        restore_rng_state(rng[rank] if rank < len(rng) else rng[0])


def restore(path_or_folder: str | Path, model, optimizer=None, scheduler=None,
            rank: int = 0) -> tuple[int, int]:
    """Load a checkpoint into ``model``, the optimizer, scheduler and generators; -> (step, epoch)."""
    state = load_checkpoint(path_or_folder)
    apply_checkpoint(state, model, optimizer, scheduler, rank)
    return int(state["step"]), int(state["epoch"])


def unwrap_model(model):
    """The model inside a DistributedDataParallel or DataParallel wrapper, or ``model`` itself."""
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    return model.module if isinstance(model, wrappers) else model


def capture_rng_state() -> dict:
    """This process's Python, NumPy and torch generator states, as plain values and tensors."""
    numpy_state = np.random.get_state(legacy=False)
    state = {
        "python": random.getstate(),
        "numpy": {"bit_generator": numpy_state["bit_generator"],
                  "key": torch.from_numpy(np.array(numpy_state["state"]["key"], dtype=np.int64)),
                  "pos": int(numpy_state["state"]["pos"]),
                  "has_gauss": int(numpy_state["has_gauss"]),
                  "gauss": float(numpy_state["gauss"])},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Set the generators back to a state from ``capture_rng_state``."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy_state = state["numpy"]
    np.random.set_state({
        "bit_generator": numpy_state["bit_generator"],
        "state": {"key": numpy_state["key"].numpy().astype(np.uint32),
                  "pos": numpy_state["pos"]},
        "has_gauss": numpy_state["has_gauss"], "gauss": numpy_state["gauss"]})
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class WriteFailed(Exception):
    """A file could not be written; ``reason`` in words ("disk full"), ``cause`` the error."""

    def __init__(self, reason: str, cause: BaseException):
        super().__init__(reason)
        self.reason, self.cause = reason, cause


class _RecordingFile:
    """A file that remembers the OSError of a failed write.

    torch.save turns an error from ``write`` into a RuntimeError without the errno; keeping the
    OSError lets the message say "disk full" instead of torch's internal wording.
    """

    def __init__(self, file):
        self._file = file
        self.error: OSError | None = None

    def write(self, data) -> int:
        try:
            return self._file.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        self._file.flush()


def write_file_atomically(path: Path, write: Callable) -> None:
    """Write ``path`` via a temporary file in its folder: the old file or the new, never half."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                             suffix=TEMPORARY_SUFFIX)
    file = os.fdopen(descriptor, "wb")
    recorder = _RecordingFile(file)
    try:
        try:
            write(recorder)
            file.flush()
            os.fsync(file.fileno())
        finally:
            file.close()
        os.replace(temporary, path)
    except BaseException as exc:
        try:
            file.close()  # a close that flushes onto a full disk fails again: ignore it
        except OSError:
            pass
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, (OSError, RuntimeError)):
            raise WriteFailed(_reason(recorder.error or exc, path.parent), exc) from exc
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself to the disk (a folder entry is data too)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not possible on every OS (Windows); the rename is still atomic there
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _reason(exc: BaseException, folder: Path) -> str:
    """Why a write failed, in words: "disk full" when it is."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full" if exc.errno == errno.ENOSPC else "disk quota exceeded"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    try:
        if shutil.disk_usage(folder).free == 0:
            return "disk full"
    except OSError:
        pass
    return _first_line(exc)


def _latest_in(folder: Path) -> Path | None:
    try:
        latest = json.loads((folder / LATEST_FILE).read_text(encoding="utf-8"))
        path = folder / latest["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return path if path.is_file() else None


def _newest_in(folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    numbered = sorted((int(m.group(1)), p) for p in folder.iterdir()
                      if (m := CHECKPOINT_NAME.match(p.name)))
    return numbered[-1][1] if numbered else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
