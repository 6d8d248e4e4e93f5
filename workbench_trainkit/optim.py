"""The optimizer, the learning-rate schedule and gradient clipping, as the hyper-parameters say.

The schedule is FastNN's (which took it from the TensorFlow NMT tutorial):

* t2t warm-up: for the first ``warmup_steps`` steps the rate starts at 1% of the schedule's
  value and grows exponentially to it: ``factor = exp(log(0.01) / warmup_steps) ** (warmup_steps
  - step)``.
* ``learning_rate_decay_type``:

  - ``fixed``: ``learning_rate`` throughout;
  - ``exponential``: multiplied by ``learning_rate_decay_factor`` in stairs, placed by
    ``decay_scheme``: ``luong234`` starts at 2/3 of the steps and decays 4 times, ``luong5``
    starts half-way and decays 5 times, ``luong10`` starts half-way and decays 10 times. The
    first decay is at the start step, the others every ``(total - start) // times`` steps
    after it, so the rate has fallen by ``factor ** times`` for the last stretch;
  - ``polynomial``: a straight line (power 1) from ``learning_rate`` at step 0 to
    ``end_learning_rate`` at the last step.

The warm-up factor multiplies whichever decay is chosen. ``learning_rate_at`` computes a value
without torch, so a schedule can be checked, plotted or tested on its own.
"""

from __future__ import annotations

import math
from typing import Mapping

from workbench_trainkit.errors import TrainkitError
from workbench_trainkit.schema import OPTIMIZERS

# decay_scheme -> (where decay starts, as a fraction of the steps; how many decays)
DECAY_SCHEMES = {
    "luong234": (2 / 3, 4),
    "luong5": (1 / 2, 5),
    "luong10": (1 / 2, 10),
}
DECAY_TYPES = ("fixed", "exponential", "polynomial")


def total_steps(hp: Mapping, steps_per_epoch: int) -> int:
    """How many optimisation steps the run makes: ``num_epochs`` epochs, cut at ``stop_at_step``.

    ``stop_at_step`` of 0 or less means no limit.
    """
    if steps_per_epoch < 1:
        raise TrainkitError(
            "the training data gives no batch per epoch: check that the dataset is not empty "
            "and that batch_size is not larger than it")
    steps = int(hp["num_epochs"]) * int(steps_per_epoch)
    stop_at = int(hp.get("stop_at_step", 0) or 0)
    if stop_at > 0:
        steps = min(steps, stop_at)
    return steps


def learning_rate_at(step: int, hp: Mapping, total_steps: int) -> float:
    """The learning rate used for optimisation step ``step`` (0 = the first) of ``total_steps``."""
    base = float(hp["learning_rate"])
    decay_type = hp.get("learning_rate_decay_type", "fixed")
    if decay_type == "fixed":
        rate = base
    elif decay_type == "exponential":
        rate = base * float(hp["learning_rate_decay_factor"]) ** _decays_done(
            step, total_steps, hp.get("decay_scheme", "luong234"))
    elif decay_type == "polynomial":
        end = float(hp["end_learning_rate"])
        progress = min(step, total_steps) / total_steps if total_steps > 0 else 1.0
        rate = (base - end) * (1.0 - progress) + end
    else:
        raise TrainkitError(f"learning_rate_decay_type is {decay_type!r}; use one of "
                            f"{', '.join(DECAY_TYPES)}")
    return rate * _warmup_factor(step, hp)


def _warmup_factor(step: int, hp: Mapping) -> float:
    warmup_steps = int(hp.get("warmup_steps", 0) or 0)
    if warmup_steps <= 0 or step >= warmup_steps:
        return 1.0
    scheme = hp.get("warmup_scheme", "t2t")
    if scheme != "t2t":
        raise TrainkitError(f"warmup_scheme is {scheme!r}; the only warm-up known is t2t")
    return math.exp(math.log(0.01) / warmup_steps) ** (warmup_steps - step)


def _decays_done(step: int, total_steps: int, scheme: str) -> int:
    """How many times exponential decay has applied by ``step``, under ``scheme``."""
    try:
        start_fraction, times = DECAY_SCHEMES[scheme]
    except KeyError:
        raise TrainkitError(f"decay_scheme is {scheme!r}; use one of "
                            f"{', '.join(DECAY_SCHEMES)}") from None
    start = int(total_steps * start_fraction)
    if step < start:
        return 0
    every = max(1, (total_steps - start) // times)
    # The first decay applies at the start step itself, so all of them happen within the run;
    # capped, as rounding the interval down leaves a few steps after the last one.
    return min((step - start) // every + 1, times)


def build_optimizer(params, hp: Mapping):
    """A torch optimizer for ``params`` of the kind ``hp["optimizer"]`` names, with its keys.

    Every optimizer gets ``learning_rate`` and ``weight_decay`` (an L2 penalty; AdamW's is
    decoupled). Their own keys: adadelta ``adadelta_rho``, ``opt_epsilon``; adagrad
    ``adagrad_initial_accumulator_value``; adam and adamw ``adam_beta1``, ``adam_beta2``,
    ``opt_epsilon``; momentum ``momentum``; rmsprop ``rmsprop_decay``, ``rmsprop_momentum``,
    ``opt_epsilon``; sgd none. FastNN's ``adamweightdecay`` (BERT's Adam with weight decay kept
    out of the moments) is AdamW, which also corrects the moments' start-up bias, as BERT's does
    not. FastNN's ``ftrl`` has no PyTorch optimizer: choosing it is a TrainkitError.
    """
    import torch  # here: reading a schedule or a file should not pay for importing torch

    name = hp["optimizer"]
    lr = float(hp["learning_rate"])
    decay = float(hp.get("weight_decay", 0.0))
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, rho=hp["adadelta_rho"], eps=hp["opt_epsilon"],
                                    weight_decay=decay)
    if name == "adagrad":
        return torch.optim.Adagrad(
            params, lr=lr, initial_accumulator_value=hp["adagrad_initial_accumulator_value"],
            weight_decay=decay)
    if name == "ftrl":
        raise TrainkitError("optimizer is ftrl, which PyTorch does not have; choose another "
                            "optimizer (adagrad is the closest, adam the usual choice)")
    if name in ("adam", "adamw", "adamweightdecay"):
        kind = torch.optim.Adam if name == "adam" else torch.optim.AdamW
        return kind(params, lr=lr, betas=(hp["adam_beta1"], hp["adam_beta2"]),
                    eps=hp["opt_epsilon"], weight_decay=decay)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=hp["momentum"], weight_decay=decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=decay)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=hp["rmsprop_decay"],
                                   eps=hp["opt_epsilon"], momentum=hp["rmsprop_momentum"],
                                   weight_decay=decay)
    raise TrainkitError(f"optimizer is {name!r}; use one of {', '.join(OPTIMIZERS)}")


def build_lr_schedule(optimizer, hp: Mapping, total_steps: int):
    """A LambdaLR that sets ``optimizer``'s rate to ``learning_rate_at(step)``; step it once a step.

    Each parameter group's starting rate is scaled by the same factor, so groups given their own
    rates keep their proportions.
    """
    import torch

    base = float(hp["learning_rate"])
    # A plain function, not a callable object: LambdaLR would save an object's fields in its
    # state, and a resumed run would then follow the old hyper-parameters.
    def factor(step: int) -> float:
        return learning_rate_at(step, hp, total_steps) / base if base > 0 else 0.0

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def clip_gradients(parameters, hp: Mapping) -> float | None:
    """Scale the gradients so their global norm is at most ``max_gradient_norm`` (0 = leave them).

    Returns the norm before clipping, or None when clipping is off.
    """
    max_norm = float(hp.get("max_gradient_norm", 0.0) or 0.0)
    if max_norm <= 0:
        return None
    import torch

    return float(torch.nn.utils.clip_grad_norm_(parameters, max_norm))
