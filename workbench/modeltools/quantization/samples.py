"""Which samples the Quantize tool calibrates on and evaluates on: ``.npz`` files when given,
else the project's dataset (calibration from one split, evaluation from another)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.modeltools.data import EvaluationData, from_project, load_npz
from workbench.modeltools.errors import ModelToolError

RANDOM_SAMPLES = 32


@dataclass
class ChosenData:
    """Evaluation samples (always), calibration samples (static mode only) and what the user
    should know about the choice."""

    evaluation: EvaluationData
    calibration: EvaluationData | None
    warnings: list[str] = field(default_factory=list)


def choose_data(values: dict, project: Path | None, model_path: Path, mode: str,
                input_shape: list, fixed_batch: int | None,
                on_progress: Callable[[float], None] = lambda fraction: None) -> ChosenData:
    """The samples for this run, each checked against the model's input shape.
    ``on_progress`` hears the fraction done (the project's code and dataset take seconds to
    load: they import torch and the dataset's own libraries)."""
    data, calibration_file = values.get("data"), values.get("calibration_data")
    samples = values.get("samples")
    calibration_samples = values.get("calibration_samples") or 256
    warnings: list[str] = []
    code = hparams = None
    own_script = False
    if project is not None and not data:
        from workbench.modeltools.project_code import ProjectCode

        code = ProjectCode(project)
        if code.adopted:  # its own training script: no dataset Workbench can read
            code, own_script = None, True
    if code is not None:
        hparams = code.hparams(model_path)
        on_progress(0.1)
        code.import_modules()  # the project's code imports torch: the longest part
        on_progress(0.5)

    calibration = None
    if mode == "static":
        if calibration_file:
            calibration = load_npz(Path(calibration_file)).take(calibration_samples)
        elif data:
            calibration = load_npz(Path(data)).take(calibration_samples)
        elif code is not None:
            calibration = from_project(code, values.get("calibration_split") or "train", hparams,
                                       calibration_samples)
            on_progress(0.7)
        elif own_script:
            raise ModelToolError(
                f"static quantization calibrates on samples, and {project} trains with its own "
                "script, so Workbench has no dataset to take them from; give samples with --data "
                "FILE.npz (an array x shaped like the model's input, and optionally the labels "
                "y), or choose --mode dynamic or fp16, which need no data")
        else:
            raise ModelToolError(
                f"{model_path} is not inside a Workbench project, so there is no dataset to "
                "calibrate on; give samples with --data FILE.npz (an array x shaped like the "
                "model's input, and optionally the labels y), or choose --mode dynamic or fp16, "
                "which need no data")

    if data:
        evaluation = load_npz(Path(data)).take(samples)
        if calibration is not None and not calibration_file:
            warnings.append(f"calibrated and evaluated on the same file ({Path(data).name}); "
                            "accuracy on unseen samples may be lower. Give --calibration-data "
                            "for separate calibration samples")
    elif code is not None:
        evaluation = from_project(code, values.get("split") or "test", hparams, samples)
    elif calibration is not None:
        evaluation = calibration
        warnings.append("evaluated on the calibration samples; give --data for separate "
                        "evaluation samples")
    else:
        evaluation = _random_inputs(input_shape, model_path)
        warnings.append("no data given: the models were compared on random inputs, so accuracy "
                        "was not measured; give --data FILE.npz for real figures")

    on_progress(0.95)
    for chosen in (evaluation, calibration):
        if chosen is not None:
            chosen.check_fits(input_shape, model_path)
    if fixed_batch:
        evaluation = _whole_batches(evaluation, fixed_batch, model_path)
        calibration = calibration and _whole_batches(calibration, fixed_batch, model_path)
    on_progress(1.0)
    return ChosenData(evaluation, calibration, warnings)


def _random_inputs(input_shape: list, model_path: Path) -> EvaluationData:
    sample = input_shape[1:]
    if not all(isinstance(d, int) and d > 0 for d in sample):
        raise ModelToolError(
            f"{model_path} has no fixed input shape and no data was given; give samples with "
            "--data FILE.npz (an array x shaped like the model's input)")
    x = np.random.default_rng(0).uniform(0.0, 1.0, (RANDOM_SAMPLES, *sample)).astype(np.float32)
    return EvaluationData(x, None, "random inputs")


def _whole_batches(data: EvaluationData, batch: int, model_path: Path) -> EvaluationData:
    """``data`` cut to whole batches of a model whose batch size is fixed."""
    usable = len(data) // batch * batch
    if usable == 0:
        raise ModelToolError(f"{model_path} takes batches of exactly {batch} samples but "
                             f"{data.source} has only {len(data)}; give more samples")
    return data.take(usable)
