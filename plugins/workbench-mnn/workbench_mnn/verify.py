"""The check after a conversion: the MNN model and the ONNX model run on the same inputs (the
``data`` file, else the project's dataset, else seeded random inputs), their outputs compared,
and each timed at batch 1. The MNN model runs in the MNN worker that converted it (a process of
its own, see ``worker.py``), so a model that crashes MNN ends the worker, not the job."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from workbench.modeltools import (ModelToolError, ReportPlot, ReportTable, ToolCancelled, ToolReport, accuracy,
                                  agreement, cosine_distance, latency, max_abs_diff)

# Largest fp32 difference (relative to the outputs' scale) before the report warns: the two
# runtimes order their sums differently, which costs a few float32 ulps, not more.
FP32_TOLERANCE = 1e-3
# With fp16 or quantized weights outputs move; the report warns when the top-1 answers do.
AGREEMENT_WARNING = 98.0
LATENCY_BUDGET_S = 1.5


class Verification:
    """``prepare()`` before the conversion (so bad data stops the tool before any work),
    ``check(worker, mnn_path, shown_name, report)`` after it."""

    def __init__(self, source: Path, values: dict, context):
        self.source = source
        self.values = values
        self.context = context
        self.reference = None
        self.x: np.ndarray | None = None
        self.y: np.ndarray | None = None
        self.data_source = ""
        self.warnings: list[str] = []
        # Whether ``check`` ran the MNN model (not only loaded it).
        self.ran_the_model = False

    @property
    def wanted(self) -> int:
        return int(self.values.get("verify_samples") or 0)

    def prepare(self) -> None:
        """Load the ONNX model and the inputs (the tool's "Load data" stage)."""
        if self.wanted <= 0:
            self.warnings.append("The conversion was not checked (verify_samples is 0).")
            return
        from workbench.modeltools import open_onnx

        try:
            self.reference = open_onnx(self.source, self.values.get("threads") or 1)
            self.context.progress(0.4)
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
        from workbench.modeltools import load_npz

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
        from workbench.modeltools import ProjectCode, from_project

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

    def check(self, worker, mnn_path: Path, shown_name: str, report: ToolReport) -> None:
        """Run the MNN model at ``mnn_path`` (to be called ``shown_name``) in ``worker`` (an
        ``MnnWorker``) and the ONNX model here, and fill ``report``: figures, tables, a latency
        plot, warnings."""
        from workbench_mnn.worker_client import WorkerCrashed

        context = self.context
        context.stage("Verify")
        threads = self.values.get("threads") or 1
        try:
            self._check(worker, mnn_path, shown_name, threads, report)
        except WorkerCrashed as crash:
            raise ModelToolError(
                f"{self.source}: the converted model crashed MNN {_version()} ({crash.how}) "
                f"while {crash.doing}: {crash.said}; the conversion is wrong, so nothing was "
                f"written. Report it to MNN with MNN's output, which is in {crash.log_file}, "
                "or run the ONNX model with onnxruntime") from None
        except ToolCancelled:
            raise
        except ModelToolError as error:
            # The check reads the temporary file; the user knows the model by its final name.
            text = str(error).replace(str(mnn_path), shown_name)
            if text.startswith(shown_name) and "nothing was written" not in text:
                text = f"{self.source}: the converted model {text}; nothing was written"
            raise ModelToolError(text) from None

    def _check(self, worker, mnn_path: Path, shown_name: str, threads: int,
               report: ToolReport) -> None:
        context = self.context
        # Loading the converted file is part of the check even when nothing is compared.
        mnn = worker.open(mnn_path, threads, f"loading {shown_name}")
        report.warnings += self.warnings
        figures = report.figures
        figures["size_bytes_onnx"] = _size(self.source)
        figures["size_bytes_mnn"] = _size(mnn_path)
        figures["size_ratio"] = round(
            figures["size_bytes_mnn"] / max(1, figures["size_bytes_onnx"]), 4)
        if self.reference is None:
            context.progress(1.0)
            return
        fixed = mnn.fixed_batch or self.reference.fixed_batch
        step = fixed or 32
        x, y = _whole_batches(self.x, self.y, fixed) if fixed else (self.x, self.y)
        # Progress: the MNN model's runs fill the first half of the stage, onnxruntime's the rest.
        mnn_outputs = worker.run(x, step, f"running {shown_name} on the check's inputs",
                                 lambda fraction: context.progress(fraction / 2))
        self.ran_the_model = True
        theirs = []
        for start in range(0, len(x), step):
            chunk = x[start:start + step]
            theirs.append(self.reference.run(chunk))
            context.progress(0.5 + (start + len(chunk)) / len(x) / 2)
        onnx_outputs = [np.concatenate(parts) for parts in zip(*theirs)]
        pairs = _pair_outputs(mnn.output_names, mnn_outputs, self.reference.output_names,
                              onnx_outputs, report)
        self._report_outputs(pairs, y, len(x), report)
        context.stage("Time")
        self._report_latency(worker, mnn, x, shown_name, report)
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
            diff = max_abs_diff(ours, theirs)
            worst = max(worst, diff)
            scale = max(scale, float(np.max(np.abs(theirs))) if theirs.size else 0.0)
            rows.append([name, diff, cosine_distance(ours, theirs)])
        first_ours, first_theirs = pairs[0][1], pairs[0][2]
        figures = report.figures
        figures["max_abs_diff"] = worst
        figures["agreement"] = agreement(first_ours, first_theirs)
        if y is not None:
            figures["accuracy"] = accuracy(first_ours, y)
            figures["accuracy_drop"] = accuracy(first_theirs, y) - figures["accuracy"]
        figures["verify_samples"] = count
        report.tables.append(ReportTable(
            f"Outputs: MNN against onnxruntime on {count} samples ({self.data_source})",
            ["output", "max abs diff", "cosine distance"], rows))
        compressed = self.values.get("fp16") or self.values.get("weight_quant_bits")
        if not compressed and worst > FP32_TOLERANCE * scale:
            report.warnings.append(
                f"MNN's outputs differ from onnxruntime's by up to {worst:.3g}, more than float "
                "rounding explains; check the model with Compare before using it")
        if compressed and figures["agreement"] < AGREEMENT_WARNING:
            report.warnings.append(
                f"With compressed weights the top-1 answer agrees with the ONNX model on only "
                f"{figures['agreement']:.1f} % of the samples; try more bits")

    def _report_latency(self, worker, mnn, x: np.ndarray, shown_name: str,
                        report: ToolReport) -> None:
        context = self.context
        one = x[:mnn.fixed_batch or self.reference.fixed_batch or 1]
        session = self.reference
        start = time.perf_counter()
        session.run(one)
        once = max(time.perf_counter() - start, 1e-5)
        repeats = int(max(5, min(100, LATENCY_BUDGET_S / once)))
        onnx = latency(lambda: session.run(one), repeats=repeats, warmup=2,
                       check_cancelled=context.check_cancelled)
        context.progress(0.5)
        # MNN is timed inside the worker, so the figure holds no inter-process traffic.
        ours = worker.latency(one, LATENCY_BUDGET_S, f"timing {shown_name}",
                              lambda fraction: context.progress(0.5 + fraction / 2))
        context.progress(1.0)
        figures = report.figures
        figures["latency_p50_ms_onnx"] = round(onnx["p50"], 4)
        figures["latency_p50_ms_mnn"] = round(ours["p50"], 4)
        figures["latency_ratio"] = round(ours["p50"] / max(onnx["p50"], 1e-9), 4)
        report.tables.insert(0, ReportTable(
            f"Models (latency at batch {len(one)})",
            ["model", "runtime", "size (bytes)", "p50 (ms)", "p90 (ms)"],
            [[self.source.name, "onnxruntime", figures["size_bytes_onnx"],
              round(onnx["p50"], 4), round(onnx["p90"], 4)],
             [shown_name, "MNN", figures["size_bytes_mnn"], round(ours["p50"], 4),
              round(ours["p90"], 4)]]))
        report.plots.append(ReportPlot(f"Latency at batch {len(one)}", ["onnxruntime", "MNN"],
                                       [{"name": "p50 (ms)", "values": [onnx["p50"], ours["p50"]]}],
                                       kind="bar", y_label="ms"))


def _size(path: Path) -> int:
    from workbench.modeltools import file_size

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


def _version() -> str:
    from workbench_mnn.native import mnn_version

    return mnn_version()
