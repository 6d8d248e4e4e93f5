"""Fine-tuning: start training from weights trained before (``task_type=finetune``).

``ckpt_file_name`` names the weights: a plain state_dict file (``outputs/model.pt``, a
registry's ``bestmodel_0003.pt``) or a checkpoint file or folder of the training helpers, of
which only the model's state is taken (the optimizer, schedule and step start afresh). A
relative path is taken from the project folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch

from workbench_trainkit import checkpoint as checkpoints
from workbench_trainkit.errors import TrainkitError

SHOWN_MISMATCHES = 3


def finetune_weights_path(hp: Mapping, project_dir: str | Path | None) -> Path | None:
    """The weights file or folder a fine-tuning run starts from; None when not fine-tuning."""
    if hp.get("task_type", "pretrain") != "finetune":
        return None
    name = str(hp.get("ckpt_file_name") or "").strip()
    if not name:
        raise TrainkitError("task_type is finetune but ckpt_file_name is empty; set "
                            "ckpt_file_name to the weights to start from (e.g. "
                            "outputs/model.pt), or set task_type=pretrain")
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = Path(project_dir or Path.cwd()) / path
    return path


def load_finetune_weights(model, path: str | Path) -> None:
    """Put the weights at ``path`` into ``model``; TrainkitError when they cannot fit it."""
    state = read_weights(path)
    expected = checkpoints.unwrap_model(model).state_dict()
    mismatched = [(name, tuple(state[name].shape), tuple(tensor.shape))
                  for name, tensor in expected.items()
                  if name in state and tuple(state[name].shape) != tuple(tensor.shape)]
    if mismatched:
        shown = ", ".join(f"{name} (weights {list(theirs)}, model {list(ours)})"
                          for name, theirs, ours in mismatched[:SHOWN_MISMATCHES])
        more = (f" and {len(mismatched) - SHOWN_MISMATCHES} more"
                if len(mismatched) > SHOWN_MISMATCHES else "")
        raise TrainkitError(f"the weights in {path} do not fit this model: the shapes of "
                            f"{shown}{more} differ; fine-tune from weights of the same model "
                            "(model_name, num_classes), or train from scratch with "
                            "task_type=pretrain")
    missing = [name for name in expected if name not in state]
    unexpected = [name for name in state if name not in expected]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"lack {', '.join(missing[:SHOWN_MISMATCHES])}"
                         + (f" and {len(missing) - SHOWN_MISMATCHES} more"
                            if len(missing) > SHOWN_MISMATCHES else ""))
        if unexpected:
            parts.append(f"have {', '.join(unexpected[:SHOWN_MISMATCHES])}"
                         + (f" and {len(unexpected) - SHOWN_MISMATCHES} more"
                            if len(unexpected) > SHOWN_MISMATCHES else "")
                         + " that the model does not")
        raise TrainkitError(f"the weights in {path} do not fit this model: they "
                            f"{' and '.join(parts)}; fine-tune from weights of the same "
                            "model_name, or train from scratch with task_type=pretrain")
    checkpoints.unwrap_model(model).load_state_dict(state)


def read_weights(path: str | Path) -> dict:
    """The model state_dict held by a weights file, a checkpoint file or a checkpoint folder."""
    path = Path(path)
    if not path.exists():
        raise TrainkitError(f"ckpt_file_name {path} does not exist; point it at a model.pt, a "
                            "bestmodel_NNNN.pt or a run's checkpoints, or set "
                            "task_type=pretrain")
    if path.is_dir():
        return checkpoints.load_checkpoint(path)["model"]
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several kinds for a file that is not its own
        raise TrainkitError(f"ckpt_file_name {path} is not a file of PyTorch weights "
                            f"({_first_line(exc)}); point it at a model.pt, a "
                            "bestmodel_NNNN.pt or a checkpoint, or set task_type=pretrain"
                            ) from exc
    if isinstance(state, dict) and isinstance(state.get("model"), dict) and "step" in state:
        state = state["model"]  # a checkpoint of the training helpers: its model only
    if not isinstance(state, dict) or not state or not all(
            isinstance(name, str) and isinstance(value, torch.Tensor)
            for name, value in state.items()):
        raise TrainkitError(f"ckpt_file_name {path} holds no model weights (a state_dict of "
                            "named tensors); point it at a model.pt, a bestmodel_NNNN.pt or a "
                            "checkpoint, or set task_type=pretrain")
    return state


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
