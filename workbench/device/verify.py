"""Does the model give the same answers on the device? Verify it against this computer.

The same inputs (the project's dataset samples, a ``.npz`` file, or random inputs of the model's
shape when there is neither) go through the model on the device and through onnxruntime here
(``workbench.modeltools.runtimes.open_model``, the reference every model tool uses). Each output
gets its largest and mean absolute difference and, for a classifier's ``(N, classes)`` output,
the share of samples whose top-1 class agrees; the model passes when every output is within the
tolerances. A benchmark on both sides gives the latency table.

Each verification is added to the history of that model version (by sha256):
``<project>/.workbench/device-verifications.jsonl``, or ``<user data dir>/device-verifications.jsonl``
for a model outside any project. A model that is a file of a version in the project's model
registry (``registry/models/bestmodel_0003.int8.onnx``) also gets the verification in that
version's record (``neural_net_info_0003.yaml``); a registry that fails to take it never fails
the verification, whose ``registry_note`` then says why it was not recorded.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

import numpy as np

from workbench.device.errors import DeviceError
from workbench.device.paired import now_iso, user_data_dir
from workbench.device.units import EMPTY, memory_text
from workbench.tasks import CancelToken, Progress

log = logging.getLogger(__name__)

DEFAULT_ATOL = 1e-3
DEFAULT_MIN_AGREEMENT = 99.0   # percent
DEFAULT_SAMPLES = 256
DEFAULT_BATCH = 32
DEFAULT_BENCH_RUNS = 50
DEFAULT_BENCH_WARMUP = 5
HISTORY_FILE = "device-verifications.jsonl"
WIRE_DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
               "uint32", "int64", "uint64", "bool")


@dataclass
class OutputCheck:
    """One output compared: device against this computer."""

    name: str
    shape: list[int]
    max_abs_diff: float
    mean_abs_diff: float
    top1_agreement: float | None
    """Percent of samples with the same top-1 class (None: not a ``(N, classes)`` output)."""
    passed: bool
    note: str = ""


@dataclass
class Verification:
    """A model verified on a device: the per-output comparison, the latency table, pass/fail."""

    model: str
    model_name: str
    sha256: str
    size: int
    device_name: str
    device_id: str
    address: str
    runtime: str
    data_source: str
    samples: int
    atol: float
    min_agreement: float
    outputs: list[OutputCheck] = field(default_factory=list)
    latency: dict[str, dict] = field(default_factory=dict)
    """"device" and "host": init_ms, p50_ms, p90_ms, p99_ms, mean_ms (and the device's
    peak_rss_bytes), batch and runs."""
    accuracy: dict[str, float] | None = None
    """Top-1 accuracy in percent on the labels, "host" and "device", when the data has labels."""
    passed: bool = False
    time: str = ""
    device_run_ms: float = 0.0
    model_version: str = ""
    """The registry's model version the model is a file of ("0003"), "" for none."""
    registry_note: str = ""
    """Why the verification is not in that version's record ("" when it is, or there is none)."""

    def to_json(self) -> dict:
        return _finite(asdict(self))

    @classmethod
    def from_json(cls, data: dict) -> "Verification":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["outputs"] = [OutputCheck(**o) for o in values.get("outputs") or []]
        return cls(**values)

    def to_text(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        lines = [f"{verdict}  {self.model_name} (sha256 {self.sha256[:12]}) on {self.device_name} "
                 f"at {self.address} ({self.runtime}), against this computer",
                 f"{self.samples} samples from {self.data_source}; passes when the max abs diff "
                 f"is at most {self.atol:g} and the top-1 agreement at least "
                 f"{self.min_agreement:g} %", ""]
        rows = [[o.name, _shape_text(o.shape), _number(o.max_abs_diff), _number(o.mean_abs_diff),
                 "-" if o.top1_agreement is None else f"{o.top1_agreement:.1f} %",
                 ("pass" if o.passed else "FAIL") + (f" ({o.note})" if o.note else "")]
                for o in self.outputs]
        lines += text_table(["output", "shape", "max abs diff", "mean abs diff", "top-1 agreement",
                         "result"], rows)
        if self.accuracy:
            lines += ["", f"accuracy on the labels: this computer {self.accuracy['host']:.1f} %, "
                          f"device {self.accuracy['device']:.1f} %"]
        if self.latency:
            lines += [""] + latency_table(self.latency)
        if self.registry_note:
            lines += ["", f"warning: {self.registry_note}"]
        elif self.model_version:
            lines += ["", f"recorded under model version {self.model_version} in the registry"]
        return "\n".join(lines)


def latency_table(latency: dict[str, dict]) -> list[str]:
    """The latency table's lines: one row per side ("device", "host")."""
    first = next(iter(latency.values()))
    warmup = f" after {first['warmup']} warm-up" if first.get("warmup") else ""
    title = (f"latency, batch {first.get('batch', 1)}, {first.get('runs', '?')} timed "
             f"runs{warmup}:")
    rows = []
    for side, figures in latency.items():
        label = "this computer" if side == "host" else side
        peak = figures.get("peak_rss_bytes")
        rows.append([label, _ms(figures.get("init_ms")), _ms(figures.get("p50_ms")),
                     _ms(figures.get("p90_ms")), _ms(figures.get("p99_ms")),
                     _ms(figures.get("mean_ms")), memory_text(peak) if peak else EMPTY])
    return [title] + ["  " + line for line in text_table(
        ["", "init ms", "p50 ms", "p90 ms", "p99 ms", "mean ms", "peak memory"], rows)]


# --- Inputs ------------------------------------------------------------------------------

def inputs_for(model: Path, npz: Path | None = None, project: Path | None = None,
               split: str = "test", samples: int | None = DEFAULT_SAMPLES,
               input_shape: list | None = None):
    """The inputs to verify ``model`` on (an EvaluationData): ``npz`` when given, else the
    dataset of ``project`` (or of the project holding the model), else random inputs of the
    model's input shape (``input_shape``, fixed but for the batch)."""
    from workbench.modeltools.errors import ModelToolError

    try:
        from workbench.modeltools.data import EvaluationData, from_project, load_npz

        if npz is not None:
            return load_npz(Path(npz).expanduser()).take(samples)
        root = project_of(model, project)
        if root is not None:
            from workbench.modeltools.project_code import ProjectCode

            code = ProjectCode(root)
            return from_project(code, split, code.hparams(Path(model)), limit=samples)
    except ModelToolError as exc:
        raise DeviceError(str(exc)) from None
    sample = list(input_shape or [])[1:]
    if not sample or not all(isinstance(d, int) and d > 0 for d in sample):
        raise DeviceError(f"{model} is in no project and its input shape is not fixed, so there are "
                          "no inputs to run it on: give a .npz file (x: inputs, y: labels) or "
                          "the project")
    count = samples or DEFAULT_SAMPLES
    x = np.random.default_rng(0).random((count, *sample), dtype=np.float32)
    return EvaluationData(x, None, f"random inputs shaped {tuple(sample)} (no dataset given)")


def project_of(model: Path, project: Path | None = None) -> Path | None:
    """``project`` (checked), or the project folder that holds ``model``."""
    if project is not None:
        root = Path(project).expanduser().absolute()
        if not (root / "workbench.toml").is_file():
            raise DeviceError(f"{root} is not a Workbench project (it has no workbench.toml); give "
                              "the project's folder")
        return root
    from workbench.modeltools.project_code import find_project_root

    return find_project_root(Path(model).absolute())


# --- Verifying ---------------------------------------------------------------------------

def verify_model(link, model: Path, data=None, *, npz: Path | None = None,
                 project: Path | None = None, split: str = "test",
                 samples: int | None = DEFAULT_SAMPLES, atol: float = DEFAULT_ATOL,
                 min_agreement: float = DEFAULT_MIN_AGREEMENT, batch: int = DEFAULT_BATCH,
                 bench_runs: int = DEFAULT_BENCH_RUNS, bench_warmup: int = DEFAULT_BENCH_WARMUP,
                 threads: int = 1, record: bool = True,
                 progress: Callable[[Progress], None] | None = None,
                 cancel: CancelToken | None = None) -> Verification:
    """Verify ``model`` on the device of ``link`` (a DeviceLink) against onnxruntime here, on
    ``data`` (an EvaluationData) or the inputs ``inputs_for`` finds; recorded in the model's
    history unless ``record`` is False. ``bench_runs=0`` skips the latency table."""
    from workbench.modeltools import measure
    from workbench.modeltools.errors import ModelToolError
    from workbench.modeltools.runtimes import open_model

    model = Path(model).expanduser().absolute()
    say = progress or (lambda report: None)
    check = cancel.raise_if_cancelled if cancel is not None else (lambda: None)
    try:
        host = open_model(model, threads)
    except ModelToolError as exc:
        raise DeviceError(str(exc)) from None
    if data is None:
        data = inputs_for(model, npz, project, split, samples, host.input_shape)
    else:
        data = data.take(samples)
    try:
        data.check_fits(host.input_shape, model)
    except ModelToolError as exc:
        raise DeviceError(str(exc)) from None
    if len(host.input_names) != 1:
        raise DeviceError(f"{model.name} takes {len(host.input_names)} inputs "
                          f"({', '.join(host.input_names)}); verify feeds one. Verify it with a "
                          "script on the device instead")
    check()
    loaded = link.load(model, model.name, progress, cancel)
    input_name = loaded.inputs[0]["name"] if loaded.inputs else host.input_names[0]
    dtype = loaded.inputs[0].get("dtype") if loaded.inputs else "float32"
    dtype = dtype if dtype in WIRE_DTYPES else "float32"

    step = host.fixed_batch or max(1, batch)
    host_parts: dict[str, list] = {n: [] for n in host.output_names}
    device_parts: dict[str, list] = {n: [] for n in host.output_names}
    missing: set[str] = set()
    device_ms = 0.0
    for start in range(0, len(data), step):
        check()
        chunk = data.x[start:start + step]
        taken = len(chunk)
        if host.fixed_batch and taken < step:  # the last batch, padded with its last sample
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], step - taken, axis=0)])
        say(Progress(f"Running {len(data)} samples on {link.name} and here: {start} done",
                     start / len(data)))
        try:
            expected = host.run(chunk)
        except Exception as exc:
            raise DeviceError(f"{model.name} failed to run here on a batch shaped "
                              f"{tuple(chunk.shape)} ({_first_line(exc)})") from None
        outputs, run_ms = link.run(loaded, {input_name: np.ascontiguousarray(chunk, dtype=dtype)})
        device_ms += run_ms
        for name, value in zip(host.output_names, expected):
            host_parts[name].append(np.asarray(value)[:taken])
            got = outputs.get(name)
            if got is None:
                missing.add(name)
            else:
                device_parts[name].append(np.asarray(got)[:taken])
    say(Progress(f"Compared {len(data)} samples", 1.0))

    checks = []
    host_outputs = {n: np.concatenate(p) for n, p in host_parts.items()}
    for name in host.output_names:
        checks.append(_compare(name, host_outputs[name],
                               None if name in missing else device_parts[name], atol,
                               min_agreement))
    accuracy = None
    first = host.output_names[0]
    if data.y is not None and host_outputs[first].ndim == 2 and first not in missing:
        device_first = np.concatenate(device_parts[first])
        if device_first.shape == host_outputs[first].shape:
            accuracy = {"host": round(measure.accuracy(host_outputs[first], data.y), 3),
                        "device": round(measure.accuracy(device_first, data.y), 3)}

    latency: dict[str, dict] = {}
    if bench_runs > 0:
        check()
        one = data.x[:host.fixed_batch or 1]
        say(Progress(f"Benchmarking on {link.name}: {bench_runs} runs", None))
        latency["device"] = _rounded(link.bench(loaded, warmup=bench_warmup, runs=bench_runs,
                                                inputs={input_name: one.astype(dtype)}))
        check()
        say(Progress(f"Benchmarking here: {bench_runs} runs", None))
        here = measure.latency(lambda: host.run(one), repeats=bench_runs, warmup=bench_warmup,
                               check_cancelled=check)
        latency["host"] = _rounded({"init_ms": None, "p50_ms": here["p50"], "p90_ms": here["p90"],
                                    "p99_ms": here["p99"], "mean_ms": here["mean"],
                                    "runs": bench_runs, "warmup": bench_warmup,
                                    "batch": len(one)})

    verification = Verification(
        model=str(model), model_name=model.name, sha256=loaded.sha256, size=model.stat().st_size,
        device_name=link.name, device_id=link.device_id, address=link.address,
        runtime=loaded.runtime, data_source=data.source, samples=len(data), atol=atol,
        min_agreement=min_agreement, outputs=checks, latency=latency, accuracy=accuracy,
        passed=all(c.passed for c in checks), time=now_iso(), device_run_ms=round(device_ms, 3))
    if record:
        try:
            history_for(model, project).add(verification)
        except OSError as exc:
            log.warning("the verification of %s could not be recorded: %s", model, exc)
        record_in_registry(verification, model, project)
    return verification


def record_in_registry(verification: Verification, model: Path, project: Path | None = None) -> None:
    """Add ``verification`` to the record of the model version ``model`` is a file of (none:
    nothing to do); sets its ``model_version``, and its ``registry_note`` when the registry
    could not take it. Never raises: the verification happened whatever the registry says."""
    from workbench.modeltools.model_versions import version_file
    from workbench.registry import RegistryError
    from workbench.registry.models import MODEL_PREFIX

    try:
        located = version_file(model, project)
    except RegistryError as exc:
        if model.name.startswith(MODEL_PREFIX):
            verification.registry_note = (f"not recorded in the model registry: "
                                          f"{str(exc).rstrip('.')}")
        return
    if located is None:
        return
    verification.model_version = located.version
    try:
        located.models.record_verification(located.number, registry_record(verification))
    except Exception as exc:  # noqa: BLE001 - no registry failure undoes a verification
        if isinstance(exc, OSError):
            why = exc.strerror or str(exc)
        elif isinstance(exc, RegistryError):
            why = str(exc)
        else:
            log.exception("recording the verification of %s failed", model)
            why = f"{type(exc).__name__}: {exc}"
        verification.registry_note = (f"not recorded under model version {located.version} in "
                                      f"the registry: {why.rstrip('.')}")


def registry_record(verification: Verification) -> dict:
    """What a model version's record keeps of a verification: the device, the file, pass or
    fail and its figures (agreement and max abs diff over the outputs, the device's latency)."""
    record: dict[str, Any] = {
        "device": verification.device_name, "device_id": verification.device_id,
        "model_file": verification.model_name, "sha256": verification.sha256,
        "passed": verification.passed, "runtime": verification.runtime,
        "samples": verification.samples, "data": verification.data_source}
    agreements = [o.top1_agreement for o in verification.outputs if o.top1_agreement is not None]
    if agreements:
        record["agreement"] = min(agreements)
    if verification.outputs:
        record["max_abs_diff"] = max(o.max_abs_diff for o in verification.outputs)
    if verification.accuracy:
        record["accuracy"] = verification.accuracy.get("device")
    device = verification.latency.get("device") or {}
    for key in ("p50_ms", "p90_ms"):
        if device.get(key) is not None:
            record[f"latency_{key}"] = device[key]
    return _finite(record)


def _compare(name: str, expected: np.ndarray, parts: list | None, atol: float,
             min_agreement: float) -> OutputCheck:
    shape = [int(d) for d in expected.shape]
    if parts is None:
        return OutputCheck(name, shape, math.inf, math.inf, None, False, "missing on the device")
    got = np.concatenate(parts)
    if got.shape != expected.shape:
        return OutputCheck(name, shape, math.inf, math.inf, None, False,
                           f"the device gave shape {_shape_text(list(got.shape))}")
    a, b = expected.astype(np.float64), got.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    same_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(same_nan, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    max_diff = float(diff.max()) if diff.size else 0.0
    mean_diff = float(diff.mean()) if diff.size else 0.0
    agreement = None
    if expected.ndim == 2 and expected.shape[1] > 1 and len(expected):
        from workbench.modeltools import measure

        agreement = round(measure.agreement(got, expected), 3)
    passed = max_diff <= atol and (agreement is None or agreement >= min_agreement)
    return OutputCheck(name, shape, max_diff, mean_diff, agreement, passed)


# --- History -----------------------------------------------------------------------------

class VerificationHistory:
    """The verifications of a project's models (or of models outside any project), one JSON
    object a line, oldest first."""

    def __init__(self, project: Path | None = None):
        self.project = Path(project) if project is not None else None
        if self.project is not None:
            self.path = self.project / ".workbench" / HISTORY_FILE
        else:
            self.path = user_data_dir() / HISTORY_FILE

    def add(self, verification: Verification) -> None:
        entry = verification.to_json()
        if self.project is not None:
            try:  # a path inside the project stays valid when the project moves
                entry["model"] = str(Path(entry["model"]).relative_to(self.project))
            except ValueError:
                pass
        if self.project is not None:
            from workbench.project import ensure_state_dir

            ensure_state_dir(self.project)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        # One write of one line to a file opened for appending: windows adding at once do not
        # mix their lines.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def entries(self, sha256: str | None = None) -> list[Verification]:
        """The verifications (of the model version ``sha256`` only, when given), oldest first;
        lines that cannot be read are skipped."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        found = []
        for line in text.splitlines():
            try:
                entry = Verification.from_json(json.loads(line))
            except (ValueError, TypeError, KeyError):
                continue
            if sha256 is None or entry.sha256 == sha256:
                found.append(entry)
        return found


def history_for(model: Path, project: Path | None = None) -> VerificationHistory:
    """The history ``model``'s verifications go to: its project's, else the user's."""
    return VerificationHistory(project_of(model, project))


# --- Formatting --------------------------------------------------------------------------

def _rounded(figures: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in figures.items()}


def _finite(value: Any) -> Any:
    """JSON has no infinity: an output missing on the device has diffs of None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.2e}"


def _ms(value: Any) -> str:
    return EMPTY if value is None else f"{value:.3f}"


def _shape_text(shape: list) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def text_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """``headers`` and ``rows`` in columns aligned with two spaces, one string a line."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in [headers, *rows]]


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__
