"""What the Registry panel shows of each model version, as plain text and numbers: which metrics
get a column, the metric the plot starts with, sizes, devices, times. No Qt, so the rules read
(and are tested) on their own."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from workbench.registry.models import ModelRegistry, ModelVersion
from workbench.platform.byte_sizes import format_size  # noqa: F401  (the panel's sizes)

# The names most projects log, in the order a reader looks for them.
HEADLINE_METRICS = ("val_acc", "val_loss", "acc", "loss", "test_acc", "test_loss")
# The project's metric and up to this many more get a column; the plot offers every metric.
MORE_METRIC_COLUMNS = 3
NOT_METRICS = ("step", "epoch", "time")


def metric_value(version: ModelVersion, name: str) -> float | None:
    """The version's final value of ``name`` as a number (None when it has none)."""
    value = version.metrics.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def metric_names(versions: list[ModelVersion]) -> list[str]:
    """Every metric some version has a number for: the headline names first, then the rest
    alphabetically."""
    found = {name for version in versions for name in version.metrics
             if name not in NOT_METRICS and metric_value(version, name) is not None}
    return [name for name in HEADLINE_METRICS if name in found] + sorted(found - set(HEADLINE_METRICS))


def project_metric(settings_metric: str, versions: list[ModelVersion]) -> str:
    """The metric that says which version is better: the project's ``[registry] metric``, else
    val_acc, val_loss or whatever the versions have (empty when they have none)."""
    if settings_metric:
        return settings_metric
    names = metric_names(versions)
    return names[0] if names else ""


def metric_columns(settings_metric: str, versions: list[ModelVersion]) -> list[str]:
    """The metrics the table shows: the project's metric, then the headline ones."""
    first = project_metric(settings_metric, versions)
    others = [name for name in metric_names(versions) if name != first][:MORE_METRIC_COLUMNS]
    return ([first] if first else []) + others


def format_metric(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def format_created(stamp: str) -> str:
    """``2024-05-03T14:22:10+0200`` -> ``2024-05-03 14:22`` (the text as it is when it is not
    an ISO time)."""
    stamp = str(stamp or "")
    if len(stamp) >= 16 and stamp[10] == "T":
        return f"{stamp[:10]} {stamp[11:16]}"
    return stamp


def dataset_version_text(version: ModelVersion) -> str:
    value = version.info.get("dataset_version")
    return "" if value in (None, "") else str(value)


@dataclass(frozen=True)
class DeviceCheck:
    """The latest verification of a version on one device."""

    device: str
    passed: bool
    time: str
    count: int          # how many times it was verified there


def device_checks(version: ModelVersion) -> list[DeviceCheck]:
    """The devices a version was verified on, each with its latest result, in the order they
    were first verified."""
    latest: dict[str, DeviceCheck] = {}
    for record in version.info.get("verifications") or []:
        if not isinstance(record, dict) or not record.get("device"):
            continue
        device = str(record["device"])
        count = latest[device].count + 1 if device in latest else 1
        latest[device] = DeviceCheck(device, bool(record.get("passed")), str(record.get("time", "")), count)
    return list(latest.values())


def verified_text(checks: list[DeviceCheck]) -> str:
    return ", ".join(f"{check.device} {'✓' if check.passed else '✗'}" for check in checks)


def verified_tooltip(checks: list[DeviceCheck]) -> str:
    lines = [f"{check.device}: {'passed' if check.passed else 'failed'} ({format_created(check.time)}"
             + (f", {check.count} checks" if check.count > 1 else "") + ")" for check in checks]
    return "\n".join(lines) if lines else "Not verified on a device yet"


def file_to_open(registry: ModelRegistry, version: ModelVersion) -> Path | None:
    """The file of a version a model tool opens: its first ONNX file (the export made with
    it), else its weights; None when it has no file on disk."""
    onnx = [item for item in version.files if item.name.lower().endswith(".onnx")]
    for item in onnx + ([version.weights] if version.weights else []):
        path = registry.folder / item.name
        if path.is_file():
            return path
    return None


def points(versions: list[ModelVersion], name: str) -> tuple[list[int], list[float]]:
    """(version numbers, values) of the versions that have ``name``, oldest first."""
    pairs = sorted((version.number, metric_value(version, name)) for version in versions)
    kept = [(number, value) for number, value in pairs if value is not None]
    return [number for number, _ in kept], [value for _, value in kept]
