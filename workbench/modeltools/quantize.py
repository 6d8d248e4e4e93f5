"""Quantize: make an ONNX model smaller and, on CPUs with int8 instructions, faster.

Three modes: ``static`` int8 (onnxruntime's calibrated QDQ quantization, the right choice for
CNNs), ``dynamic`` int8 (weights only, activations quantized at run time; for MatMul-heavy
models) and ``fp16``. The report puts the float and the quantized model side by side (size,
accuracy, agreement, largest output difference, latency at batch 1) and, as MNN's quantization
debug mode does, lists the error of every layer worst first, with the node names
``exclude_nodes`` takes to keep a layer in float.
"""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.context import ToolContext
from workbench.modeltools.data import SPLITS
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import NEVER_OVERWRITES
from workbench.modeltools.params import Param, ToolSpec
from workbench.modeltools.report import ToolReport

MODES = ("static", "dynamic", "fp16")
OUTPUT_SUFFIX = {"static": "int8", "dynamic": "dynamic-int8", "fp16": "fp16"}
CALIBRATION_METHODS = ("MinMax", "Entropy", "Percentile")
ACTIVATION_TYPES = ("uint8", "int8")
# Samples per run of the per-layer comparison, which holds every tensor of both models.
LAYER_BATCH = 4
# The share of the calibration (or dynamic quantization) stage that preparing the model takes.
PREPARED = 0.2

SPEC = ToolSpec(
    name="quantize",
    title="Quantize",
    summary="Quantize an ONNX model to int8 (static or dynamic) or float16, and compare size, "
            "accuracy, latency and the error of every layer with the float model.",
    params=(
        Param("model", "path", "the float ONNX model", required=True, positional=True,
              suffixes=(".onnx",)),
        Param("output", "path", "the quantized model (default: beside the input, named "
              "<stem>.int8.onnx, <stem>.dynamic-int8.onnx or <stem>.fp16.onnx; "
              f"{NEVER_OVERWRITES})", short="o", is_output=True, suffixes=(".onnx",)),
        Param("mode", "choice", "static: int8 weights and activations, calibrated on samples "
              "(QDQ format; smallest and fastest for CNNs); dynamic: int8 weights, activations "
              "quantized at run time (suits MatMul-heavy models, slow for convolutions on "
              "onnxruntime); fp16: half-size float weights for GPUs and mobile runtimes",
              default="static", choices=MODES, group="Quantization"),
        Param("calibration_method", "choice", "static: how activation ranges are chosen from "
              "the calibration samples: MinMax (the whole range), Entropy (KL divergence, as "
              "TensorRT and MNN do) or Percentile (99.999 %, ignores outliers)",
              default="MinMax", choices=CALIBRATION_METHODS, group="Quantization"),
        Param("per_channel", "bool", "int8 weights with one scale per output channel (more "
              "accurate, especially for depthwise convolutions)", default=True,
              group="Quantization"),
        Param("exclude_nodes", "strings", "node names kept in float, e.g. the worst layers of "
              "the per-layer error table", group="Quantization"),
        Param("activation_type", "choice", "static: the 8-bit type of the activations. uint8 is "
              "onnxruntime's advice for x86 CPUs; int8 its advice for ARM (phones). On this "
              "project's x86 machines (AVX-512 VNNI) both gave the same accuracy and the same "
              "speed on a MobileNet-style CNN", default="uint8", choices=ACTIVATION_TYPES,
              group="Quantization", advanced=True),
        Param("reduce_range", "bool", "7-bit weights: keeps onnxruntime's uint8 x int8 kernels "
              "from saturating on x86 CPUs without VNNI (the report says when this computer is "
              "one), at a small cost in precision; off by default, so that the model made for "
              "the device does not depend on the computer that made it", default=False,
              group="Quantization", advanced=True),
        Param("data", "path", "samples as .npz (x, optional labels y) to evaluate on and, "
              "unless --calibration-data is given, to calibrate on; default: the project's "
              "dataset", suffixes=(".npz",), group="Data"),
        Param("calibration_data", "path", "separate calibration samples as .npz (x)",
              suffixes=(".npz",), group="Data", advanced=True),
        Param("calibration_split", "choice", "the project's dataset split to calibrate on",
              default="train", choices=SPLITS, group="Data"),
        Param("calibration_samples", "int", "how many samples to calibrate on (the first ones)",
              default=256, minimum=1, group="Data"),
        Param("split", "choice", "the project's dataset split to evaluate on", default="test",
              choices=SPLITS, group="Data"),
        Param("samples", "int", "how many samples to evaluate on", default=1000, minimum=1,
              group="Data"),
        Param("layer_report", "bool", "compare every layer's output with the float model's "
              "(takes a little longer)", default=True, group="Report"),
        Param("layer_samples", "int", "how many calibration samples the per-layer comparison "
              "runs", default=16, minimum=1, maximum=1024, group="Report", advanced=True),
        Param("keep_metadata", "bool", "keep the per-node debugging notes of the exporter "
              "(stack traces, module paths) in the quantized model; runtimes never read them",
              default=False, group="Quantization", advanced=True),
        Param("threads", "int", "onnxruntime threads for the latency measurement", default=1,
              minimum=1, maximum=256, group="Report"),
        Param("repeats", "int", "timed runs per model for the latency figures (0: no timing)",
              default=100, minimum=0, maximum=100000, group="Report", advanced=True),
    ),
    run="workbench.modeltools.quantize:run_quantize",
    stages=("Load model", "Load data", "Calibrate", "Quantize", "Evaluate", "Compare layers"),
    applies_to=(".onnx",),
    variant_role="workbench.modeltools.quantize:variant_role",
)


def variant_role(values: dict, report: ToolReport, path: Path) -> str:
    """How a quantization of a model version is recorded under it: "int8 quantized (dynamic)",
    "int8 quantized (static, MinMax calibration)", "float16"."""
    mode = values.get("mode") or "static"
    if mode == "fp16":
        return "float16"
    if mode == "dynamic":
        return "int8 quantized (dynamic)"
    return f"int8 quantized (static, {values.get('calibration_method') or 'MinMax'} calibration)"


def default_output(source: Path, mode: str) -> Path:
    """``<stem>.int8.onnx`` (or ``.dynamic-int8`` / ``.fp16``) beside ``source``, numbered
    (``<stem>.int8-2.onnx``) rather than replace an existing file."""
    from workbench.modeltools import outputs

    return outputs.default_output(source, OUTPUT_SUFFIX[mode], ".onnx")


def run_quantize(values: dict, context: ToolContext) -> ToolReport:
    """Quantize ``values["model"]`` as the values say and return the report (see the module)."""
    import shutil
    import tempfile

    from workbench.modeltools.outputs import atomic_output, check_output, file_size
    from workbench.modeltools.quantization.model_file import read_onnx
    from workbench.modeltools.quantization.samples import choose_data
    from workbench.modeltools.runtimes import open_model

    given_source = Path(values["model"]).expanduser()
    mode = values.get("mode") or "static"
    threads = values.get("threads") or 1
    context.stage("Load model")
    model = read_onnx(given_source)
    source = given_source.resolve()
    given = values.get("output")
    target = Path(given).expanduser() if given else default_output(source, mode)
    if target.suffix.lower() != ".onnx":
        raise ModelToolError(f"{target}: the quantized model is written as ONNX; name it .onnx")
    target = check_output(target, [source])
    context.progress(0.5)
    fp32 = open_model(source, threads)
    context.progress(1.0)
    context.stage("Load data")
    chosen = choose_data(values, context.project, source, mode, fp32.input_shape, fp32.fixed_batch,
                         context.progress)

    with tempfile.TemporaryDirectory(prefix="workbench-quantize-") as folder:
        work = Path(folder)
        produced = work / "quantized.onnx"
        reference, description = _quantize(model, source, produced, work, mode, values, chosen,
                                           fp32, context)
        if not values.get("keep_metadata", False):
            from workbench.modeltools.quantization.converters import strip_debug_metadata

            saved = strip_debug_metadata(produced)
            if saved:
                context.log(f"removed {saved} bytes of the exporter's per-node debugging notes "
                            "(--keep-metadata keeps them)")
        context.stage("Evaluate")
        from workbench.modeltools.quantization.evaluation import compare_models

        quantized = open_model(produced, threads)
        comparison = compare_models(fp32, quantized, chosen.evaluation,
                                    values.get("repeats", 100) or 0, context)
        layers = []
        if values.get("layer_report", True):
            context.stage("Compare layers")
            layers = _layer_errors(reference, produced, chosen, values, fp32.fixed_batch, context)
        sizes = (file_size(source), file_size(produced))
        context.check_cancelled()
        with atomic_output(target, overwrite=bool(given)) as temporary:
            shutil.copyfile(produced, temporary)

    from workbench.modeltools.quantization.summary import quantize_report

    calibrated = len(chosen.calibration) if chosen.calibration is not None else None
    report = quantize_report(source, target, mode, description, sizes, comparison, layers,
                             calibrated, chosen.evaluation.source, chosen.warnings,
                             reduce_range=bool(values.get("reduce_range", False)))
    context.progress(1.0)
    return report


def _quantize(model, source: Path, produced: Path, work: Path, mode: str, values: dict, chosen,
              fp32, context: ToolContext) -> tuple[Path, str]:
    """Write the quantized model to ``produced``; returns the float model it was made from
    (what the per-layer comparison compares with) and a one-line description."""
    import onnx

    from workbench.modeltools.quantization import converters
    from workbench.modeltools.quantization.model_file import check_exclusions, prepare

    per_channel = values.get("per_channel", True)
    reduce_range = values.get("reduce_range", False)
    if mode == "fp16":
        excluded = check_exclusions(values.get("exclude_nodes") or [], model, source)
        context.stage("Quantize")
        converters.convert_fp16(model, produced, source, excluded, context.log)
        context.progress(1.0)
        return source, ("float16 weights and arithmetic, float32 inputs and outputs"
                        + _kept(excluded))

    # Preparing (shape inference, graph clean-up) is the first part of the stage that follows.
    context.stage("Quantize" if mode == "dynamic" else "Calibrate")
    prepared = prepare(source, work / "prepared.onnx", context.log)
    prepared_model = onnx.load(str(prepared))
    excluded = check_exclusions(values.get("exclude_nodes") or [], prepared_model, source)
    weights = (("per-channel" if per_channel else "per-tensor") + " int8 weights"
               + (" reduced to 7 bits" if reduce_range else ""))
    if mode == "dynamic":
        context.progress(PREPARED)
        converters.quantize_dynamic(prepared, produced, source, per_channel, reduce_range,
                                    excluded, _gemms(prepared_model, excluded), context.log)
        context.progress(1.0)
        return prepared, f"dynamic int8 ({weights})" + _kept(excluded)

    from workbench.modeltools.quantization.calibration import CalibrationReader, batch_size

    settings = converters.StaticSettings(
        calibration_method=values.get("calibration_method") or "MinMax",
        per_channel=per_channel, activation_type=values.get("activation_type") or "uint8",
        reduce_range=reduce_range, exclude_nodes=excluded)
    context.progress(PREPARED)
    context.log(f"calibrating on {len(chosen.calibration)} samples of {chosen.calibration.source} "
                f"({settings.calibration_method})")
    reader = CalibrationReader(fp32.input_names[0], chosen.calibration.x,
                               fp32.fixed_batch or batch_size(chosen.calibration.x.shape[1:]),
                               on_progress=lambda f: context.progress(PREPARED + (1 - PREPARED) * f),
                               on_finished=lambda: context.stage("Quantize"))
    converters.quantize_static(prepared, produced, source, reader, settings, context.log)
    return prepared, (f"static int8, QDQ ({settings.activation_type} activations, {weights}, "
                      f"{settings.calibration_method} calibration)" + _kept(excluded))


def _gemms(model, names: list[str]) -> list[str]:
    wanted = set(names)
    return [node.name for node in model.graph.node
            if node.name in wanted and node.op_type == "Gemm"]


def _kept(excluded: list[str]) -> str:
    if not excluded:
        return ""
    return f", {len(excluded)} node{'s' if len(excluded) != 1 else ''} kept in float"


def _layer_errors(reference: Path, produced: Path, chosen, values: dict, fixed_batch: int | None,
                  context: ToolContext):
    from workbench.modeltools.quantization.calibration import batch_size
    from workbench.modeltools.quantization.layers import compare_layers
    from workbench.modeltools.quantization.model_file import first_line

    samples = chosen.calibration if chosen.calibration is not None else chosen.evaluation
    count = values.get("layer_samples") or 16
    if fixed_batch:
        count = max(fixed_batch, count // fixed_batch * fixed_batch)
    try:
        batch = fixed_batch or batch_size(samples.x.shape[1:], LAYER_BATCH)
        return compare_layers(reference, produced, samples.x[:count], batch,
                              context.check_cancelled, context.progress)
    except ModelToolError:
        raise
    except Exception as exc:
        # The quantized model is fine; only its comparison failed. Say so and keep the model.
        chosen.warnings.append(f"the per-layer comparison failed ({first_line(exc)}); the "
                               "quantized model was written all the same (--no-layer-report "
                               "skips the comparison)")
        return []
