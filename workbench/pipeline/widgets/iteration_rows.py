"""What the Pipeline panel shows of an iteration and of its steps, as text (no Qt): the dataset
it cut, its headline metrics, its gates (passed, or which failed and by how much), its state
(with the step it stopped at) and each step's outputs in a line."""

from __future__ import annotations

import json
import time
from pathlib import Path

from workbench.pipeline.iterations import DONE, FAILED, RUNNING, STOPPED, Iteration, StepState, trigger_text

OUTPUT_KEYS_SHOWN = ("dataset_version", "samples", "run_id", "model_version", "alias", "previous", "model_file")
"""The outputs a step's line names, in this order (the others are in its details)."""


# What a run logs beside its metrics: counters and the schedule, not a model's quality.
BOOKKEEPING = frozenset({"step", "epoch", "lr", "learning_rate"})


def iteration_metrics(iteration: Iteration) -> dict[str, float]:
    """The numeric metrics of the model version the iteration trained."""
    metrics = iteration.output("metrics") or {}
    return {name: float(value) for name, value in metrics.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name not in BOOKKEEPING}


def metric_names(iterations: list[Iteration], preferred: str = "") -> list[str]:
    """Every metric some iteration has: ``preferred`` (the project's metric) first, then the
    held-out ones (test_, then val_), then what training logged."""
    names = {name for iteration in iterations for name in iteration_metrics(iteration)}

    def rank(name: str) -> tuple[int, str]:
        order = 0 if name == preferred else 1 if name.startswith("test_") else 2 if name.startswith("val_") else 3
        return order, name

    return sorted(names, key=rank)


def trend_points(iterations: list[Iteration], metric: str) -> tuple[list[int], list[float], list[bool]]:
    """(iteration numbers, values of ``metric``, whether the iteration passed its gates)."""
    xs, ys, passed = [], [], []
    for iteration in sorted(iterations, key=lambda it: int(it.version)):
        value = iteration_metrics(iteration).get(metric)
        if value is not None:
            xs.append(int(iteration.version))
            ys.append(value)
            passed.append(all(gate.get("passed") for gate in iteration.gates))
    return xs, ys, passed


def format_metric(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.4g}"


def dataset_text(iteration: Iteration) -> str:
    """``0003 · 1,437 samples``; empty before the dataset step made one."""
    version = iteration.output("dataset_version")
    samples = iteration.output("samples")
    parts = [str(version)] if version else []
    if isinstance(samples, int):
        parts.append(f"{samples:,} samples")
    return " · ".join(parts)


def gates_text(iteration: Iteration) -> str:
    """``✓ 3 passed``, or ``✗ max_size_mb by 0.312 (1 of 3 failed)``; empty before the gate."""
    gates = iteration.gates
    if not gates:
        return ""
    failed = [gate for gate in gates if not gate.get("passed")]
    if not failed:
        return f"✓ {len(gates)} passed"
    named = ", ".join(gate["gate"] + (f" by {gate['by']:g}" if isinstance(gate.get("by"), (int, float)) else "")
                      for gate in failed)
    return f"✗ {named} ({len(failed)} of {len(gates)} failed)"


def gates_tooltip(iteration: Iteration) -> str:
    return "\n".join(("passed: " if gate.get("passed") else "FAILED: ") + str(gate.get("text", gate.get("gate")))
                     for gate in iteration.gates)


def state_text(iteration: Iteration) -> str:
    """``done``; ``running: 2/7 train``; ``failed at 6 (gate)``; ``stopped at 2 (train)``."""
    total = len(iteration.steps)
    if iteration.state == RUNNING:
        step = next((step for step in iteration.steps if step.state == RUNNING), None)
        return f"running: {step.index + 1}/{total} {step.tool}" if step else "running"
    if iteration.state in (FAILED, STOPPED) and iteration.failed_step is not None \
            and 0 <= iteration.failed_step < total:
        step = iteration.steps[iteration.failed_step]
        return f"{iteration.state} at {step.index + 1} ({step.tool})"
    return iteration.state


def started_by_text(iteration: Iteration) -> str:
    """``Started by schedule: daily at 02:00 (alice, 2026-12-02 02:00); resumed by resume: …``."""
    trigger = iteration.trigger

    def who(record: dict) -> str:
        parts = [part for part in (record.get("by"), format_moment(record.get("at"))) if part]
        return f" ({', '.join(parts)})" if parts else ""

    text = f"Iteration {iteration.version} started by {trigger_text(trigger)}" + (who(trigger) if trigger else "")
    for resume in iteration.resumes:
        text += f"; resumed by {trigger_text(resume)}{who(resume)}"
    return text


def format_moment(moment: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(moment)) if moment else ""


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def iteration_seconds(iteration: Iteration) -> float | None:
    if iteration.started_at is None:
        return None
    return (iteration.ended_at or time.time()) - iteration.started_at


def step_outputs_text(step: StepState) -> str:
    """The step's outputs in a line: what it made, by name."""
    parts = []
    for key in OUTPUT_KEYS_SHOWN:
        value = step.outputs.get(key)
        if value in (None, "", []):
            continue
        parts.append(f"{key.replace('_', ' ')} {Path(value).name if key == 'model_file' else value}")
    if step.outputs.get("files") and "model_file" not in step.outputs:
        parts.append(f"{len(step.outputs['files'])} files")
    if step.outputs.get("verifications"):
        parts.append("verified on " + ", ".join(step.outputs["verifications"]))
    if step.tool == "gate" and step.outputs.get("results"):
        failed = sum(1 for result in step.outputs["results"] if not result.get("passed"))
        parts.append(f"{failed} of {len(step.outputs['results'])} gates failed" if failed else
                     f"{len(step.outputs['results'])} gates passed")
    return ", ".join(parts)


def step_details_text(step: StepState) -> str:
    """Everything the record keeps of a step: its parameters, times, outputs and error."""
    lines = [f"Step {step.index + 1}: {step.tool} — {step.state}"]
    if step.started_at:
        lines.append(f"Started {format_moment(step.started_at)}"
                     + (f", took {format_seconds(step.seconds)}" if step.state != RUNNING else
                        f", running for {format_seconds(step.seconds)}"))
    if step.params:
        lines.append("Parameters: " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in step.params.items()))
    if step.error:
        lines += ["", f"Error: {step.error}"]
    if step.tool == "gate":
        for result in step.outputs.get("results", []):
            lines.append(("  passed  " if result.get("passed") else "  FAILED  ") + str(result.get("text", "")))
    shown = {key: value for key, value in step.outputs.items() if not (step.tool == "gate" and key == "results")}
    if shown:
        lines += ["", "Outputs:"]
        for key, value in shown.items():
            lines.append(f"  {key}: {_compact(value)}")
    if step.state == DONE and not shown and not step.error:
        lines.append("It recorded no outputs.")
    return "\n".join(lines)


def _compact(value, limit: int = 400) -> str:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        text = ", ".join(Path(item).name if "/" in item else item for item in value)
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, sort_keys=True)
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit] + " …"


def log_tail(path: Path, most_bytes: int = 6000) -> str:
    """The end of a log file (its last ``most_bytes``, from a whole line); empty when unreadable."""
    try:
        with open(path, "rb") as stream:
            stream.seek(0, 2)
            size = stream.tell()
            stream.seek(max(0, size - most_bytes))
            text = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    if size > most_bytes and "\n" in text:
        text = text.split("\n", 1)[1]
    return text.rstrip()
