"""Data-parallel training under ``torchrun``: detect it, join the group, wrap the model, agree.

``torchrun --nproc_per_node=N train.py`` starts N copies of the script with ``WORLD_SIZE``,
``RANK`` and ``LOCAL_RANK`` set. Each joins one process group (gloo on CPU, NCCL on GPUs),
wraps its model in DistributedDataParallel (gradients are averaged across processes at every
step) and reads its own share of the data through a DistributedSampler. Run without torchrun,
everything here is a no-op that behaves as a group of one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistributedContext:
    """Where this process sits: its rank among ``world_size`` processes, and on its machine."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True for rank 0, the process that prints, writes metrics and saves checkpoints."""
        return self.rank == 0


def detect(environ: Mapping[str, str] | None = None) -> DistributedContext:
    """The context torchrun's variables describe (a group of one when they are absent)."""
    environ = os.environ if environ is None else environ
    try:
        return DistributedContext(rank=int(environ.get("RANK", 0)),
                                  local_rank=int(environ.get("LOCAL_RANK", 0)),
                                  world_size=int(environ.get("WORLD_SIZE", 1)))
    except ValueError:
        return DistributedContext()


def init(context: DistributedContext) -> torch.device:
    """Join the process group when distributed; returns the device this process trains on."""
    use_cuda = torch.cuda.is_available() and context.local_rank < torch.cuda.device_count()
    device = torch.device("cuda", context.local_rank) if use_cuda else torch.device("cpu")
    if context.is_distributed and not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(device)
        # gloo is the backend that works on CPU; NCCL is the one that is fast between GPUs.
        dist.init_process_group("nccl" if use_cuda else "gloo", rank=context.rank,
                                world_size=context.world_size)
    return device


def is_initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def is_main() -> bool:
    """True in the process that should print and write (rank 0, or the only process)."""
    if is_initialized():
        return dist.get_rank() == 0
    return detect().is_main


def wrap_model(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``model`` in DistributedDataParallel when the group has several processes, else as is."""
    if not is_initialized() or dist.get_world_size() < 2:
        return model
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=ids)


def sampler(dataset, context: DistributedContext, shuffle: bool, seed: int = 0,
            drop_last: bool = False):
    """A DistributedSampler giving this rank its share of ``dataset``.

    Also used with one process: its order depends only on the seed and the epoch set with
    ``set_epoch``, so a resumed run sees the batches an uninterrupted one would have.
    """
    from torch.utils.data import DistributedSampler

    return DistributedSampler(dataset, num_replicas=context.world_size, rank=context.rank,
                              shuffle=shuffle, seed=seed, drop_last=drop_last)


def barrier() -> None:
    """Wait until every process gets here (nothing to wait for when not distributed)."""
    if is_initialized():
        dist.barrier()


def any_rank(flag: bool) -> bool:
    """True on every rank if ``flag`` is true on any of them (an all-reduce MAX)."""
    return _reduce(flag, dist.ReduceOp.MAX) if is_initialized() else bool(flag)


def every_rank(flag: bool) -> bool:
    """True on every rank only if ``flag`` is true on all of them (an all-reduce MIN)."""
    return _reduce(flag, dist.ReduceOp.MIN) if is_initialized() else bool(flag)


def gather_objects(value) -> list:
    """``value`` from every rank, in rank order, on every rank."""
    if not is_initialized():
        return [value]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def cleanup() -> None:
    """Leave the process group, if this process joined one."""
    if is_initialized():
        # Every rank reaches the teardown before any leaves: a rank that tears its gloo
        # connections down while a peer still uses them makes that peer abort ("terminate
        # called without an active exception", SIGABRT) and the run fail at its very end.
        try:
            dist.barrier()
        except Exception:  # a peer already gone: nothing left to wait for
            pass
        dist.destroy_process_group()


def _reduce(flag: bool, op) -> bool:
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.all_reduce(tensor, op=op)
    return bool(tensor.item())
