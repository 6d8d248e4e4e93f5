"""Output files written whole or not at all: a temporary file beside the target, renamed at the
end. A job killed half-way leaves only a ``.partial`` file, which ``remove_partials`` clears.

An output the user named (``-o``) replaces what is there: they asked for it. A default output
(``default_output``) never does: it takes the next free name, ``model.int8-2.onnx``,
``model.int8-3.onnx``, ..., so an earlier variant the user wants to compare survives."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from workbench.modeltools.errors import ModelToolError
from workbench.platform.atomic_files import move_into_place

PARTIAL_SUFFIX = ".partial"

# Told each temporary path before anything is written to it. The job process passes them to its
# parent, which removes them if it has to kill the job before they are renamed or removed.
partial_observers: list[Callable[[Path], None]] = []


def partial_path(target: Path) -> Path:
    """A fresh temporary name beside ``target`` (same folder, so the rename is atomic). It keeps
    the target's suffix before ``.partial`` ends it, since some writers pick a format from it."""
    return target.with_name(f".{target.stem}.{os.urandom(4).hex()}{target.suffix}{PARTIAL_SUFFIX}")


# The default output help of every built-in tool ends with this.
NEVER_OVERWRITES = ("an existing file is never replaced: the name gets -2, -3, ... instead; "
                    "a file named by -o is replaced")


def free_path(path: Path, partners: tuple[str, ...] = ()) -> Path:
    """``path`` when neither it nor its ``partners`` (the same name with these suffixes, e.g.
    ``(".pt2",)`` for the program written beside an ONNX model) exist, else the first of
    ``<stem>-2<suffix>``, ``<stem>-3<suffix>``, ... for which none of them exist.

    A model version's own name (``bestmodel_0003.onnx``) is numbered ``bestmodel_0003.2.onnx``:
    the registry tells a version's files by what comes before the first dot, so the numbered
    name is still a file of version 0003."""
    from workbench.registry.models import MODEL_PREFIX

    path = Path(path)
    version_named = path.stem.startswith(MODEL_PREFIX) and path.stem[len(MODEL_PREFIX):].isdigit()
    mark = "." if version_named else "-"

    def taken(candidate: Path) -> bool:
        return any(os.path.lexists(p) for p in
                   (candidate, *(candidate.with_suffix(s) for s in partners)))

    candidate, number = path, 1
    while taken(candidate):
        number += 1
        candidate = path.with_name(f"{path.stem}{mark}{number}{path.suffix}")
    return candidate


def default_output(source: Path, suffix_part: str, extension: str,
                   partners: tuple[str, ...] = ()) -> Path:
    """A tool's default output beside ``source``: ``<stem>.<suffix_part><extension>``
    (``model.int8.onnx``; ``<stem><extension>`` when ``suffix_part`` is empty), numbered
    (``model.int8-2.onnx``) when that name, or a partner of it (see ``free_path``), exists."""
    source = Path(source)
    middle = f".{suffix_part}" if suffix_part else ""
    return free_path(source.with_name(f"{source.stem}{middle}{extension}"), partners)


def check_output(target: Path, inputs: list[Path] | tuple[Path, ...] = (), flag: str = "-o") -> Path:
    """``target`` resolved, its folder created; ModelToolError when it would overwrite an input
    or its folder cannot be written. ``flag`` is the option the messages suggest to change it
    (``--csv`` for a tool whose output is named that way)."""
    target = Path(target).expanduser().resolve()
    for source in inputs:
        if source is not None and Path(source).expanduser().resolve() == target:
            raise ModelToolError(f"{target} is also the input; choose another output path with {flag}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelToolError(f"cannot create the folder {target.parent}: {exc.strerror}") from None
    if not os.access(target.parent, os.W_OK):
        raise ModelToolError(f"cannot write to {target.parent}; choose another output path with {flag}")
    if target.is_dir():
        raise ModelToolError(f"{target} is a folder; give a file name with {flag}")
    return target


@contextlib.contextmanager
def atomic_output(target: Path, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it becomes ``target`` (fsynced, renamed),
    on any error it is removed and ``target`` is left as it was. With ``overwrite`` False (a
    default output) a file that appeared at ``target`` meanwhile is not replaced:
    ModelToolError."""
    target = Path(target)
    temporary = partial_path(target)
    for observer in partial_observers:
        observer(temporary)
    try:
        yield temporary
        if not temporary.exists():
            raise ModelToolError(f"nothing was written for {target}")
        if overwrite:
            move_into_place(temporary, target)
        else:
            with open(temporary, "rb+") as written:
                os.fsync(written.fileno())
            _rename_without_replacing(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def _rename_without_replacing(temporary: Path, target: Path) -> None:
    # A hard link fails when the name exists, so two jobs cannot both take one free name.
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise ModelToolError(f"{target} was created by something else while this tool ran; "
                             "run the tool again to write the next free name") from None
    except OSError:
        # A file system without hard links: look, then rename.
        if os.path.lexists(target):
            raise ModelToolError(f"{target} was created by something else while this tool ran; "
                                 "run the tool again to write the next free name") from None
        os.replace(temporary, target)
        return
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
