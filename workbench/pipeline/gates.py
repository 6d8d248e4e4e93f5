"""Gates: the rules that decide whether an iteration's model is deployed. Each result says the
rule, the value measured, the limit and, when it fails, by how much.

Where the figures come from: accuracy is the model version's metric (``[registry] metric``,
in percent when it is a fraction) against the ``production`` version the iteration started
from; agreement and p90 latency are the devices' (a verify step) when there are some, else the
quantize step's figures on this machine; size is the file the iteration would deploy (the last
model file a step made)."""

from __future__ import annotations

from pathlib import Path

from workbench.pipeline.iterations import Iteration

MB = 1_000_000


def evaluate_gates(rules: dict, iteration: Iteration, models) -> list[dict]:
    """One result per rule: ``{"gate", "value", "limit", "passed", "by", "text"}``."""
    return [_evaluate(rule, float(limit), iteration, models) for rule, limit in rules.items()]


def _evaluate(rule: str, limit: float, iteration: Iteration, models) -> dict:
    if rule == "max_accuracy_drop":
        return _accuracy_drop(limit, iteration, models)
    if rule == "min_accuracy":
        value = _accuracy(iteration.output("metrics") or {}, models)
        return _at_least(rule, value, limit, "%", "accuracy")
    if rule == "min_agreement":
        return _at_least(rule, _agreement(iteration), limit, "%", "top-1 agreement")
    if rule == "max_p90_ms":
        return _at_most(rule, _p90_ms(iteration), limit, " ms", "p90 latency")
    if rule == "max_size_mb":
        model_file = iteration.output("model_file")
        value = Path(model_file).stat().st_size / MB if model_file and Path(model_file).is_file() else None
        return _at_most(rule, value, limit, " MB", f"size of {Path(model_file).name}" if model_file else "size")
    return _result(rule, None, limit, False, None, f"{rule}: no such gate")


def _result(rule, value, limit, passed, by, text) -> dict:
    return {"gate": rule, "value": None if value is None else round(value, 4), "limit": limit,
            "passed": passed, "by": None if by is None else round(by, 4), "text": text}


def _missing(rule: str, limit: float, what: str) -> dict:
    return _result(rule, None, limit, False, None, f"{rule}: the iteration measured no {what}; add the step that "
                                                   "measures it before the gate")


def _at_least(rule: str, value, limit: float, unit: str, what: str) -> dict:
    if value is None:
        return _missing(rule, limit, what)
    passed = value >= limit
    text = (f"{rule}: {what} {value:.2f}{unit}, at least {limit:g}{unit} asked" if passed else
            f"{rule}: {what} {value:.2f}{unit} is below the {limit:g}{unit} asked, by {limit - value:.2f}{unit}")
    return _result(rule, value, limit, passed, None if passed else limit - value, text)


def _at_most(rule: str, value, limit: float, unit: str, what: str) -> dict:
    if value is None:
        return _missing(rule, limit, what)
    passed = value <= limit
    text = (f"{rule}: {what} {value:.3f}{unit}, at most {limit:g}{unit} allowed" if passed else
            f"{rule}: {what} {value:.3f}{unit} is over the {limit:g}{unit} allowed, by {value - limit:.3f}{unit}")
    return _result(rule, value, limit, passed, None if passed else value - limit, text)


def _metric_name(models) -> str:
    return getattr(models.settings, "metric", "") or "val_acc"


def _accuracy(metrics: dict, models) -> float | None:
    value = metrics.get(_metric_name(models))
    if not isinstance(value, (int, float)):
        return None
    return float(value) * 100.0 if abs(value) <= 1.0 else float(value)


def _accuracy_drop(limit: float, iteration: Iteration, models) -> dict:
    rule = "max_accuracy_drop"
    new = _accuracy(iteration.output("metrics") or {}, models)
    if new is None:
        return _missing(rule, limit, f"accuracy ({_metric_name(models)} of the new model version)")
    if not iteration.production_at_start:
        return _result(rule, 0.0, limit, True, None,
                       f"{rule}: no production version to compare with; accuracy {new:.2f}%")
    from workbench.registry import RegistryError

    try:
        production = _accuracy(models.get(iteration.production_at_start).metrics, models)
    except RegistryError:
        production = None
    if production is None:
        return _result(rule, 0.0, limit, True, None, f"{rule}: production ({iteration.production_at_start}) has no "
                                                     f"{_metric_name(models)} to compare with")
    drop = production - new
    passed = drop <= limit
    base = (f"{rule}: accuracy {new:.2f}% against production {iteration.production_at_start}'s "
            f"{production:.2f}%")
    text = (f"{base}, {max(drop, 0):.2f} points lower, at most {limit:g} allowed" if passed else
            f"{base} fell {drop:.2f} points, more than the {limit:g} allowed, by {drop - limit:.2f} points")
    return _result(rule, drop, limit, passed, None if passed else drop - limit, text)


def _agreement(iteration: Iteration) -> float | None:
    verifications = iteration.output("verifications") or {}
    found = [output.get("top1_agreement") for record in verifications.values()
             for output in record.get("outputs", []) if output.get("top1_agreement") is not None]
    if found:
        return float(min(found))
    figures = _quantize_figures(iteration)
    return float(figures["agreement"]) if "agreement" in figures else None


def _p90_ms(iteration: Iteration) -> float | None:
    verifications = iteration.output("verifications") or {}
    found = [record.get("latency", {}).get("device", {}).get("p90_ms") for record in verifications.values()]
    found = [value for value in found if isinstance(value, (int, float))]
    if found:
        return float(max(found))
    figures = _quantize_figures(iteration)
    return float(figures["latency_p90_ms_quantized"]) if "latency_p90_ms_quantized" in figures else None


def _quantize_figures(iteration: Iteration) -> dict:
    for step in reversed(iteration.steps):
        if step.tool == "quantize" and step.state == "done":
            return step.outputs.get("figures") or {}
    return {}
