"""Compare: several variants of one model (fp32, int8, pruned, MNN, ...) on the same evaluation
data, in one table: accuracy, top-1 agreement with the reference, the largest output
difference, size, and latency p50 / p90 at batch 1 and at batch N.

Every model is opened through ``workbench.modeltools.runtimes.open_model``, so any format a
runtime is registered for (``.mnn`` once the MNN plugin is installed) can take part. A model
whose batch is fixed is evaluated in batches of that size (the last one padded, the padding
dropped), and its latency is reported only at the batch it takes: the other column shows "–"
and a warning says why, rather than a figure measured some other way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.modeltools.context import ToolContext
from workbench.modeltools.data import SPLITS
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.library_output import first_line
from workbench.modeltools.params import Param, ToolSpec
from workbench.modeltools.report import ReportPlot, ReportTable, ToolReport

MODEL_SUFFIXES = (".onnx", ".mnn")

SPEC = ToolSpec(
    name="compare",
    title="Compare",
    summary="Several variants of one model (fp32, int8, pruned, MNN) on the same evaluation "
            "data: accuracy, top-1 agreement with the reference, max abs diff, size and latency "
            "p50 / p90 at batch 1 and batch N, in one table; exportable as CSV and Markdown.",
    params=(
        Param("models", "paths", "The model files to compare, two or more; the first is the "
              "reference unless --reference names another.", required=True, positional=True,
              minimum=2, suffixes=MODEL_SUFFIXES),
        Param("reference", "path", "The model the others are measured against (default: the "
              "first one given; a file not among the models is added first).",
              suffixes=MODEL_SUFFIXES, one_of="models"),
        Param("data", "path", "Evaluation data as .npz with arrays x (inputs) and y (labels, "
              "optional). Default: the project's dataset.", suffixes=(".npz",), group="Data"),
        Param("split", "choice", "Which split of the project's dataset to evaluate on.",
              default="test", choices=SPLITS, group="Data"),
        Param("samples", "int", "How many samples to evaluate (default: all of them).",
              minimum=1, group="Data"),
        Param("batch", "int", "The batch size N of the batch-N latency; the evaluation runs in "
              "batches of this size too.", default=32, minimum=1, maximum=65536, group="Latency"),
        Param("repeats", "int", "Timed runs per latency figure.", default=50, minimum=1,
              maximum=100000, group="Latency"),
        Param("threads", "int", "CPU threads each model may use.", default=1, minimum=1,
              maximum=256, group="Latency"),
        Param("csv", "path", "Also write the table to this CSV file.", suffixes=(".csv",),
              is_output=True, group="Export"),
        Param("markdown", "path", "Also write the report to this Markdown file.",
              suffixes=(".md",), is_output=True, group="Export"),
    ),
    run="workbench.modeltools.compare:run_compare",
    stages=("Open models", "Load data", "Evaluate", "Measure latency", "Write files"),
    applies_to=MODEL_SUFFIXES,
)

TABLE = "Variants"
# A variant is named the fastest (smallest) only when it beats every other by more than this
# fraction; closer than that, timing noise (or a few bytes) decides, and the figure says so.
CLEAR_MARGIN = 0.05
ABOUT_THE_SAME = "about the same"
# A variant losing more accuracy than this (points), or agreeing with the reference on fewer
# samples than this (percent), gets a warning naming it.
ACCURACY_DROP_WARNING = 1.0
AGREEMENT_WARNING = 99.0


def run_compare(values: dict, context: ToolContext) -> ToolReport:
    """The comparison report; ModelToolError naming the model or file when one cannot take
    part (no runtime, another input shape, data of the wrong shape, ...)."""
    import numpy as np

    from workbench.modeltools import measure
    from workbench.modeltools.outputs import atomic_output, check_output, file_size

    paths = _model_paths(values)
    batch = int(values.get("batch") or 32)
    repeats = int(values.get("repeats") or 50)
    threads = int(values.get("threads") or 1)
    targets = _export_targets(values, paths, check_output)

    context.stage("Open models")
    sessions = []
    for i, path in enumerate(paths):
        sessions.append(_open(path, threads))
        context.progress((i + 1) / len(paths))
    reference = sessions[0]
    for session in sessions[1:]:
        _check_same_input(reference, session)

    context.stage("Load data")
    data = _evaluation_data(values, context, paths[0])
    for session in sessions:
        data.check_fits(session.input_shape, session.path)

    context.stage("Evaluate")
    outputs = []
    for i, session in enumerate(sessions):
        outputs.append(_predict(session, data.x, batch,
                                lambda f, i=i: context.progress((i + f) / len(sessions))))
    for session, output in zip(sessions[1:], outputs[1:]):
        if output.shape[1:] != outputs[0].shape[1:]:
            raise ModelToolError(
                f"{session.path} gives outputs of shape {tuple(output.shape[1:])} per sample, but "
                f"the reference {reference.path} gives {tuple(outputs[0].shape[1:])}; compare "
                "variants of one model")

    context.stage("Measure latency")
    warnings = []
    single = data.x[:1]
    full = data.x[np.arange(batch) % len(data.x)]
    latencies = []
    names = display_names(paths)
    for i, session in enumerate(sessions):
        measured = {}
        for size, x in ((1, single), (batch, full)):
            if size in measured:
                continue
            if session.fixed_batch not in (None, size):
                measured[size] = None
                warnings.append(f"{names[i]} takes a fixed batch of {session.fixed_batch}: its "
                                f"batch-{size} latency is not measured (–)")
                continue
            measured[size] = _latency(session, x, repeats, context)
            context.progress((i + (0.5 if size == 1 else 1.0)) / len(sessions))
        latencies.append((measured[1], measured[batch]))

    reference_size = file_size(paths[0])
    rows = []
    for i, (session, output) in enumerate(zip(sessions, outputs)):
        size = file_size(session.path)
        accuracy = measure.accuracy(output, data.y)
        at_one, at_batch = latencies[i]
        rows.append([names[i], session.runtime, size, round(size / reference_size, 4),
                     None if accuracy is None else round(accuracy, 3),
                     round(measure.agreement(output, outputs[0]), 3),
                     measure.max_abs_diff(output, outputs[0]),
                     _ms(at_one, "p50"), _ms(at_one, "p90"), _ms(at_batch, "p50"), _ms(at_batch, "p90")])
    if data.y is None:
        warnings.append(f"the data from {data.source} has no labels (y): accuracy is not measured")
    warnings += _quality_warnings(rows)
    columns = ["model", "runtime", "size (bytes)", "size ratio", "accuracy %", "agreement %",
               "max abs diff", "p50 batch 1 (ms)", "p90 batch 1 (ms)",
               f"p50 batch {batch} (ms)", f"p90 batch {batch} (ms)"]
    table = ReportTable(TABLE, columns, rows)
    report = ToolReport(tool=SPEC.name, title=f"Compare {len(paths)} variants of {names[0]}",
                        figures=_figures(rows, data, batch, repeats, threads), tables=[table],
                        plots=_plots(rows, batch), warnings=warnings)

    if targets:
        context.stage("Write files")
        report.outputs = [str(t) for t in targets.values()]
        for kind, target in targets.items():
            text = table.to_csv() if kind == "csv" else report.to_markdown()
            with atomic_output(target) as temporary:
                temporary.write_text(text, encoding="utf-8")
    return report


def _model_paths(values: dict) -> list[Path]:
    paths = [Path(p).expanduser() for p in values.get("models") or []]
    if values.get("reference"):
        reference = Path(values["reference"]).expanduser()
        same = [p for p in paths if _same_file(p, reference)]
        for p in same:
            paths.remove(p)
        paths.insert(0, same[0] if same else reference)
    if len(paths) < 2:
        given = f"only {paths[0]}" if paths else "none"
        raise ModelToolError(f"compare needs two or more models (given: {given}); give the "
                             "reference and at least one variant of it")
    seen: list[Path] = []
    for path in paths:
        if any(_same_file(path, other) for other in seen):
            raise ModelToolError(f"{path} is given twice; give each model once")
        seen.append(path)
    return paths


def _same_file(a: Path, b: Path) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def display_names(paths: list[Path]) -> list[str]:
    """File names, with as many parent folders as it takes to tell equal names apart."""
    depth = 1
    while True:
        names = ["/".join(p.resolve().parts[-depth:]) for p in paths]
        if len(set(names)) == len(names) or depth > max(len(p.resolve().parts) for p in paths):
            return names
        depth += 1


def _export_targets(values: dict, paths: list[Path], check_output) -> dict[str, Path]:
    """The CSV and Markdown files to write, checked before any work is done."""
    targets = {}
    for kind in ("csv", "markdown"):
        if values.get(kind):
            targets[kind] = check_output(Path(values[kind]), paths, flag=f"--{kind}")
    if len(targets) == 2 and targets["csv"] == targets["markdown"]:
        raise ModelToolError(f"--csv and --markdown both name {targets['csv']}; give two files")
    return targets


def _open(path: Path, threads: int) -> Any:
    from workbench.modeltools.runtimes import open_model

    try:
        return open_model(path, threads=threads)
    except ModelToolError:
        raise
    except Exception as exc:
        raise ModelToolError(f"{path} cannot be opened ({type(exc).__name__}: "
                             f"{first_line(exc)[:200]}); is it a complete model?") from None


def _check_same_input(reference: Any, session: Any) -> None:
    a, b = reference.input_shape, session.input_shape
    fits = len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a[1:], b[1:]))
    if not fits:
        raise ModelToolError(
            f"{session.path} takes inputs shaped {_shape(b)}, but the reference {reference.path} "
            f"takes {_shape(a)}; compare only variants of one model (same input shape)")


def _shape(shape: list) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _evaluation_data(values: dict, context: ToolContext, first_model: Path):
    from workbench.modeltools.data import from_project, load_npz

    samples = values.get("samples")
    if values.get("data"):
        return load_npz(Path(values["data"]).expanduser()).take(samples)
    if context.project is None:
        raise ModelToolError(f"{first_model} is not inside a project, so there is no dataset to "
                             "evaluate on; give --data, a .npz file with x (inputs) and y (labels)")
    from workbench.modeltools.project_code import ProjectCode

    project = ProjectCode(context.project)
    return from_project(project, values.get("split") or "test", project.hparams(first_model),
                        limit=samples)


def _predict(session: Any, x: Any, batch: int, progress) -> Any:
    """The first output for every sample of ``x``, run ``batch`` at a time (or in the fixed
    batch the model takes, the last batch padded with copies of its last sample)."""
    import numpy as np

    step = session.fixed_batch or batch
    results = []
    for start in range(0, len(x), step):
        chunk = x[start:start + step]
        taken = len(chunk)
        if session.fixed_batch and taken < step:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], step - taken, axis=0)])
        output = np.asarray(_run(session, chunk)[0])
        if len(output) != len(chunk):
            raise ModelToolError(f"{session.path} gave {len(output)} results for a batch of "
                                 f"{len(chunk)}; its first output must be per sample")
        results.append(output[:taken])
        progress(min(1.0, (start + taken) / len(x)))
    return np.concatenate(results)


def _run(session: Any, x: Any) -> list:
    try:
        return session.run(x)
    except ModelToolError:
        raise
    except Exception as exc:
        raise ModelToolError(f"{session.path} failed to run on a batch shaped {tuple(x.shape)} "
                             f"({first_line(exc)[:200]}); compare feeds the data to the "
                             "model's first input as float32") from None


def _latency(session: Any, x: Any, repeats: int, context: ToolContext) -> dict:
    from workbench.modeltools import measure

    _run(session, x)   # fail with a clear message before timing anything
    return measure.latency(lambda: session.run(x), repeats=repeats, warmup=min(5, repeats),
                           check_cancelled=context.check_cancelled)


def _ms(measured: dict | None, key: str) -> float | None:
    return None if measured is None else round(measured[key], 4)


def _figures(rows: list, data: Any, batch: int, repeats: int, threads: int) -> dict:
    reference = rows[0]
    variants = rows[1:]
    figures: dict[str, Any] = {"reference": reference[0], "variants": len(variants),
                               "samples": len(data), "data": data.source}
    timed = [r for r in rows if r[7] is not None]
    if timed:
        fastest = min(timed, key=lambda r: r[7])
        figures.update({"fastest": _clear_winner(timed, 7), "fastest_p50_ms": fastest[7]})
        if reference[7]:
            figures["best_latency_ratio"] = round(fastest[7] / reference[7], 4)
    smallest = min(rows, key=lambda r: r[2])
    figures.update({"smallest": _clear_winner(rows, 2), "smallest_size_ratio": smallest[3],
                    "min_agreement": min(r[5] for r in variants),
                    "max_abs_diff": max(r[6] for r in variants)})
    if reference[4] is not None:
        figures["accuracy"] = reference[4]
        figures["max_accuracy_drop"] = round(max(reference[4] - r[4] for r in variants), 3)
    figures.update({"batch": batch, "repeats": repeats, "threads": threads})
    return figures


def _clear_winner(rows: list, column: int) -> str:
    """The name of the row with the lowest value in ``column`` when it is lower than every other
    row's by more than CLEAR_MARGIN, else ABOUT_THE_SAME."""
    ranked = sorted(rows, key=lambda r: r[column])
    best, runner_up = ranked[0], ranked[1] if len(ranked) > 1 else None
    if runner_up is None or best[column] < runner_up[column] * (1 - CLEAR_MARGIN):
        return best[0]
    return ABOUT_THE_SAME


def _quality_warnings(rows: list) -> list[str]:
    """A warning for each variant that loses accuracy or disagrees with the reference."""
    reference = rows[0]
    warnings = []
    for row in rows[1:]:
        name, accuracy, agreement = row[0], row[4], row[5]
        if accuracy is not None and reference[4] is not None:
            drop = reference[4] - accuracy
            if drop > ACCURACY_DROP_WARNING:
                warnings.append(f"{name} is {drop:.1f} points less accurate than {reference[0]} "
                                f"({accuracy:.1f} % against {reference[4]:.1f} %)")
        if agreement < AGREEMENT_WARNING:
            warnings.append(f"{name} predicts the class {reference[0]} predicts for only "
                            f"{agreement:.1f} % of the samples")
    return warnings


def _plots(rows: list, batch: int) -> list[ReportPlot]:
    plots = []
    timed = [r for r in rows if r[7] is not None]
    if timed:
        series = [{"name": "p50 batch 1", "values": [r[7] for r in timed]}]
        if batch != 1 and all(r[9] is not None for r in timed):
            series.append({"name": f"p50 batch {batch}", "values": [r[9] for r in timed]})
        plots.append(ReportPlot("Latency", [r[0] for r in timed], series, kind="bar", y_label="ms"))
    series = [{"name": "agreement %", "values": [r[5] for r in rows]}]
    if rows[0][4] is not None:
        series.insert(0, {"name": "accuracy %", "values": [r[4] for r in rows]})
    plots.append(ReportPlot("Accuracy", [r[0] for r in rows], series, kind="bar", y_label="%"))
    return plots
