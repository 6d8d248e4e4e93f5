"""Loading the PyTorch model to convert: weights built by one of the project's model factories
(or, in a project of the user's own training code, a class of its code), TorchScript, or an
ExportedProgram (.pt2)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.modeltools import model_files
from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.library_output import captured_output, first_line
from workbench.modeltools.project_classes import is_class_factory
from workbench.modeltools.report import ToolReport


@dataclass
class Source:
    """The PyTorch model to convert, loaded."""

    path: Path
    kind: str
    module: Any                        # what runs: an nn.Module, a ScriptModule, ep.module()
    program: Any = None                # the ExportedProgram of a .pt2
    example: tuple | None = None       # a .pt2's example inputs
    code: Any = None                   # ProjectCode when the model lies in a project
    hparams: Any = None


def load_source(identified, values: dict, context: ToolContext, report: ToolReport) -> Source:
    """The model ``identified`` (model_files.identify) names, loaded to run on the CPU: weights
    built by the project's model factory, a TorchScript module or an ExportedProgram."""
    path = identified.path
    code, hparams = _project(path, identified.kind, context)
    if identified.kind == model_files.STATE_DICT:
        if code.adopted and not values["input_shape"]:
            # Nothing else can tell it: said before the model is built, which takes a while.
            raise unknown_input_shape(path)
        return _load_weights(path, values, code, hparams, context)
    if values["model_factory"]:
        report.warnings.append(f"model_factory {values['model_factory']!r} was not used: "
                               f"{path.name} is {identified.description}, which holds its own code")
    import torch

    if identified.kind == model_files.TORCHSCRIPT:
        try:
            with captured_output(context.log):
                module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise ModelToolError(f"{path} cannot be loaded as TorchScript ({first_line(exc)}); "
                                 "save it again with torch.jit.save") from None
        module.eval()
        context.log(f"Loaded TorchScript {type(module).__name__} from {path.name}")
        return Source(path, identified.kind, module, code=code, hparams=hparams)
    try:
        with captured_output(context.log):
            program = torch.export.load(str(path))
            module = program.module()
    except Exception as exc:
        raise ModelToolError(
            f"{path} cannot be loaded as an ExportedProgram ({first_line(exc)}); save it again "
            "with torch.export.save, with the torch version Workbench uses") from None
    example = None
    if program.example_inputs is not None:
        args, kwargs = program.example_inputs
        if kwargs:
            raise ModelToolError(f"{path} takes keyword inputs ({', '.join(kwargs)}); Convert "
                                 "feeds positional inputs only: export the program with them")
        example = tuple(args)
    context.log(f"Loaded an ExportedProgram from {path.name}")
    return Source(path, identified.kind, module, program=program, example=example, code=code,
                  hparams=hparams)


def unknown_input_shape(path: Path) -> ModelToolError:
    """The error for weights of a project of the user's own training code given no input shape:
    no dataset the tools read tells it, and weights carry no example inputs."""
    return ModelToolError(
        f"the input shape of {path} is unknown (its project trains with its own script, so no "
        "dataset Workbench reads tells it, and weights carry no example inputs); give it with "
        "--input-shape, batch first, e.g. --input-shape 1,3,224,224")


def _project(path: Path, kind: str, context: ToolContext):
    """The project's code and the hyper-parameters ``path`` was trained with, or (None, None)
    outside a project. Weights cannot do without; TorchScript and .pt2 use it for samples."""
    if context.project is None:
        if kind == model_files.STATE_DICT:
            raise ModelToolError(
                f"{path} holds only weights (a state_dict), and building the model needs its "
                "code: convert it from inside its project (a folder with workbench.toml), or "
                "save the model as TorchScript (torch.jit.save) or an ExportedProgram "
                "(torch.export.save) and convert that")
        return None, None
    from workbench.modeltools.project_code import ProjectCode

    try:
        code = ProjectCode(context.project)
        return code, code.hparams(path)
    except ModelToolError as exc:
        if kind == model_files.STATE_DICT:
            raise
        context.log(f"The project's settings are not usable here ({exc}); going on without them")
        return None, None


def _load_weights(path: Path, values: dict, code, hparams, context: ToolContext) -> Source:
    given = values["model_factory"]
    if given and is_class_factory(given) or code.adopted:
        return _load_with_class(path, given, code, hparams, context)
    factory = given or hparams.get("model_name")
    settings = code.hparams_file_for(path)
    names = code.model_names()
    if not factory:
        raise ModelToolError(
            f"{path}: no model factory builds these weights: set model_name in "
            f"{settings or 'the hyper-parameters'} or give --model-factory "
            f"({_registered(names)}, or a class of the project's code as module:Class)")
    if factory not in names:
        close = difflib.get_close_matches(factory, names, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
        given = "" if values["model_factory"] else f" (model_name in {settings})"
        raise ModelToolError(
            f"{path}: the project {code.root} has no model factory {factory!r}{given}.{hint} "
            f"Give --model-factory with one of its models ({_registered(names)})")
    with captured_output(context.log):
        module = code.build_model(factory, hparams, path)
    context.log(f"Built {factory!r} ({type(module).__name__}) with the weights of {path.name}"
                f"{f'; hyper-parameters from {settings}' if settings else ''}")
    return Source(path, model_files.STATE_DICT, module, code=code, hparams=hparams)


def _load_with_class(path: Path, factory: str | None, code, recorded, context: ToolContext
                     ) -> Source:
    """Weights built by a class of the project's code: the one ``factory`` names, else the one
    class whose state_dict has the file's names and shapes."""
    from workbench.modeltools.project_classes import matching_class, parse_factory

    with captured_output(context.log):
        if factory:
            module, used = code.build_class_model(factory, recorded, path)
            factory, why = ":".join(parse_factory(factory, code.root)), ""
        else:
            factory, module, used = matching_class(code.root, path, recorded, context.log)
            why = f" (its keys and shapes match {path.name})"
    taken = (f"; with the run's {', '.join(f'{n}={recorded[n]!r}' for n in used)}"
             if used else "")
    context.log(f"Built {factory}{why}{taken}")
    return Source(path, model_files.STATE_DICT, module, code=code, hparams=recorded)


def _registered(names: list[str]) -> str:
    return f"registered: {', '.join(names)}" if names else "the project registers none"
