"""The ``[pipeline]`` table of workbench.toml: the steps of an iteration, in order, each with the
parameters its tool takes from the command line.

```toml
[[pipeline.steps]]
tool = "dataset"          # fraction, reason, new_val
[[pipeline.steps]]
tool = "train"            # from = "production" | "scratch" | NNNN, epochs, set = ["k=v"], hparams, nproc, cluster
staging = { devices = ["pixel"], every = 2, quantize = false, slot = "staging" }   # optional
[[pipeline.steps]]
tool = "convert"          # any model tool: the parameters of `workbench model convert` (opset, ...)
[[pipeline.steps]]
tool = "quantize"         # mode, calibration_method, ...
[[pipeline.steps]]
tool = "verify"           # devices = ["pixel"], runtime, threads, samples
[[pipeline.steps]]
tool = "gate"             # max_accuracy_drop, min_accuracy, min_agreement, max_p90_ms, max_size_mb
[[pipeline.steps]]
tool = "deploy"           # devices = [...], slot = "classifier", alias = "production"
```

Everything is checked before anything runs, and a fault is one error naming the line and the
key. tomllib gives no line numbers, so the line is found in the text: the n-th step's table
header, then the key's line under it.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.pipeline.errors import NoPipelineDeclared, PipelineError

PROJECT_FILE = "workbench.toml"

# The steps the pipeline itself knows, with each key's type; every other step name is a model
# tool (workbench.modeltools.registry), checked against its declaration.
GATE_RULES = {
    "max_accuracy_drop": "points the new model's accuracy may fall below production's",
    "min_accuracy": "the lowest accuracy (in percent) the new model may have",
    "min_agreement": "the lowest top-1 agreement in percent (the devices', else the quantized model's)",
    "max_p90_ms": "the highest p90 latency in ms (the devices', else the quantized model's here)",
    "max_size_mb": "the largest the model file to deploy may be, in MB (1 MB = 1,000,000 bytes)",
}
OWN_STEPS: dict[str, dict[str, type | tuple]] = {
    "dataset": {"fraction": (float, int), "reason": str, "new_val": bool},
    "train": {"from": str, "epochs": int, "set": list, "hparams": str, "nproc": int, "cluster": str,
              "staging": dict},
    "verify": {"devices": list, "runtime": str, "threads": int, "samples": int},
    "gate": {rule: (float, int) for rule in GATE_RULES},
    "deploy": {"devices": list, "slot": str, "alias": str},
}
PIPELINE_KEYS = {"steps", "triggers"}  # triggers: read by triggers.py
# train's staging = { ... }: its checkpoints pushed to a device slot while it trains.
STAGING_KEYS: dict[str, type] = {"devices": list, "every": int, "quantize": bool, "slot": str}
_TYPE_WORDS = {str: "text", int: "a whole number", bool: "true or false", list: "a list",
               (float, int): "a number", dict: "a table ({ key = value, ... })"}
_SLOT_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"


@dataclass
class StepDeclaration:
    """One declared step: its tool and its parameters as written."""

    tool: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"tool": self.tool, "params": dict(self.params)}


@dataclass
class PipelineDeclaration:
    steps: list[StepDeclaration]

    def to_json(self) -> dict:
        return {"steps": [step.to_json() for step in self.steps]}


def read_declaration(project_dir: Path | str) -> PipelineDeclaration:
    """The project's ``[pipeline]``, checked; PipelineError naming the line and the key of the
    first fault."""
    path = Path(project_dir) / PROJECT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelineError(f"cannot read {path}: {exc.strerror or exc}. Is {project_dir} a Workbench "
                            "project?") from None
    return parse_declaration(text, path.name)


def parse_declaration(text: str, file_name: str = PROJECT_FILE) -> PipelineDeclaration:
    """``[pipeline]`` of a workbench.toml's ``text``, checked."""
    try:
        settings = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(f"{file_name}: {exc}; fix the file's syntax.") from None
    lines = text.splitlines()
    pipeline = settings.get("pipeline")
    if pipeline is None:
        raise NoPipelineDeclared(f"{file_name} declares no pipeline: add [[pipeline.steps]] tables, one a step "
                            "(tool = \"dataset\", \"train\", \"convert\", ...).")
    where = _Lines(lines, file_name)
    if not isinstance(pipeline, dict):
        raise PipelineError(f"{where.of_key(None, 'pipeline')}: pipeline must be a table ([pipeline]).")
    for key in pipeline:
        if key not in PIPELINE_KEYS:
            raise PipelineError(f"{where.of_key(None, key)}: key {key!r} is not part of [pipeline] "
                                f"(it holds {', '.join(sorted(PIPELINE_KEYS))}){_close(key, PIPELINE_KEYS)}")
    steps = pipeline.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise PipelineError(f"{where.of_key(None, 'steps')}: key 'steps' must be one or more [[pipeline.steps]] "
                            "tables, each with a tool.")
    tools = _model_tools()
    declared = [_check_step(index, raw, where, tools) for index, raw in enumerate(steps)]
    return PipelineDeclaration(declared)


def _check_step(index: int, raw: dict, where: "_Lines", tools: dict) -> StepDeclaration:
    tool = raw.get("tool")
    known = [*OWN_STEPS, *tools]
    if not isinstance(tool, str) or not tool:
        raise PipelineError(f"{where.of_key(index, 'tool')}: step {index + 1} has no key 'tool' "
                            f"(one of {', '.join(known)}).")
    if tool not in known:
        raise PipelineError(f"{where.of_key(index, 'tool')}: key 'tool': step {index + 1}'s tool {tool!r} "
                            f"is none of {', '.join(known)}{_close(tool, known)}")
    params = {key: value for key, value in raw.items() if key != "tool"}
    label = f"step {index + 1} ({tool})"
    if tool in OWN_STEPS:
        allowed = OWN_STEPS[tool]
        for key, value in params.items():
            if key not in allowed:
                raise PipelineError(f"{where.of_key(index, key)}: key {key!r} is not a parameter of {label} "
                                    f"(it takes {', '.join(allowed)}){_close(key, allowed)}")
            expected = allowed[key]
            if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
                raise PipelineError(f"{where.of_key(index, key)}: key {key!r} of {label} must be "
                                    f"{_TYPE_WORDS[expected]}, not {value!r}.")
        _check_own_values(tool, params, index, label, where)
    else:
        _check_tool_params(tools[tool], params, index, label, where)
    return StepDeclaration(tool, params)


def _check_own_values(tool: str, params: dict, index: int, label: str, where: "_Lines") -> None:
    def fault(key: str, what: str) -> PipelineError:
        return PipelineError(f"{where.of_key(index, key)}: key {key!r} of {label} {what}.")

    if tool == "dataset" and "fraction" in params and not 0 < params["fraction"] <= 1:
        raise fault("fraction", f"must be more than 0 and at most 1 (0.5 is half), not {params['fraction']}")
    if tool == "train":
        start = params.get("from", "production")
        if not (start in ("production", "scratch") or start.isdigit() or re.fullmatch(r"[A-Za-z][\w-]*", start)):
            raise fault("from", f"must be \"production\", \"scratch\", a version number or an alias, not {start!r}")
        if params.get("epochs", 1) < 1:
            raise fault("epochs", "must be at least 1")
        for item in params.get("set", []):
            if not isinstance(item, str) or "=" not in item:
                raise fault("set", f"must list \"key=value\" texts, and {item!r} is not one")
        if "staging" in params:
            _check_staging(params, fault)
    for key in ("devices",):
        if key in params and not all(isinstance(d, str) and d for d in params[key]):
            raise fault(key, "must list device names (as `workbench device list` shows them)")
    if tool == "deploy" and "slot" in params and not re.fullmatch(r"[A-Za-z0-9_.-]+", params["slot"]):
        raise fault("slot", f"must be a slot name of letters, digits, '.', '_' or '-', not {params['slot']!r}")
    if tool == "gate":
        if not params:
            raise PipelineError(f"{where.of_key(index, 'tool')}: {label} has no rule: give one or more of "
                                f"{', '.join(GATE_RULES)}.")
        for key, value in params.items():
            if value < 0:
                raise fault(key, f"must not be negative, not {value}")


def _check_staging(params: dict, fault) -> None:
    staging = params["staging"]
    for key, value in staging.items():
        if key not in STAGING_KEYS:
            close = _close(key, STAGING_KEYS).rstrip(".")
            raise fault("staging", f"has no key {key!r} (it takes {', '.join(STAGING_KEYS)}{close})")
        expected = STAGING_KEYS[key]
        if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
            raise fault("staging", f"needs {key} to be {_TYPE_WORDS[expected]}, not {value!r}")
    devices = staging.get("devices")
    if not devices or not all(isinstance(d, str) and d for d in devices):
        raise fault("staging", "needs devices = [\"name\", ...], the devices whose slot gets the "
                    "checkpoints (as `workbench device list` shows them)")
    if staging.get("every", 1) < 1:
        raise fault("staging", f"needs every to be at least 1 epoch, not {staging['every']}")
    if "slot" in staging and not re.fullmatch(_SLOT_NAME, staging["slot"]):
        raise fault("staging", f"needs slot to be a slot name of letters, digits, '.', '_' or '-', "
                    f"not {staging['slot']!r}")
    if params.get("cluster"):
        raise fault("staging", "follows runs on this machine only, and this step trains on cluster "
                    f"{params['cluster']!r}: leave one of them out")


def _check_tool_params(spec, params: dict, index: int, label: str, where: "_Lines") -> None:
    from workbench.modeltools.errors import ModelToolError

    by_name = {param.name: param for param in spec.params if not param.positional and not param.is_output}
    for key, value in params.items():
        if key not in by_name:
            raise PipelineError(f"{where.of_key(index, key)}: key {key!r} is not a parameter of {label} "
                                f"(it takes {', '.join(by_name)}; the model and its output are the "
                                f"pipeline's){_close(key, by_name)}")
        try:
            by_name[key].parse(value)
        except ModelToolError as exc:
            raise PipelineError(f"{where.of_key(index, key)}: key {key!r} of {label}: {str(exc).rstrip('.')}.") from None


def _model_tools() -> dict:
    from workbench.modeltools.registry import all_tools

    return {name: spec for name, spec in all_tools().items() if name not in OWN_STEPS}


def _close(word: str, choices) -> str:
    match = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {match[0]}?" if match else "."


class _Lines:
    """Where a key of [pipeline] is written: ``workbench.toml line N``."""

    _STEP_HEADER = re.compile(r"^\s*\[\[\s*pipeline\s*\.\s*steps\s*\]\]")
    _TABLE_HEADER = re.compile(r"^\s*\[")

    def __init__(self, lines: list[str], file_name: str):
        self.lines = lines
        self.file_name = file_name

    def of_key(self, step: int | None, key: str) -> str:
        start, end = self._span(step)
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start, end):
            if pattern.match(self.lines[number]):
                return f"{self.file_name} line {number + 1}"
        return f"{self.file_name} line {start + 1 if start < len(self.lines) else len(self.lines)}"

    def _span(self, step: int | None) -> tuple[int, int]:
        """The lines of the step's table (header included), or of [pipeline] for None."""
        headers = [n for n, line in enumerate(self.lines) if self._STEP_HEADER.match(line)]
        if step is not None and step < len(headers):
            start = headers[step]
        else:
            start = next((n for n, line in enumerate(self.lines)
                          if re.match(r"^\s*\[\s*pipeline\s*\]", line)), headers[0] if headers else 0)
        end = next((n for n in range(start + 1, len(self.lines)) if self._TABLE_HEADER.match(self.lines[n])),
                   len(self.lines))
        return start, end
