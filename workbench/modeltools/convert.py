"""Convert: a PyTorch model to one ONNX file, checked, and verified against PyTorch.

The model comes as weights (a state_dict or a checkpoint) built by one of the project's model
factories, as TorchScript (``torch.jit.save``), or as an ExportedProgram (``torch.export.save``,
``.pt2``); ``model_files.identify`` tells which from the file's content. The dynamo exporter
(``torch.onnx.export(..., dynamo=True)``) goes first; where it cannot capture the model, the
TorchScript-based exporter takes over and the report says why. Both PyTorch and onnxruntime then
run the same inputs (the project's samples, else seeded random ones), at batch 1 and at batch N
when the batch is dynamic, and the report gives the largest difference per output.

This module is the tool's declaration and its stages in order; the steps live in
workbench.modeltools.conversion. They (and torch, onnx, onnxruntime, onnxslim) are imported inside
run_convert: this module is imported to list the tools, and that must stay cheap.
"""

from __future__ import annotations

import time
from pathlib import Path

from workbench.modeltools import model_files
from workbench.modeltools.context import ToolContext
from workbench.modeltools.conversion.exporters import EXPORTERS
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import NEVER_OVERWRITES
from workbench.modeltools.params import MODEL_CLASSES, Param, ToolSpec, parse_input_shape
from workbench.modeltools.report import ReportTable, ToolReport

DEFAULT_OPSET = 18

SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".pt2", ".ts", ".torchscript")

SPEC = ToolSpec(
    name="convert",
    title="Convert to ONNX",
    summary="Export a PyTorch model (weights with the project's model factory, TorchScript or an "
            "ExportedProgram .pt2) to one ONNX file, check it, and verify it gives PyTorch's "
            "outputs.",
    params=(
        Param("model", "path", "The PyTorch model: weights (state_dict or checkpoint) from a run "
              "of this project, a TorchScript file, or an ExportedProgram (.pt2).",
              required=True, positional=True, suffixes=SUFFIXES),
        Param("output", "path", "The ONNX file to write (default: beside the model, named "
              f"<stem>.onnx, e.g. runs/<id>/outputs/model.onnx; {NEVER_OVERWRITES}).",
              short="o", is_output=True, suffixes=(".onnx",)),
        Param("model_factory", "str", "For weights: the project's registered model that builds "
              "them (default: model_name of the hyper-parameters the model was trained with), "
              "or a class of the project's code as module:Class (e.g. model:Net; default: the "
              "one class whose weights have the file's names and shapes), built with the "
              "values its run recorded.", group="Model", suggests=MODEL_CLASSES),
        Param("input_shape", "strings", "The input's shape with the batch first, e.g. 1,3,224,224 "
              "(default: one sample of the project's dataset; a .pt2 has its example inputs).",
              group="Model"),
        Param("opset", "int", "The ONNX operator set to write.", default=DEFAULT_OPSET,
              minimum=13, maximum=21, group="Export"),
        Param("dynamic_batch", "bool", "Let the ONNX model take any batch size (otherwise the "
              "batch of the input shape is fixed).", default=True, group="Export"),
        Param("exporter", "choice", "auto: the dynamo exporter, falling back to the TorchScript "
              "exporter when it fails; or force one of them.", default="auto", choices=EXPORTERS,
              group="Export", advanced=True),
        Param("simplify", "bool", "Simplify the graph with onnxslim (fold constants, fuse "
              "operators).", default=True, group="Export"),
        Param("verify_samples", "int", "Samples run through both PyTorch and onnxruntime to "
              "compare their outputs (0: do not verify).", default=8, minimum=0, maximum=4096,
              group="Verify"),
    ),
    run="workbench.modeltools.convert:run_convert",
    stages=("Load model", "Load data", "Export", "Simplify", "Check", "Verify", "Save"),
    applies_to=SUFFIXES,
    variant_role="workbench.modeltools.convert:variant_role",
)


def variant_role(values: dict, report: ToolReport, path: Path) -> str:
    """How a conversion of a model version is recorded under it: "onnx (opset 18)"."""
    return f"onnx (opset {report.figures.get('opset', values.get('opset'))})"



def run_convert(values: dict, context: ToolContext) -> ToolReport:
    """Convert ``values["model"]`` to ONNX; the report's first output is the ONNX file."""
    from workbench.modeltools.conversion import exporters, inputs, onnx_file, verification
    from workbench.modeltools.conversion.source import load_source
    from workbench.modeltools.conversion.tensors import named_shapes
    from workbench.modeltools.inspect import onnx_parameter_count
    from workbench.modeltools.outputs import atomic_output, check_output, default_output, file_size

    started = time.perf_counter()
    # Checked before anything slow (torch alone takes seconds to import): a typing mistake
    # costs no waiting.
    typed_shape = parse_input_shape(values["input_shape"])
    given = Path(values["model"]).expanduser()
    report = ToolReport("convert", f"Convert {given.name} to ONNX")

    context.stage("Load model")
    identified = model_files.identify(given)
    if not identified.is_pytorch:
        raise ModelToolError(
            f"{given} is already {identified.description}; Convert makes ONNX from PyTorch "
            "models (weights, TorchScript or .pt2)")
    source_path = given.resolve()
    explicit = values["output"]
    target = Path(explicit) if explicit else default_output(source_path, "", ".onnx")
    target = check_output(target, [source_path])
    context.progress(0.1)
    source = load_source(identified, values, context, report)
    context.progress(1.0)

    context.stage("Load data")
    shape, example, data = inputs.example_inputs(source, values, typed_shape, context, report)
    context.progress(0.7)
    inputs.check_input_count(source, len(example))
    outputs, output_names = inputs.dry_run(source, example, typed_shape)
    input_names = inputs.input_names(source, len(example), output_names)
    onnx_file.check_one_file(onnx_file.weight_bytes(source), given)
    context.log(f"Inputs: {named_shapes(input_names, example)}; "
                f"outputs: {named_shapes(output_names, outputs)}")
    context.progress(1.0)

    context.stage("Export")
    exported = exporters.export(source, example, input_names, output_names, values, context,
                                report)
    context.log(f"Exported with the {exported.exporter} exporter at opset {exported.opset}: "
                f"{len(exported.model.graph.node)} nodes")
    onnx_file.check_one_file(exported.model.ByteSize(), given)
    context.progress(1.0)

    context.stage("Simplify")
    model = exported.model
    if values["simplify"]:
        model = onnx_file.simplify(model, context, report)
    else:
        context.log("Not simplified (simplify is off)")
    context.progress(1.0)

    context.stage("Check")
    onnx_file.check(model, target, values["simplify"])
    context.log("The ONNX checker and shape inference accept the model")
    context.progress(1.0)

    context.stage("Verify")
    with atomic_output(target, overwrite=bool(explicit)) as temporary:
        onnx_file.save(model, temporary, target)
        diff, rows = verification.verify(source, temporary, target, example, shape, data,
                                         output_names, values, context, report)
        context.stage("Save")
    context.progress(0.5)

    parameters = onnx_parameter_count(model)
    torch_parameters = onnx_file.torch_parameter_count(source)
    report.figures = {
        "exporter": exported.exporter,
        "opset": exported.opset,
        "max_abs_diff": diff,
        "source_size_bytes": file_size(source_path),
        "onnx_size_bytes": file_size(target),
        "nodes": len(model.graph.node),
        "parameters": parameters,
    }
    if torch_parameters is not None and torch_parameters != parameters:
        report.figures["torch_parameters"] = torch_parameters
        report.figures["parameters_note"] = onnx_file.parameters_note(source, model, parameters,
                                                                      torch_parameters)
    report.figures["seconds"] = round(time.perf_counter() - started, 3)
    if rows:
        report.tables.append(ReportTable(
            "Verification", ["output", "batch", "shape", "max abs diff", "mean abs diff"], rows))
    report.outputs = [str(target)]
    context.log(f"Wrote {target}")
    context.progress(1.0)
    return report
