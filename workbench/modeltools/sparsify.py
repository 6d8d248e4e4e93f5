"""Sparsify: make a model sparser (magnitude pruning) or smaller and faster (channel pruning),
optionally fine-tune it through the project's own dataset and optimizer, and report what it
cost and gained: sparsity per layer, parameters, accuracy, size and latency before and after.

A PyTorch checkpoint is rebuilt with the project's model factory; an ONNX model (magnitude
pruning only) is pruned directly in its graph, so a model from outside any project works too.
The pruned model is written as ONNX and, from a checkpoint, as a ``.pt2`` program beside it,
since a pruned architecture no longer fits the factory.
"""

from __future__ import annotations

from pathlib import Path

from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import NEVER_OVERWRITES
from workbench.modeltools.params import MODEL_CLASSES, Param, ToolSpec, parse_input_shape
from workbench.modeltools.report import ToolReport

METHODS = ("magnitude", "channels")
SCOPES = ("global", "layer")
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt")
OUTPUT_SUFFIX = {"magnitude": "sparse", "channels": "pruned"}

SPEC = ToolSpec(
    name="sparsify",
    title="Sparsify",
    summary="Prune a model by weight magnitude, or remove whole channels so it runs faster; "
            "fine-tune it on the project's data and compare accuracy, size and latency.",
    params=(
        Param("model", "path", "the model: a PyTorch checkpoint (state_dict) inside a project, "
              "or an ONNX model (magnitude pruning only)", required=True, positional=True,
              suffixes=(*CHECKPOINT_SUFFIXES, ".onnx")),
        Param("output", "path", "the pruned ONNX model (default: beside the input, named "
              "<stem>.sparse.onnx or <stem>.pruned.onnx); from a checkpoint the pruned PyTorch "
              "model is written beside it as <name>.pt2. By default "
              f"{NEVER_OVERWRITES} (the .onnx and .pt2 take the same number)", short="o",
              is_output=True, suffixes=(".onnx",)),
        Param("method", "choice", "magnitude: zero the smallest weights (the model keeps its "
              "shape; it compresses better but runs no faster); channels: remove whole channels "
              "(smaller and faster; needs the checkpoint and the project's code)",
              default="magnitude", choices=METHODS, group="Pruning"),
        Param("scope", "choice", "magnitude pruning: one threshold for all layers (global) or the "
              "same sparsity in every layer (layer)", default="global", choices=SCOPES,
              group="Pruning"),
        Param("sparsity", "float", "the fraction of weights set to zero (magnitude), or of "
              "channels removed from every prunable layer (channels)", default=0.5,
              minimum=0.0, maximum=0.99, group="Pruning"),
        Param("ignore_layers", "strings", "module names left as they are, e.g. features.0 "
              "(a name covers the modules inside it; for channels: their outputs are kept). The "
              "final classifier never loses outputs", group="Pruning"),
        Param("finetune_epochs", "int", "epochs of fine-tuning on the project's training split "
              "after pruning (0: none)", default=0, minimum=0, maximum=1000, group="Fine-tuning"),
        Param("learning_rate", "float", "the fine-tuning learning rate (default: the "
              "hyper-parameters' learning_rate)", minimum=0.0, group="Fine-tuning"),
        Param("model_factory", "str", "the project's registered model name that builds the "
              "checkpoint's model (default: the hyper-parameters' model_name), or a class of "
              "the project's code as module:Class (default: the one class whose weights have "
              "the checkpoint's names and shapes)", group="Model", suggests=MODEL_CLASSES),
        Param("input_shape", "strings", "the input's shape with the batch first, e.g. 1,1,8,8: "
              "what the model is traced, exported and timed with (default: one sample of the "
              "evaluation data, else an ONNX model's fixed input shape)", group="Model",
              advanced=True),
        Param("data", "path", "evaluation data as .npz (x, optional y); default: the project's "
              "dataset", suffixes=(".npz",), group="Evaluation"),
        Param("split", "choice", "the project's dataset split to evaluate on", default="test",
              choices=("test", "val", "train"), group="Evaluation"),
        Param("samples", "int", "how many samples to evaluate on", default=1000, minimum=1,
              group="Evaluation"),
        Param("threads", "int", "onnxruntime threads for the latency measurement", default=1,
              minimum=1, maximum=256, group="Evaluation"),
    ),
    run="workbench.modeltools.sparsify:run",
    stages=("Load model", "Load data", "Prune", "Fine-tune", "Export", "Evaluate"),
    applies_to=(*CHECKPOINT_SUFFIXES, ".onnx"),
    variant_role="workbench.modeltools.sparsify:variant_role",
)


def variant_role(values: dict, report: ToolReport, path: Path) -> str:
    """How a pruned model version is recorded under it: "sparse (50 % magnitude, global)",
    "channel-pruned (25 %), fine-tuned 2 epochs, PyTorch program" for the .pt2 beside it."""
    sparsity = values.get("sparsity") if values.get("sparsity") is not None else 0.5
    if (values.get("method") or "magnitude") == "channels":
        role = f"channel-pruned ({sparsity * 100:g} % of channels)"
    else:
        role = f"sparse ({sparsity * 100:g} % magnitude, {values.get('scope') or 'global'})"
    epochs = values.get("finetune_epochs") or 0
    if epochs:
        role += f", fine-tuned {epochs} epoch{'s' if epochs != 1 else ''}"
    if Path(path).suffix.lower() == ".pt2":
        role += ", PyTorch program"
    return role


def run(values: dict, context: ToolContext) -> ToolReport:
    """Prune ``values["model"]`` as the values say and return the report (see the module)."""
    from workbench.modeltools import model_files
    from workbench.modeltools.outputs import check_output, default_output

    # Checked before anything slow, so a typing mistake costs no waiting.
    shape = parse_input_shape(values.get("input_shape"))
    method = values.get("method") or "magnitude"
    sparsity = float(values.get("sparsity") if values.get("sparsity") is not None else 0.5)
    if not 0.0 < sparsity <= 0.99:
        raise ModelToolError(f"--sparsity {sparsity:g} is out of range: give the fraction to prune, "
                             "above 0 and at most 0.99 (0.5 prunes half)")
    given = Path(values["model"]).expanduser()
    found = model_files.identify(given)
    if found.kind in (model_files.EXPORTED_PROGRAM, model_files.TORCHSCRIPT):
        raise ModelToolError(
            f"{given} is {found.description}: Sparsify takes the project's checkpoint (.pt), "
            "whose model it rebuilds, or an ONNX model. Prune the original checkpoint (a higher "
            "--sparsity prunes more), or convert this file to ONNX for magnitude pruning")
    if found.kind not in (model_files.STATE_DICT, model_files.ONNX):
        model_files.expect(given, (model_files.STATE_DICT, model_files.ONNX), "Sparsify")
    source = given.resolve()
    from_onnx = found.kind == model_files.ONNX
    if values.get("output"):
        target = Path(values["output"])
    else:
        # The .pt2 written beside a checkpoint's ONNX model takes the same free number.
        target = default_output(source, OUTPUT_SUFFIX[method], ".onnx",
                                partners=() if from_onnx else (".pt2",))
    if target.suffix.lower() != ".onnx":
        raise ModelToolError(f"{target}: the pruned model is written as ONNX; name it .onnx")
    target = check_output(target, [source])
    overwrite = bool(values.get("output"))
    if from_onnx:
        from workbench.modeltools.pruning.onnx_input import sparsify_onnx

        return sparsify_onnx(source, target, values, sparsity, context, shape=shape,
                             overwrite=overwrite, shown_as=given)
    from workbench.modeltools.pruning.torch_input import sparsify_checkpoint

    return sparsify_checkpoint(source, target, values, sparsity, context, shape=shape,
                               overwrite=overwrite, shown_as=given)
