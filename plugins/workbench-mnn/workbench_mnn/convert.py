"""The "Convert to MNN" tool: an ONNX model converted by MNN's own converter (MNNConvert, called
through its compiled module in the MNN worker, a process of its own: the converter aborts the
process on some models), then run with MNN's runtime (in the same worker) and onnxruntime on the
same inputs to show how far the two disagree, how much smaller the file is and how fast each
runs.

Importing this module is cheap: MNN, onnx and onnxruntime are imported inside ``run``.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.modeltools import SPLITS, ModelToolError, Param, ToolSpec

STAGES = ("Load data", "Convert", "Verify", "Time")
OUTPUT_SUFFIX = ".mnn"

SPEC = ToolSpec(
    name="mnn",
    title="Convert to MNN",
    summary="Convert an ONNX model to MNN (optionally with fp16 or 2-8 bit weights) and check "
            "it against onnxruntime: largest output difference, size and latency.",
    params=(
        Param("model", "path", "The ONNX model to convert.", required=True, positional=True,
              suffixes=(".onnx",)),
        Param("output", "path", "The MNN file to write (default: <model name>.mnn beside the "
              "model).", short="o", is_output=True, suffixes=(".mnn",)),
        Param("fp16", "bool", "Store weights as 16-bit floats: about half the size; MNN "
              "computes in fp32 on CPUs without fp16 arithmetic.", default=False,
              label="fp16 weights", group="Compression"),
        Param("weight_quant_bits", "int", "Store convolution and matrix weights with this many "
              "bits (2-8; 0 keeps them float). Shrinks the file; the model still computes in "
              "float.", default=0, minimum=0, maximum=8, label="Weight bits",
              group="Compression"),
        Param("weight_quant_asymmetric", "bool", "Quantize weights with a zero point (often "
              "more accurate at 4 bits and below; old MNN runtimes on devices cannot load it).",
              default=False, label="Asymmetric weights", group="Compression", advanced=True),
        Param("optimize_level", "int", "MNN's graph optimization: 1 keeps every rewrite exact "
              "for any input; 2 adds rewrites that are usually right (the check against "
              "onnxruntime shows whether they were).", default=1, minimum=1, maximum=2,
              group="Compression", advanced=True),
        Param("data", "path", "Inputs to check the conversion on, as .npz (x, optional y); "
              "default: the project's dataset, else seeded random inputs.", suffixes=(".npz",),
              group="Verification"),
        Param("split", "choice", "The project's dataset split to check on.", default="test",
              choices=SPLITS, group="Verification"),
        Param("verify_samples", "int", "How many samples to run through both models (0 skips "
              "the check).", default=100, minimum=0, label="Samples", group="Verification"),
        Param("threads", "int", "Threads each runtime uses for the latency measurement.",
              default=1, minimum=1, maximum=64, group="Verification", advanced=True),
    ),
    run="workbench_mnn.convert:run",
    stages=STAGES,
    applies_to=(".onnx",),
    variant_role="workbench_mnn.convert:variant_role",
)


def variant_role(values: dict, report, path: Path) -> str:
    """How an MNN conversion of a model version is filed under it: "mnn (4-bit weights)"."""
    bits = values.get("weight_quant_bits") or 0
    if bits:
        return f"mnn ({bits}-bit weights{', asymmetric' if values.get('weight_quant_asymmetric') else ''})"
    return "mnn (fp16 weights)" if values.get("fp16") else "mnn"

UNSUPPORTED = re.compile(r"These Op Not Support:(.*)")


def default_output(model: Path) -> Path:
    return model.with_suffix(OUTPUT_SUFFIX)


def converter_arguments(source: Path, target: Path, values: dict) -> list[str]:
    """MNNConvert's command line for ``values``; ModelToolError for options that do not go
    together."""
    bits = values.get("weight_quant_bits") or 0
    if bits == 1:
        raise ModelToolError("--weight-quant-bits: MNN stores weights with 2 to 8 bits (0 keeps "
                             "them float); 1 is not possible")
    if bits and values.get("fp16"):
        raise ModelToolError("--fp16 and --weight-quant-bits both shrink the weights; choose one")
    if values.get("weight_quant_asymmetric") and not bits:
        raise ModelToolError("--weight-quant-asymmetric needs --weight-quant-bits (2-8)")
    argv = ["MNNConvert", "-f", "ONNX", "--modelFile", str(source), "--MNNModel", str(target),
            "--bizCode", "MNN", "--keepInputFormat",
            "--optimizeLevel", str(values.get("optimize_level") or 1)]
    if values.get("fp16"):
        argv.append("--fp16")
    if bits:
        argv += ["--weightQuantBits", str(bits)]
        if values.get("weight_quant_asymmetric"):
            argv.append("--weightQuantAsymmetric")
    return argv


def run(values: dict, context):
    """Convert ``values["model"]`` to MNN and report the check against onnxruntime."""
    from workbench.modeltools import ToolReport, atomic_output, check_output

    from workbench_mnn.native import mnn_version
    from workbench_mnn.quantized import is_quantized, refuse_what_mnn_breaks
    from workbench_mnn.runtime import note_tried_in_worker
    from workbench_mnn.verify import Verification
    from workbench_mnn.worker_client import MnnWorker

    source = Path(values["model"]).expanduser().resolve()
    if not source.is_file():
        raise ModelToolError(f"{source} does not exist")
    given = values.get("output")
    if given and Path(given).suffix.lower() != OUTPUT_SUFFIX:
        raise ModelToolError(
            f"{given}: MNN models are written as {OUTPUT_SUFFIX} files (Compare and the other "
            f"tools choose a model's runtime by its suffix); name it {Path(given).stem}"
            f"{OUTPUT_SUFFIX}")
    context.stage("Load data")
    graph = read_onnx(source)
    target = check_output(given or default_output(source), [source])
    converter_arguments(source, target, values)  # options that do not go together stop here
    refuse_what_mnn_breaks(graph, source, mnn_version())
    context.progress(0.2)
    verification = Verification(source, values, context)
    verification.prepare()
    context.progress(1.0)
    report = ToolReport("mnn", f"{source.name} converted to MNN")
    context.stage("Convert")
    with MnnWorker(context.log, context.check_cancelled) as worker, \
            atomic_output(target) as temporary:
        convert(worker, source, temporary, converter_arguments(source, temporary, values),
                graph, context)
        verification.check(worker, temporary, target.name, report)
    if verification.ran_the_model:
        note_tried_in_worker(target)
    if is_quantized(graph) and report.figures.get("size_ratio", 0) > 1:
        report.warnings.append(
            f"{source.name} is quantized and MNN stored its weights as float, so the MNN file "
            f"is {report.figures['size_ratio']:.2g}× the size of the ONNX one; for a small MNN "
            "file convert the "
            "fp32 model with --weight-quant-bits 8 or --fp16")
    report.outputs = [str(target)]
    return report


def read_onnx(source: Path):
    """The ONNX graph (weights left on disk); ModelToolError when ``source`` is no ONNX model."""
    import onnx

    try:
        model = onnx.load(str(source), load_external_data=False)
    except Exception as exc:
        raise ModelToolError(
            f"{source} is not an ONNX model ({type(exc).__name__}: {str(exc)[:200]}); give an "
            "ONNX file, for example one written by Convert") from None
    if model.ir_version <= 0 or not model.graph.node:
        raise ModelToolError(
            f"{source} is not an ONNX model (it holds no graph); give an ONNX file, for example "
            "one written by Convert")
    return model


def convert(worker, source: Path, target: Path, argv: list[str], graph, context) -> None:
    """Run MNNConvert with ``argv`` in ``worker`` (an ``MnnWorker``), its output logged;
    ModelToolError naming the operators MNN lacks, or what else it printed, when no model was
    written, and quoting MNN's last words when the converter crashed."""
    from workbench_mnn.native import mnn_version
    from workbench_mnn.quantized import ADVICE, is_quantized, is_quantized_operator
    from workbench_mnn.worker_client import WorkerCrashed

    context.log("MNNConvert " + " ".join(argv[1:]))
    try:
        lines = worker.convert(argv, f"converting {source.name}")
    except WorkerCrashed as crash:
        advice = (ADVICE if is_quantized(graph) else
                  "check that the model is a complete float ONNX model (export it again), "
                  "report the crash to MNN with that output, or run the model with onnxruntime")
        raise ModelToolError(
            f"{source}: MNN {mnn_version()}'s converter crashed ({crash.how}): {crash.said}. "
            f"Its full output is in {crash.log_file}. {advice[:1].upper()}{advice[1:]}") from None
    context.progress(1.0)
    context.check_cancelled()
    written = target.is_file() and target.stat().st_size > 0
    if written and not any("Converted Failed" in line for line in lines):
        return
    operators = unsupported_operators(lines)
    if operators:
        quantized = [op for op in operators if is_quantized_operator(op)]
        if quantized:
            kind = "is a quantized operator" if len(quantized) == 1 else "are quantized operators"
            advice = f"{' and '.join(quantized)} {kind}. {ADVICE}"
        else:
            advice = (f"change the model so it does without "
                      f"{'it' if len(operators) == 1 else 'them'}, or run this model with "
                      "onnxruntime")
        raise ModelToolError(
            f"{source}: MNN {mnn_version()} cannot convert "
            f"{describe_operators(operators, graph)}; {advice}")
    problems = [line.strip() for line in lines
                if "ERROR" in line or "rror" in line or "ailed" in line or "nvalid" in line]
    said = "; ".join(problems[:3]) or (lines[-1] if lines else "no message")
    raise ModelToolError(
        f"{source}: MNN {mnn_version()} could not convert it ({said[:400]}); check that it is a "
        "complete ONNX model (export it again) and see the log")


def unsupported_operators(lines: list[str]) -> list[str]:
    """The operator names of MNNConvert's "These Op Not Support: ONNX::Op ..." lines."""
    found: list[str] = []
    for line in lines:
        match = UNSUPPORTED.search(line)
        if match:
            # "ONNX::QGemm | ONNX::QLinearConv": operators between separators
            for token in match.group(1).replace("|", " ").split():
                name = token.split("::")[-1]
                if name and name not in found:
                    found.append(name)
    return found


def describe_operators(operators: list[str], graph) -> str:
    """"the operator Hardmax (node 'hm')" with the nodes of the ONNX graph that use each."""
    parts = []
    for op in operators:
        nodes = [(i, node) for i, node in enumerate(graph.graph.node) if node.op_type == op]
        domain = next((node.domain for _, node in nodes if node.domain), "")
        names = [node.name or f"#{i}" for i, node in nodes]
        shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more"
                                                         if len(names) > 3 else "")
        where = f" (node{'s' if len(names) > 1 else ''} {shown})" if names else ""
        parts.append(f"{op}{f' of domain {domain}' if domain else ''}{where}")
    noun = "the operator" if len(parts) == 1 else "the operators"
    return f"{noun} {', '.join(parts)}"
