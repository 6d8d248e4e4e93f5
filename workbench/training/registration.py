"""A completed run's model becomes the project's next model version (workbench.registry).

What is registered: the run's best weights by the project's metric (``outputs/best.pt``, which
the training helpers keep, with ``best.json`` saying by what) — else the last weights the run
wrote (``outputs/*.pt``, or the model files a script of one's own wrote anywhere, from
``products.json``) — and the ONNX files it exported. With them: the whole resolved
hyper-parameters, how it trained, its metrics, the dataset version, the code's commit, the
version it was fine-tuned from, and the run.

A registry that cannot take the model never fails the run: the run records why in
``registry_note``, and ``workbench registry`` says what to do.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.training.run_folder import RunFolder
from workbench.training.run_info import RunInfo
from workbench.training.written_files import read_products

WEIGHT_SUFFIXES = (".pt", ".pth", ".safetensors", ".ckpt", ".pt2")
BEST_WEIGHTS = Path("outputs") / "best.pt"
BEST_RECORD = Path("outputs") / "best.json"


def register_run(info: RunInfo, folder: RunFolder) -> None:
    """Register ``info``'s model as the next version, setting ``info.model_version`` (or
    ``info.registry_note`` when nothing is registered, and why)."""
    if not info.register or folder.no_register.exists():
        info.registry_note = "not registered (--no-register)"
        return
    from workbench.registry import RegistryError, open_versions

    files = model_files(info, folder)
    if not files:
        info.registry_note = "made no model file to register"
        return
    try:
        versions = open_versions(info.project_dir)
        result = versions.models.register(files, version_record(info, folder), run_folder=folder.path)
    except (RegistryError, OSError) as exc:
        info.registry_note = f"not registered: {exc}"
        return
    except Exception as exc:  # a project file that no longer parses, say: the run still ends
        info.registry_note = f"not registered: {type(exc).__name__}: {exc}"
        return
    info.model_version = result.version.name
    removed = result.retention.plan.remove if result.retention else []
    if removed:
        from workbench.platform.byte_sizes import format_size

        report = result.retention
        freed = (f"{format_size(report.freed_bytes)} of disk freed" if report.freed_bytes else
                 "no disk space freed while run folders keep their files")
        info.registry_note = ("retention removed version" + ("s " if len(removed) > 1 else " ")
                              + ", ".join(f"{n:04d}" for n in removed)
                              + f": {format_size(report.removed_bytes)}, {freed}")


def model_files(info: RunInfo, folder: RunFolder) -> list[tuple[Path, str]]:
    """The files to register, the main weights first, each with its role in words."""
    run_dir = Path(info.run_dir)
    found: list[tuple[Path, str]] = []
    best = run_dir / BEST_WEIGHTS
    if best.is_file():
        found.append((best, _best_role(run_dir / BEST_RECORD)))
    written = _written_models(info, run_dir)
    if not found:
        weights = [path for path in written if path.name.lower().endswith(WEIGHT_SUFFIXES)]
        if weights:
            found.append((weights[0], "weights at the run's end"))
    found += [(path, "onnx export") for path in written if path.name.lower().endswith(".onnx")]
    return found


def version_record(info: RunInfo, folder: RunFolder) -> dict:
    """The facts of the version that are the run's (the registry adds files and times)."""
    outcome = folder.read_outcome() or {}
    best = _read_json(Path(info.run_dir) / BEST_RECORD)
    evaluations = _evaluations(folder)
    return {
        # The weights registered are the best epoch's: its evaluation values describe them. The
        # run's last values (a test set scored at the end, say) are kept beside them.
        "metrics": {**info.final_metrics, **evaluations.get(best.get("epoch"), {})},
        "final_metrics": dict(info.final_metrics),
        "best": best or None,
        "dataset_version": info.dataset_version or None,
        "parent_version": info.from_version or None,
        "hyper_parameters": dict(info.hparams),
        "training": {
            "backend": info.backend, "cluster": info.cluster or None,
            "processes": outcome.get("processes") or info.nproc,
            "steps": outcome.get("step"), "epochs": max(evaluations, default=None),
            # As the training helpers saw it (cpu, cuda:0); unknown for a script of one's own.
            "device": outcome.get("device"),
            "duration_s": round(info.duration, 1) if info.duration is not None else None,
            "script": info.script,
        },
        "code": {"commit": info.git_commit, "dirty": info.git_dirty, "branch": info.git_branch},
        "run": {"id": info.id, "folder": info.run_dir},
    }


def _written_models(info: RunInfo, run_dir: Path) -> list[Path]:
    """Model files the run wrote: its outputs/ folder, then what products.json lists, newest
    first within each."""
    outputs = run_dir / "outputs"
    inside = sorted((path for path in outputs.glob("*") if path.is_file() and path.name != BEST_WEIGHTS.name
                     and path.name.lower().endswith(WEIGHT_SUFFIXES + (".onnx",))),
                    key=lambda path: path.stat().st_mtime, reverse=True) if outputs.is_dir() else []
    listed = []
    for product in sorted(read_products(run_dir), key=lambda p: p.get("modified", 0), reverse=True):
        path = (Path(info.project_dir) / product["path"]).resolve()
        if path.is_file() and path not in inside and path.name != BEST_WEIGHTS.name:
            listed.append(path)
    return inside + listed


def _best_role(record_path: Path) -> str:
    best = _read_json(record_path)
    if not best or "metric" not in best:
        return "best weights"
    value = best.get("value")
    text = f"best weights by {best['metric']}"
    if isinstance(value, (int, float)):
        text += f" ({value:.4g}" + (f" at epoch {best['epoch']}" if best.get("epoch") is not None else "") + ")"
    return text


def _evaluations(folder: RunFolder) -> dict[int, dict]:
    """The values logged with each epoch (``val_loss``, ``val_acc`` …), read in one pass; the
    last record of an epoch wins."""
    found: dict[int, dict] = {}
    try:
        with open(folder.metrics, encoding="utf-8") as lines:
            for line in lines:
                if '"epoch"' not in line:
                    continue
                try:
                    record = json.loads(line)
                    epoch = int(record["epoch"])
                except (ValueError, KeyError, TypeError):
                    continue
                found[epoch] = {key: value for key, value in record.items()
                                if key not in ("step", "epoch", "time") and isinstance(value, (int, float))}
    except OSError:
        return {}
    return found


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
