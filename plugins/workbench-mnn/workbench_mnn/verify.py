"""The check after a conversion: the MNN model and the ONNX model run on the same inputs (the
``data`` file, else the project's dataset, else seeded random inputs), their outputs compared,
and each timed at batch 1."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from workbench.modeltools import measure
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

# Largest fp32 difference (relative to the outputs' scale) before the report warns: the two
# runtimes order their sums differently, which costs a few float32 ulps, not more.
FP32_TOLERANCE = 1e-3
# With fp16 or quantized weights outputs move; the report warns when the top-1 answers do.
AGREEMENT_WARNING = 98.0
LATENCY_BUDGET_S = 1.5


class Verification:
    """``prepare()`` before the conversion (so bad data stops the tool before any work),
    ``check(mnn_path, report)`` after it."""

    def __init__(self, source: Path, values: dict, context):
        self.source = source
        self.values = values
        self.context = context
        self.reference = None
        self.x: np.ndarray | None = None
        self.y: np.ndarray | None = None
        self.data_source = ""
        self.warnings: list[str] = []

    @property
    def wanted(self) -> int:
        return int(self.values.get("verify_samples") or 0)

    def prepare(self) -> None:
        if self.wanted <= 0:
            self.warnings.append("The conversion was not checked (verify_samples is 0).")
            return
        from workbench.modeltools.runtimes import open_onnx

        try:
            self.reference = open_onnx(self.source, self.values.get("threads") or 1)
        except ModelToolError as exc:
            self.warnings.append(f"The conversion was not checked: {exc}")
            return
        if len(self.reference.input_names) != 1:
            self.warnings.append(
                f"The conversion was not checked: {self.source.name} takes "
                f"{len(self.reference.input_names)} inputs and the check feeds one.")
            self.reference = None
            return
        self._choose_inputs()

    def _choose_inputs(self) -> None:
        from workbench.modeltools.data import load_npz

        shape = self.reference.input_shape
        if self.values.get("data"):
            data = load_npz(Path(self.values["data"]).expanduser()).take(self.wanted)
            data.check_fits(shape, self.source)
            self.x, self.y, self.data_source = data.x, data.y, data.source
            return
        project = getattr(self.context, "project", None)
        if project is not None:
            data = self._project_data(Path(project), shape)
            if data is not None:
                self.x, self.y, self.data_source = data.x, data.y, data.source
                return
        free = [i for i, d in enumerate(shape) if i > 0 and d is None]
        if free:
            self.warnings.append(
                f"The conversion was not checked: {self.source.name}'s input has free "
                "dimensions besides the batch; give inputs with --data.")
            self.reference = None
            return
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((self.wanted, *shape[1:])).astype(np.float32)
        self.data_source = "seeded random inputs"
        self.warnings.append("Checked on random inputs, not real data: give --data (an .npz) "
                             "for a check that reflects what the model will see.")

    def _project_data(self, project: Path, shape: list):
        from workbench.modeltools.data import from_project
        from workbench.modeltools.project_code import ProjectCode

        try:
            code = ProjectCode(project)
            data = from_project(code, self.values.get("split") or "test",
                                code.hparams(self.source), limit=self.wanted)
            data.check_fits(shape, self.source)
        except ModelToolError as exc:
            self.warnings.append(f"The project's dataset was not used ({exc}).")
            return None
        except Exception as exc:  # the project's own dataset code failed: check without it
            self.warnings.append(f"The project's dataset was not used: its code raised "
                                 f"{type(exc).__name__}: {str(exc)[:200]}.")
            return None
        return data

    def check(self, mnn_path: Path, shown_name: str, report: ToolReport) -> None:
        """Run the MNN model at ``mnn_path`` (to be called ``shown_name``) and the ONNX model,
        and fill ``report``: figures, tables, a latency plot, warnings."""
        from workbench_mnn.runtime import open_mnn_model

        context = self.context
        context.stage("Verify")
        threads = self.values.get("threads") or 1
        # Loading the converted file is part of the check even when nothing is compared.
        mnn = open_mnn_model(mnn_path, threads)
        report.warnings += self.warnings
        report.figures["onnx_size_kb"] = _size(self.source) / 1024
        report.figures["mnn_size_kb"] = _size(mnn_path) / 1024
        report.figures["size_ratio"] = _size(mnn_path) / max(1, _size(self.source))
        if self.reference is None:
            return
        fixed = mnn.fixed_batch or self.reference.fixed_batch
        step = fixed or 32
        x, y = _whole_batches(self.x, self.y, fixed) if fixed else (self.x, self.y)
        ours, theirs = [], []
        for start in range(0, len(x), step):
            chunk = x[start:start + step]
            ours.append(mnn.run(chunk))
            theirs.append(self.reference.run(chunk))
            context.progress((start + len(chunk)) / len(x))
        mnn_outputs = [np.concatenate(parts) for parts in zip(*ours)]
        onnx_outputs = [np.concatenate(parts) for parts in zip(*theirs)]
        pairs = _pair_outputs(mnn.output_names, mnn_outputs, self.reference.output_names,
                              onnx_outputs, report)
        self._report_outputs(pairs, y, len(x), report)
        context.stage("Time")
        self._report_latency(mnn, x, shown_name, report)
        headline = ("max_abs_diff", "agreement", "accuracy", "accuracy_drop", "size_ratio")
        report.figures = {**{k: report.figures[k] for k in headline if k in report.figures},
                          **report.figures}

    def _report_outputs(self, pairs, y, count: int, report: ToolReport) -> None:
        rows = []
        worst, scale = 0.0, 1.0
        for name, ours, theirs in pairs:
            if ours.shape != theirs.shape:
                raise ModelToolError(
                    f"the MNN model's output {name} has shape {ours.shape} where the ONNX "
                    f"model's has {theirs.shape}; the conversion is wrong, report it to MNN")
            diff = measure.max_abs_diff(ours, theirs)
            worst = max(worst, diff)
            scale = max(scale, float(np.max(np.abs(theirs))) if theirs.size else 0.0)
            rows.append([name, diff, measure.cosine_distance(ours, theirs)])
        first_ours, first_theirs = pairs[0][1], pairs[0][2]
        figures = report.figures
        figures["max_abs_diff"] = worst
        figures["agreement"] = measure.agreement(first_ours, first_theirs)
        if y is not None:
            figures["accuracy"] = measure.accuracy(first_ours, y)
            figures["accuracy_drop"] = measure.accuracy(first_theirs, y) - figures["accuracy"]
        figures["verify_samples"] = count
        report.tables.append(ReportTable(
            f"Outputs: MNN against onnxruntime on {count} samples ({self.data_source})",
            ["output", "max_abs_diff", "cosine_distance"], rows))
        compressed = self.values.get("fp16") or self.values.get("weight_quant_bits")
        if not compressed and worst > FP32_TOLERANCE * scale:
            report.warnings.append(
                f"MNN's outputs differ from onnxruntime's by up to {worst:.3g}, more than float "
                "rounding explains; check the model with Compare before using it")
        if compressed and figures["agreement"] < AGREEMENT_WARNING:
            report.warnings.append(
                f"With compressed weights the top-1 answer agrees with the ONNX model on only "
                f"{figures['agreement']:.1f} % of the samples; try more bits")

    def _report_latency(self, mnn, x: np.ndarray, shown_name: str, report: ToolReport) -> None:
        context = self.context
        one = x[:mnn.fixed_batch or self.reference.fixed_batch or 1]
        timings = {}
        for label, session in (("onnxruntime", self.reference), ("MNN", mnn)):
            start = time.perf_counter()
            session.run(one)
            once = max(time.perf_counter() - start, 1e-5)
            repeats = int(max(5, min(100, LATENCY_BUDGET_S / once)))
            timings[label] = measure.latency(lambda s=session: s.run(one), repeats=repeats,
                                             warmup=2, check_cancelled=context.check_cancelled)
        figures = report.figures
        figures["latency_p50_onnxruntime_ms"] = timings["onnxruntime"]["p50"]
        figures["latency_p50_mnn_ms"] = timings["MNN"]["p50"]
        figures["latency_ratio"] = timings["MNN"]["p50"] / max(timings["onnxruntime"]["p50"], 1e-9)
        report.tables.insert(0, ReportTable(
            f"Models (latency at batch {len(one)})",
            ["model", "runtime", "size_kb", "p50_ms", "p90_ms"],
            [[self.source.name, "onnxruntime", report.figures["onnx_size_kb"],
              timings["onnxruntime"]["p50"], timings["onnxruntime"]["p90"]],
             [shown_name, "MNN", report.figures["mnn_size_kb"], timings["MNN"]["p50"],
              timings["MNN"]["p90"]]]))
        report.plots.append(ReportPlot("Latency at batch 1", ["onnxruntime", "MNN"],
                                       [{"name": "p50 (ms)", "values": [
                                           timings["onnxruntime"]["p50"], timings["MNN"]["p50"]]}],
                                       kind="bar", y_label="ms"))


def _size(path: Path) -> int:
    from workbench.modeltools.outputs import file_size

    return file_size(path)


def _whole_batches(x: np.ndarray, y, step: int):
    """``x`` cut (or repeated) to a whole number of batches of ``step``."""
    if len(x) % step == 0:
        return x, y
    if len(x) > step:
        keep = len(x) - len(x) % step
        return x[:keep], None if y is None else y[:keep]
    repeat = -(-step // len(x))
    x = np.concatenate([x] * repeat)[:step]
    return x, None if y is None else np.concatenate([y] * repeat)[:step]


def _pair_outputs(mnn_names, mnn_outputs, onnx_names, onnx_outputs, report):
    """(name, MNN output, ONNX output) by output name, else by position."""
    if sorted(mnn_names) == sorted(onnx_names) and len(mnn_names) == len(mnn_outputs):
        by_name = dict(zip(mnn_names, mnn_outputs))
        return [(name, by_name[name], value) for name, value in zip(onnx_names, onnx_outputs)]
    if len(mnn_outputs) != len(onnx_outputs):
        shared = min(len(mnn_outputs), len(onnx_outputs))
        report.warnings.append(f"The MNN model has {len(mnn_outputs)} outputs and the ONNX model "
                               f"{len(onnx_outputs)}; the first {shared} are compared in order")
    return [(name, ours, theirs) for name, ours, theirs
            in zip(onnx_names, mnn_outputs, onnx_outputs)]
