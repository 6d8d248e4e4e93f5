"""Training helpers for PyTorch scripts: hyper-parameter files, runs, checkpoints, metrics, stop.

A training script stays plain PyTorch; the helpers do the chores around it::

    import torch
    from torch import nn
    from workbench_trainkit import (TrainingSession, build_lr_schedule, build_optimizer,
                                    datasets, models, total_steps)

    import data, model  # they register the dataset and the model by name

    with TrainingSession.from_args() as session:     # --hparams FILE --set key=value ...
        hp = session.hparams                          # hp.learning_rate, hp["batch_size"], ...
        train_set, val_set = datasets.get(hp.dataset_name)(hp)
        loader = session.train_loader(train_set)
        net = models.get(hp.model_name)(hp)
        optimizer = build_optimizer(net.parameters(), hp)
        scheduler = build_lr_schedule(optimizer, hp, total_steps(hp, len(loader)))
        net = session.prepare(net, optimizer, scheduler)   # device, torchrun, resume
        loss_fn = nn.CrossEntropyLoss()
        for epoch in session.epochs():
            net.train()
            for x, y in session.batches(loader):   # on SIGTERM: checkpoint, exit 0
                with session.autocast():
                    loss = loss_fn(net(x), y)
                session.optimize(loss)             # backward, clip, step, schedule
                session.log(loss=loss, lr=scheduler.get_last_lr()[0])
            session.log_eval(epoch, val_loss=..., val_acc=...)
            session.checkpoint()
        session.save_model(net)              # outputs/model.pt

What it gives:

* hyper-parameters from FastNN-style ``key=value`` files, typed and checked (``hparams``);
* the optimizer and learning-rate schedule they name (``optim``);
* datasets, models and preprocessing found by name (``registry``);
* atomic checkpoints, newest three kept, and exact resume (``checkpoint``);
* metrics as JSON lines in the run folder (``metrics``), and the best model by one of them
  in ``outputs/best.pt`` (``best_model``);
* training on a dataset version's samples only (``dataset_versions``), and fine-tuning from
  earlier weights with ``task_type=finetune`` (``finetune``);
* a clean stop on SIGTERM: checkpoint, one line, exit 0 (``signals``);
* ``torchrun --nproc_per_node=N`` with DDP, gloo on CPU (``distributed``).

The full guide is docs/training-helpers.md in the Workbench repository. Names are imported
when first used, so ``import workbench_trainkit`` does not import torch.
"""

from __future__ import annotations

import importlib

# public name -> module that defines it
_EXPORTS = {
    "TrainingSession": "session",
    "model_statistics": "session",
    "TrainkitError": "errors",
    "Registry": "registry",
    "datasets": "registry",
    "models": "registry",
    "preprocessing": "registry",
    "build_optimizer": "optim",
    "build_lr_schedule": "optim",
    "learning_rate_at": "optim",
    "total_steps": "optim",
    "clip_gradients": "optim",
    "Checkpointer": "checkpoint",
    "restore": "checkpoint",
    "load_checkpoint": "checkpoint",
    "MetricsWriter": "metrics",
    "log": "metrics",
    "StopFlag": "signals",
    "DATASET_MANIFEST_VARIABLE": "dataset_versions",
    "DATASET_VERSION_VARIABLE": "dataset_versions",
    "VAL_MANIFEST_VARIABLE": "dataset_versions",
    "DatasetVersion": "dataset_versions",
    "read_manifest": "dataset_versions",
    "active_dataset_version": "dataset_versions",
    "select_samples": "dataset_versions",
    "HParams": "hparams",
    "HParamsError": "hparams",
    "load_hparams": "hparams",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # Lazy: Workbench itself imports workbench_trainkit.hparams, and must not pay for torch.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench_trainkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"workbench_trainkit.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
