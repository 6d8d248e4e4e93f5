"""The "Convert to MNN" tool: an ONNX model converted by MNN's own converter (MNNConvert, called
in this process through its compiled module), then run with MNN's runtime and onnxruntime on the
same inputs to show how far the two disagree, how much smaller the file is and how fast each
runs.

Importing this module is cheap: MNN, onnx and onnxruntime are imported inside ``run``.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.modeltools.data import SPLITS
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.params import Param, ToolSpec

STAGES = ("Convert", "Verify", "Time")

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
)

UNSUPPORTED = re.compile(r"These Op Not Support:(.*)")


def default_output(model: Path) -> Path:
    return model.with_suffix(".mnn")


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
    from workbench.modeltools.outputs import atomic_output, check_output
    from workbench.modeltools.report import ToolReport

    from workbench_mnn.verify import Verification

    source = Path(values["model"]).expanduser().resolve()
    if not source.is_file():
        raise ModelToolError(f"{source} does not exist")
    graph = read_onnx(source)
    target = check_output(values.get("output") or default_output(source), [source])
    converter_arguments(source, target, values)  # options that do not go together stop here
    context.stage("Convert")
    verification = Verification(source, values, context)
    verification.prepare()
    report = ToolReport("mnn", f"{source.name} converted to MNN")
    with atomic_output(target) as temporary:
        convert(source, temporary, converter_arguments(source, temporary, values), graph, context)
        context.check_cancelled()
        verification.check(temporary, target.name, report)
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


def convert(source: Path, target: Path, argv: list[str], graph, context) -> None:
    """Run MNNConvert with ``argv`` in this process, its output logged; ModelToolError naming
    the operators MNN lacks, or what else it printed, when no model was written."""
    from workbench_mnn.native import console_caught, load_converter, mnn_version

    converter = load_converter()
    context.log("MNNConvert " + " ".join(argv[1:]))
    with console_caught() as console:
        converter.mnnconvert(argv)
    for line in console.lines:
        context.log(line)
    written = target.is_file() and target.stat().st_size > 0
    if written and not any("Converted Failed" in line for line in console.lines):
        return
    operators = unsupported_operators(console.lines)
    if operators:
        raise ModelToolError(
            f"{source}: MNN {mnn_version()} cannot convert "
            f"{describe_operators(operators, graph)}; change the model so it does without "
            f"{'it' if len(operators) == 1 else 'them'}, or run this model with onnxruntime")
    problems = [line.strip() for line in console.lines
                if "ERROR" in line or "rror" in line or "ailed" in line or "nvalid" in line]
    said = "; ".join(problems[:3]) or (console.lines[-1] if console.lines else "no message")
    raise ModelToolError(
        f"{source}: MNN {mnn_version()} could not convert it ({said[:400]}); check that it is a "
        "complete ONNX model (export it again) and see the log")


def unsupported_operators(lines: list[str]) -> list[str]:
    """The operator names of MNNConvert's "These Op Not Support: ONNX::Op ..." lines."""
    found: list[str] = []
    for line in lines:
        match = UNSUPPORTED.search(line)
        if match:
            for token in match.group(1).split():
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
