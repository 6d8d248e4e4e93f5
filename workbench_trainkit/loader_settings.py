"""What FastNN's preprocessing keys mean for a PyTorch DataLoader.

Only keys a file (or ``--set``) sets count, so a project that sets none loads its data in the
training process as before:

* ``num_preprocessing_threads`` -> ``num_workers`` (worker processes, kept between epochs);
* ``prefetch_buffer_size`` -> ``prefetch_factor``: the batches loaded ahead, shared among the
  workers (with no workers there is nothing to load ahead);
* ``shuffle_buffer_size``, ``num_parallel_batches``, ``datasets_use_caching``: no PyTorch
  equivalent; a note says so once.

Options a script passes to ``train_loader`` / ``eval_loader`` itself win over all of these.
"""

from __future__ import annotations

import math
from typing import Mapping

NO_EFFECT = {
    "shuffle_buffer_size": "the loader shuffles the whole dataset every epoch",
    "num_parallel_batches": "each loader worker prepares whole batches; set "
                            "num_preprocessing_threads for more at once",
    "datasets_use_caching": "a dataset stays in memory only if the dataset keeps it there "
                            "(as TensorDataset does)",
}


def loader_settings(hp: Mapping) -> tuple[dict, list[str]]:
    """The DataLoader options the hyper-parameters ask for, and why the others do nothing."""
    explicit = getattr(hp, "explicit", frozenset())
    options: dict = {}
    notes = [f"{key} has no effect: {reason}" for key, reason in NO_EFFECT.items()
             if key in explicit]
    workers = int(hp.get("num_preprocessing_threads", 0) or 0)
    if "num_preprocessing_threads" in explicit and workers > 0:
        options["num_workers"] = workers
        options["persistent_workers"] = True  # not started again for every epoch
    if "prefetch_buffer_size" in explicit:
        if options.get("num_workers"):
            buffer = int(hp.get("prefetch_buffer_size", 0) or 0)
            options["prefetch_factor"] = max(1, math.ceil(buffer / workers))
        else:
            notes.append("prefetch_buffer_size has no effect without loader workers: set "
                         "num_preprocessing_threads to load batches ahead")
    return options, notes
