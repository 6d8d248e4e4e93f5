"""Output files written whole or not at all: a temporary file beside the target, renamed at the
end. A job killed half-way leaves only a ``.partial`` file, which ``remove_partials`` clears."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from workbench.modeltools.errors import ModelToolError

PARTIAL_SUFFIX = ".partial"

# Told each temporary path before anything is written to it. The job process passes them to its
# parent, which removes them if it has to kill the job before they are renamed or removed.
partial_observers: list[Callable[[Path], None]] = []


def partial_path(target: Path) -> Path:
    """A fresh temporary name beside ``target`` (same folder, so the rename is atomic). It keeps
    the target's suffix before ``.partial`` ends it, since some writers pick a format from it."""
    return target.with_name(f".{target.stem}.{os.urandom(4).hex()}{target.suffix}{PARTIAL_SUFFIX}")


def check_output(target: Path, inputs: list[Path] | tuple[Path, ...] = ()) -> Path:
    """``target`` resolved, its folder created; ModelToolError when it would overwrite an input
    or its folder cannot be written."""
    target = Path(target).expanduser().resolve()
    for source in inputs:
        if source is not None and Path(source).expanduser().resolve() == target:
            raise ModelToolError(f"{target} is also the input; choose another output path with -o")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelToolError(f"cannot create the folder {target.parent}: {exc.strerror}") from None
    if not os.access(target.parent, os.W_OK):
        raise ModelToolError(f"cannot write to {target.parent}; choose another output path with -o")
    if target.is_dir():
        raise ModelToolError(f"{target} is a folder; give a file name with -o")
    return target


@contextlib.contextmanager
def atomic_output(target: Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it becomes ``target`` (fsynced, renamed),
    on any error it is removed and ``target`` is left as it was."""
    target = Path(target)
    temporary = partial_path(target)
    for observer in partial_observers:
        observer(temporary)
    try:
        yield temporary
        if not temporary.exists():
            raise ModelToolError(f"nothing was written for {target}")
        with open(temporary, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def remove_partials(target: Path) -> list[Path]:
    """Delete what a killed job left of ``target``'s temporary files; returns what was removed."""
    target = Path(target)
    removed = []
    if target.parent.is_dir():
        for leftover in target.parent.glob(f".{target.stem}.*{target.suffix}{PARTIAL_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
                removed.append(leftover)
    return removed


def file_size(path: Path) -> int:
    """Bytes of a model file, counting an ONNX model's external-data files beside it."""
    path = Path(path)
    size = path.stat().st_size
    for extra in (path.with_name(path.name + ".data"), path.with_suffix(".data")):
        if extra != path and extra.is_file():
            size += extra.stat().st_size
    return size
