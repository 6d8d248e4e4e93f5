"""Fine-tuning a pruned model for a few epochs on the project's training split, with the
optimizer its hyper-parameters choose (workbench_trainkit.build_optimizer), so the model
recovers the accuracy pruning cost."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from workbench.modeltools.context import ToolContext
from workbench.modeltools.errors import ModelToolError


def train_split(splits: Any, project: Path) -> Any:
    """The ``train`` part of what the project's dataset factory returned."""
    part = splits.get("train") if isinstance(splits, dict) else getattr(splits, "train", None)
    if part is None or len(part) == 0:
        raise ModelToolError(
            f"the dataset of {project} has no training split to fine-tune on (its factory should "
            "return train / val / test); give --finetune-epochs 0")
    return part


def finetune(model, train_set, hparams: Mapping, epochs: int, learning_rate: float,
             context: ToolContext) -> float:
    """Train ``model`` for ``epochs`` epochs with cross-entropy on ``train_set`` (pairs of input
    and label), ``batch_size`` and the optimizer from ``hparams`` at ``learning_rate``. Reports
    progress each step and stops between steps on cancel. Returns the last epoch's mean loss;
    the model is left in eval mode."""
    import torch
    from workbench_trainkit import build_optimizer, clip_gradients

    settings = dict(hparams)
    settings["learning_rate"] = learning_rate
    batch_size = int(settings.get("batch_size") or 32)
    seed = int(settings.get("seed") or 0)
    torch.manual_seed(seed)  # dropout and the batch order repeat from one run to the next
    loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    try:
        optimizer = build_optimizer([p for p in model.parameters() if p.requires_grad], settings)
    except Exception as exc:
        raise ModelToolError(f"the optimizer of the hyper-parameters cannot be built ({exc}); "
                             "fix the hyper-parameter file") from None
    loss_fn = torch.nn.CrossEntropyLoss()
    total_steps = max(1, epochs * len(loader))
    step, epoch_loss = 0, float("nan")
    for epoch in range(1, epochs + 1):
        model.train()
        losses = []
        for batch in loader:
            context.check_cancelled()
            images, labels = batch[0].float(), batch[1].long()
            optimizer.zero_grad()
            try:
                loss = loss_fn(model(images), labels)
            except Exception as exc:
                raise ModelToolError(
                    f"the pruned model cannot train on the project's training data "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}); "
                    "the dataset's samples should be (input, class index) pairs") from None
            loss.backward()
            clip_gradients(model.parameters(), settings)
            optimizer.step()
            value = float(loss.detach())
            if not math.isfinite(value):
                raise ModelToolError(f"fine-tuning diverged at epoch {epoch} (the loss is {value}); "
                                     "give a smaller --learning-rate")
            losses.append(value)
            step += 1
            context.progress(step / total_steps)
        epoch_loss = sum(losses) / max(1, len(losses))
        context.log(f"fine-tune epoch {epoch}/{epochs}: loss {epoch_loss:.4f}")
    model.eval()
    return epoch_loss
