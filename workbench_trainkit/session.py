"""TrainingSession: what a training script holds while it trains.

It reads the hyper-parameters and the run's environment, then takes care of the parts every
script needs and few get right: the run folder, metrics, checkpoints and resuming, a clean stop
on SIGTERM, torchrun, mixed precision and the log lines. A whole script::

    from workbench_trainkit import TrainingSession, build_lr_schedule, build_optimizer, total_steps

    with TrainingSession.from_args() as session:
        hp = session.hparams
        loader = session.train_loader(my_dataset)
        model = MyNet()
        optimizer = build_optimizer(model.parameters(), hp)
        scheduler = build_lr_schedule(optimizer, hp, total_steps(hp, len(loader)))
        model = session.prepare(model, optimizer, scheduler)   # device, DDP, resume
        for epoch in session.epochs():
            model.train()
            for inputs, labels in session.batches(loader):   # stops cleanly on SIGTERM
                with session.autocast():
                    loss = loss_fn(model(inputs), labels)
                session.optimize(loss)
                session.log(loss=loss, lr=scheduler.get_last_lr()[0])
            session.log_eval(epoch, val_loss=..., val_acc=...)
            session.checkpoint()
        session.save_model(model)

Where things go: with ``WORKBENCH_RUN_DIR`` set (Workbench starts the script), into that run
folder; otherwise into ``--output-dir``, else the ``model_dir`` hyper-parameter, else
``outputs/<script name>``. Each holds ``metrics.jsonl``, ``checkpoints/``, ``outputs/`` and, once
the script has ended normally or stopped, ``outcome.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch

from workbench_trainkit import checkpoint as checkpoints
from workbench_trainkit import distributed
from workbench_trainkit.best_model import BestModelKeeper, chosen_best_metric
from workbench_trainkit.errors import TrainkitError
from workbench_trainkit.finetune import finetune_weights_path, load_finetune_weights
from workbench_trainkit.hparams import (HParams, HParamsError, check_data_paths, find_project_dir,
                                        load_hparams, project_hparams_file)
from workbench_trainkit.loader_settings import loader_settings
from workbench_trainkit.metrics import MetricsWriter
from workbench_trainkit.optim import clip_gradients
from workbench_trainkit.signals import StopFlag

RUN_DIR_VARIABLE = "WORKBENCH_RUN_DIR"
RESUME_VARIABLE = "WORKBENCH_RESUME_FROM"
SETUP_ERROR_STATUS = 2
# How the script ended, for whoever looks at the run folder later (Workbench, when the
# process that watched the run is gone): {"state": "completed"|"stopped", "step": N, "time": T}.
OUTCOME_FILE = "outcome.json"
# Metrics that are a setting at a step rather than a measurement: logged as their last value,
# not averaged over the steps since the previous line.
NOT_AVERAGED = frozenset({"lr"})


class TrainingSession:
    """One training process's run: its hyper-parameters, folders, checkpoints and stop flag.

    Use it as a context manager (``with TrainingSession.from_args() as session:``): entering
    creates the folders, joins the torchrun group and installs the SIGTERM handler; leaving
    undoes them, turns a TrainkitError or HParamsError into one ``error: ...`` line and exit
    status 2, and lets any other exception show its traceback.
    """

    def __init__(self, hparams: HParams, run_dir: str | Path, resume_from: str | Path | None = None,
                 keep_checkpoints: int = 3, catch_sigint: bool = False,
                 project_dir: str | Path | None = None):
        self.hparams = hparams
        # The folder of the project's workbench.toml: relative ckpt_file_name paths start
        # there, and its [registry] metric chooses the best model.
        self.project_dir = Path(project_dir) if project_dir else find_project_dir(Path.cwd())
        self.run_dir = Path(run_dir).absolute()
        self.checkpoints_dir = self.run_dir / "checkpoints"
        self.outputs_dir = self.run_dir / "outputs"
        self.resume_from = Path(resume_from) if resume_from else None
        self.context = distributed.detect()
        self.device = torch.device("cpu")
        self.seed = int(hparams.get("seed", 0) or 0)
        self.step = 0            # optimisation steps done
        self.epoch = 0           # epochs completed
        self.stop_flag = StopFlag()
        self.metrics: MetricsWriter | None = None
        self._keep = keep_checkpoints
        self._catch_sigint = catch_sigint
        self._checkpointer: checkpoints.Checkpointer | None = None
        self._best: BestModelKeeper | None = None
        self._loader_notes_printed = False
        self._resume_state: dict | None = None
        self._model = self._optimizer = self._scheduler = None
        self._current_epoch = 0
        self._batch_in_epoch = 0      # batches done in the current epoch
        self._skip_batches = 0        # batches a resumed epoch has already done
        self._window: dict[str, list] = {}
        self._last_checkpoint: tuple[int | None, Path | None] = (None, None)
        self._started = self._finished = False

    # --- creating and ending ------------------------------------------------------------

    @classmethod
    def from_args(cls, argv: Sequence[str] | None = None, description: str | None = None,
                  default_hparams: str | Path | None = None, **options) -> "TrainingSession":
        """A session from the command line and the environment Workbench sets.

        Options: ``--hparams FILE`` (default: ``default_hparams``, else the ``[training] hparams``
        of the project's ``workbench.toml``), ``--set KEY=VALUE`` (repeatable), ``--output-dir
        DIR`` and ``--resume CHECKPOINT_OR_FOLDER``. Environment: ``WORKBENCH_RUN_DIR`` and
        ``WORKBENCH_RESUME_FROM``. A bad file or value prints ``error: ...`` and exits with 2.
        ``options`` go to the constructor (``keep_checkpoints``, ``catch_sigint``).
        """
        args = _argument_parser(description).parse_args(argv)
        try:
            script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else Path.cwd()
            project_dir = find_project_dir(script.parent) or find_project_dir(Path.cwd())
            hparams_file = args.hparams or default_hparams or project_hparams_file(project_dir)
            hparams = load_hparams(hparams_file, args.overrides, project_dir=project_dir)
            data_problems = check_data_paths(hparams, Path.cwd(), hparams.source)
            if data_problems:
                raise HParamsError(data_problems)
            run_dir = (os.environ.get(RUN_DIR_VARIABLE) or args.output_dir
                       or hparams.get("model_dir") or Path("outputs") / script.stem)
            resume_from = args.resume or os.environ.get(RESUME_VARIABLE) or None
            catch_sigint = options.pop("catch_sigint", not os.environ.get(RUN_DIR_VARIABLE))
            options.setdefault("project_dir", project_dir)
            return cls(hparams, run_dir, resume_from=resume_from, catch_sigint=catch_sigint,
                       **options)
        except (TrainkitError, HParamsError) as exc:
            _exit_with_error(exc, distributed.detect())

    def start(self) -> "TrainingSession":
        """Create the run folders, join the torchrun group, seed, install the stop handler."""
        if self._started:
            return self
        self._started = True
        self.stop_flag.install(sigint=self._catch_sigint)
        self.device = distributed.init(self.context)
        try:
            for folder in (self.run_dir, self.checkpoints_dir, self.outputs_dir):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TrainkitError(f"cannot create the run folder {self.run_dir}: "
                                f"{exc.strerror or exc}; choose another --output-dir or "
                                "model_dir") from exc
        self.metrics = MetricsWriter(self.run_dir, enabled=self.is_main)
        self._checkpointer = checkpoints.Checkpointer(self.checkpoints_dir, keep=self._keep,
                                                      hparams=dict(self.hparams))
        random.seed(self.seed)
        np.random.seed(self.seed)
        torch.manual_seed(self.seed)
        for warning in getattr(self.hparams, "warnings", ()):
            self.print(f"warning: {warning}", file=sys.stderr)
        self._best = BestModelKeeper(self.outputs_dir, chosen_best_metric(self.project_dir))
        if self.resume_from is not None:
            # Read now, so a missing or damaged checkpoint stops the run before any work.
            self._resume_state = checkpoints.load_checkpoint(self.resume_from)
            self._best.restore()
        else:
            # task_type=finetune without ckpt_file_name stops now, before the data is loaded.
            finetune_weights_path(self.hparams, self.project_dir)
        if self.hparams.get("use_fp16") and self.device.type == "cpu":
            self.print("warning: use_fp16 on CPU autocasts to bfloat16 (CPU has no float16 "
                       "autocast)", file=sys.stderr)
        return self

    def finish(self, completed: bool = True) -> None:
        """Close the metrics file, give the signals back and leave the torchrun group.

        Called after a normal end (``completed``; leaving the ``with`` block without an
        exception does it), it also records the run as completed in ``outcome.json``."""
        if self._finished:
            return
        self._finished = True
        if self.metrics is not None:
            self.metrics.close()
        if completed and self._started:
            self._write_outcome("completed")
        self.stop_flag.uninstall()
        distributed.cleanup()

    def __enter__(self) -> "TrainingSession":
        try:
            return self.start()
        except (TrainkitError, HParamsError) as exc:
            self.finish(completed=False)
            _exit_with_error(exc, self.context)

    def __exit__(self, kind, exc, traceback) -> bool:
        self.finish(completed=kind is None)
        if isinstance(exc, (TrainkitError, HParamsError)):
            _exit_with_error(exc, self.context)
        return False

    # --- where this process is ----------------------------------------------------------

    @property
    def is_main(self) -> bool:
        """True in the process that prints, writes metrics and saves (rank 0)."""
        return self.context.is_main

    @property
    def rank(self) -> int:
        return self.context.rank

    @property
    def world_size(self) -> int:
        return self.context.world_size

    @property
    def at_step_limit(self) -> bool:
        """True once ``stop_at_step`` steps are done (never when it is 0)."""
        limit = int(self.hparams.get("stop_at_step", 0) or 0)
        return 0 < limit <= self.step

    def print(self, *values, **kwargs) -> None:
        """``print`` in the main process only, flushed, so torchrun logs each line once."""
        if self.is_main:
            print(*values, flush=True, **kwargs)

    # --- model and data -----------------------------------------------------------------

    def prepare(self, model, optimizer=None, scheduler=None):
        """Move ``model`` to the device, resume it if asked, wrap it for torchrun; returns it.

        The optimizer and scheduler given here are the ones ``checkpoint`` saves and resuming
        restores, with the step, the epoch and the random number generators. With
        ``task_type=finetune`` (and no resume, which restores everything) the model starts from
        the weights ``ckpt_file_name`` names.
        """
        model = model.to(self.device)
        if self.hparams.get("print_model_statistics"):
            self.print(model_statistics(model))
        finetune_from = finetune_weights_path(self.hparams, self.project_dir)
        if finetune_from is not None and self._resume_state is None and self.resume_from is None:
            load_finetune_weights(model, finetune_from)
            self.print(f"fine-tuning from {finetune_from}")
        if self._resume_state is not None:
            state, self._resume_state = self._resume_state, None
            checkpoints.apply_checkpoint(state, model, optimizer, scheduler, rank=self.rank)
            self.step, self.epoch = int(state["step"]), int(state["epoch"])
            self._skip_batches = int(state.get("extra", {}).get("batch_in_epoch", 0))
            self.print(f"resumed from {state['path']} at step {self.step} "
                       f"(epoch {self.epoch} done)")
        model = distributed.wrap_model(model, self.device)
        self._model, self._optimizer, self._scheduler = model, optimizer, scheduler
        return model

    def train_loader(self, dataset, batch_size: int | None = None, shuffle: bool = True,
                     **loader_options):
        """A DataLoader over this process's share of ``dataset``, reshuffled every epoch.

        The order depends only on the seed and the epoch, so a resumed run sees the same
        batches an uninterrupted one would. ``batch_size`` defaults to the hyper-parameter;
        the worker count and prefetching come from the preprocessing keys the file sets (see
        loader_settings.py), ``loader_options`` win over them.
        """
        from torch.utils.data import DataLoader

        sampler = _ResumableSampler(dataset, num_replicas=self.world_size, rank=self.rank,
                                    shuffle=shuffle, seed=self.seed)
        return DataLoader(dataset, batch_size=batch_size or self.hparams["batch_size"],
                          sampler=sampler, generator=self._generator(),
                          **self._loader_options(loader_options))

    def eval_loader(self, dataset, batch_size: int | None = None, **loader_options):
        """A DataLoader over all of ``dataset`` in order (every process sees all of it)."""
        from torch.utils.data import DataLoader

        return DataLoader(dataset, batch_size=batch_size or self.hparams["batch_size"],
                          shuffle=False, generator=self._generator(),
                          **self._loader_options(loader_options))

    def _loader_options(self, given: dict) -> dict:
        """The hyper-parameters' loader options under the script's own (``given``)."""
        options, notes = loader_settings(self.hparams)
        if notes and not self._loader_notes_printed:
            self._loader_notes_printed = True
            self.print("note: " + "; ".join(notes))
        merged = {**options, **given}
        if not merged.get("num_workers"):
            # The script chose no workers: the options only workers take would be refused.
            for name in ("prefetch_factor", "persistent_workers"):
                if name not in given:
                    merged.pop(name, None)
        return merged

    def _generator(self):
        # A DataLoader without its own generator draws a seed from the global one each epoch,
        # which would shift dropout after a resume; its own keeps the global one untouched.
        return torch.Generator().manual_seed(self.seed)

    def unwrap(self, model):
        """The model inside the DistributedDataParallel wrapper (``model`` itself otherwise)."""
        return checkpoints.unwrap_model(model)

    # --- the loop -----------------------------------------------------------------------

    def epochs(self) -> Iterator[int]:
        """The epoch numbers still to train (from 1, or after the resumed one) to ``num_epochs``."""
        for epoch in range(self.epoch + 1, int(self.hparams["num_epochs"]) + 1):
            if self.at_step_limit:
                return
            self._current_epoch = epoch
            yield epoch
            if self.epoch < epoch and not self.at_step_limit:
                self._epoch_done(epoch)

    def batches(self, loader) -> Iterator:
        """The batches of ``loader`` for the current epoch, from where a resumed run stopped.

        Before each batch it checks for a stop request: then it checkpoints, prints one line
        and exits with status 0. It ends early once ``stop_at_step`` steps are done.
        """
        epoch = self._current_epoch or self.epoch + 1
        sampler = getattr(loader, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        skip, self._skip_batches = self._skip_batches, 0
        if skip and isinstance(sampler, _ResumableSampler) and loader.batch_size:
            sampler.skip_next(skip * loader.batch_size)  # skipped without loading them
            skip_here = 0
        else:
            skip_here = skip
        self._batch_in_epoch = skip
        for index, batch in enumerate(loader):
            if index < skip_here:
                continue
            # Here, between steps: the step before is logged, and the checkpoint holds the
            # generator states from before the next batch draws dropout masks.
            if self.should_stop():
                self.stop()
            if self.at_step_limit:
                return  # the epoch is not done: a later run with more steps goes on from here
            if self._profile_due():
                # The caller's step runs while this generator waits at the yield, so the
                # profiler sees exactly one step: forward, backward and optimizer.
                with _step_profiler() as profiler:
                    yield batch
                self._save_profile(profiler)
            else:
                yield batch
        self._epoch_done(epoch)

    def _profile_due(self) -> bool:
        every = int(self.hparams.get("profile_every_n_iters", 0) or 0)
        return every > 0 and (self.step + 1) % every == 0

    def _save_profile(self, profiler) -> None:
        """Write the profiled step as a Chrome trace in ``profiles/`` and print its top ops."""
        folder = self.run_dir / "profiles"
        folder.mkdir(parents=True, exist_ok=True)
        suffix = f"-rank{self.rank}" if self.world_size > 1 else ""
        path = folder / f"step-{self.step:08d}{suffix}.json"
        profiler.export_chrome_trace(str(path))
        self.print(f"profile of step {self.step}: {path} (open it in https://ui.perfetto.dev)")
        self.print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))

    def _epoch_done(self, epoch: int) -> None:
        self.epoch = max(self.epoch, epoch)
        self._batch_in_epoch = 0

    def autocast(self):
        """Mixed precision as ``use_bf16`` / ``use_fp16`` ask (a no-op when both are false).

        On CPU both autocast to bfloat16; on a GPU use_fp16 gives float16.
        """
        use_fp16, use_bf16 = self.hparams.get("use_fp16"), self.hparams.get("use_bf16")
        if not (use_fp16 or use_bf16):
            return contextlib.nullcontext()
        dtype = torch.float16 if use_fp16 and self.device.type == "cuda" else torch.bfloat16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def optimize(self, loss) -> None:
        """One optimisation step from ``loss``: backward, clip, step, schedule, count.

        ``loss_scale`` (other than 0 or 1) multiplies the loss before backward and divides the
        gradients after, so small half-precision gradients do not underflow.
        """
        if self._optimizer is None:
            raise TrainkitError("optimize() needs the optimizer: pass it to "
                                "session.prepare(model, optimizer, scheduler) first")
        scale = float(self.hparams.get("loss_scale", 1.0) or 1.0)
        (loss * scale if scale != 1.0 else loss).backward()
        parameters = [p for group in self._optimizer.param_groups for p in group["params"]]
        if scale != 1.0:
            for parameter in parameters:
                if parameter.grad is not None:
                    parameter.grad.div_(scale)
        clip_gradients(parameters, self.hparams)
        self._optimizer.step()
        if self._scheduler is not None:
            self._scheduler.step()
        self._optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self._batch_in_epoch += 1

    def should_stop(self) -> bool:
        """True when a stop was requested (in a torchrun group: on any rank, agreed by all).

        ``batches()`` asks before every batch; a loop that does not use it asks after each
        step and calls ``stop()``. Every rank must ask at the same point: it is a collective.
        """
        return distributed.any_rank(self.stop_flag.requested)

    def stop(self) -> None:
        """Checkpoint, print ``stopped at step N; checkpoint PATH`` and exit with status 0."""
        # A stop between epochs comes right after the epoch's checkpoint: no need for another.
        saved_step, path = self._last_checkpoint
        if saved_step != self.step:
            path = self.checkpoint()
        self.print(f"stopped at step {self.step}; checkpoint {path}")
        self._write_outcome("stopped")
        self.finish(completed=False)
        raise SystemExit(0)

    def _write_outcome(self, state: str) -> None:
        """Write ``outcome.json`` (rank 0, atomically): how the script ended, at which step.
        A failure to write it is not the run's failure: the run only loses that record."""
        if not self.is_main:
            return
        record = json.dumps({"state": state, "step": self.step, "time": round(time.time(), 3),
                             "device": str(self.device), "processes": self.world_size}) + "\n"
        try:
            checkpoints.write_file_atomically(self.run_dir / OUTCOME_FILE,
                                              lambda file: file.write(record.encode("utf-8")))
        except (checkpoints.WriteFailed, OSError) as failure:
            print(f"warning: could not record the run's end in {self.run_dir / OUTCOME_FILE}: "
                  f"{getattr(failure, 'reason', failure)}", file=sys.stderr, flush=True)

    # --- what a run leaves --------------------------------------------------------------

    def log(self, step: int | None = None, **values) -> None:
        """Record training values; every ``log_loss_every_n_iters`` steps write and print them.

        Values are averaged over the steps since the last line (``lr`` is taken as it is), so
        one odd batch does not show. The line reads ``step=120 loss=0.4100 acc=0.8800 ...``.
        """
        if not self.is_main:
            return
        step = self.step if step is None else int(step)
        for name, value in values.items():
            value = float(value.item() if hasattr(value, "item") else value)
            total = self._window.setdefault(name, [0.0, 0])
            if name in NOT_AVERAGED:
                total[0], total[1] = value, 1
            else:
                total[0] += value
                total[1] += 1
        every = int(self.hparams.get("log_loss_every_n_iters", 10) or 10)
        if step % every == 0 and self._window:
            means = {name: total / count for name, (total, count) in self._window.items()}
            self._window.clear()
            self.metrics.write(step, **means)
            print(" ".join([f"step={step}"] + [_field(n, v) for n, v in means.items()]),
                  flush=True)

    def log_eval(self, epoch: int | None = None, **values) -> None:
        """Write and print evaluation values at once: ``epoch=2 val_loss=0.3 val_acc=0.9``.

        Without ``epoch`` (a final test) the line is just the values: ``test_acc=0.97``.
        A value of the best-model metric that beats the best so far saves the prepared model
        as ``outputs/best.pt`` and the record as ``outputs/best.json`` (see best_model.py).
        """
        if not self.is_main:
            return
        plain = {name: float(v.item() if hasattr(v, "item") else v) for name, v in values.items()}
        if epoch is not None:
            self.metrics.write(self.step, epoch=int(epoch), **plain)
        else:
            self.metrics.write(self.step, **plain)
        fields = ([f"epoch={epoch}"] if epoch is not None else []) + [
            _field(name, value) for name, value in plain.items()]
        print(" ".join(fields), flush=True)
        if self._best is not None and self._model is not None:
            self._best.offer(plain, self._model, self.epoch if epoch is None else int(epoch),
                             self.step)

    def checkpoint(self, extra: dict | None = None) -> Path | None:
        """Save the prepared model, optimizer and scheduler with the step, epoch and generators.

        Every rank must call it (they gather their generator states); rank 0 writes. Returns
        the checkpoint's path (None on other ranks). A failed write raises TrainkitError on
        every rank, naming the last good checkpoint.
        """
        if self._model is None:
            raise TrainkitError("checkpoint() needs the model: call session.prepare(model, "
                                "optimizer, scheduler) first")
        rng_states = distributed.gather_objects(checkpoints.capture_rng_state())
        path, failure = None, None
        if self.is_main:
            try:
                path = self._checkpointer.save(
                    self.step, self.epoch, self._model, self._optimizer, self._scheduler,
                    extra={"batch_in_epoch": self._batch_in_epoch, **(extra or {})},
                    rng_states=rng_states)
            except TrainkitError as exc:
                failure = exc
        if distributed.any_rank(failure is not None):
            raise failure or TrainkitError("rank 0 could not write the checkpoint; its log says "
                                           "why")
        self._last_checkpoint = (self.step, path)
        return path

    def save_model(self, model, name: str = "model.pt") -> Path:
        """Save the trained weights (a state_dict) as ``outputs/<name>``; returns the path."""
        path = self.outputs_dir / name
        if self.is_main:
            state = checkpoints.unwrap_model(model).state_dict()
            try:
                checkpoints.write_file_atomically(path, lambda file: torch.save(state, file))
            except checkpoints.WriteFailed as failure:
                raise TrainkitError(f"could not save the model to {path}: {failure.reason}; "
                                    "the last checkpoint still holds it") from failure.cause
        return path


class _ResumableSampler(torch.utils.data.DistributedSampler):
    """A DistributedSampler that can leave out the start of one epoch (a resumed one)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._skip = 0

    def skip_next(self, count: int) -> None:
        """Leave out the first ``count`` indices of the next epoch only."""
        self._skip = count

    def __iter__(self):
        indices = list(super().__iter__())
        skip, self._skip = self._skip, 0
        return iter(indices[skip:])


def _step_profiler():
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    return profile(activities=activities)


def model_statistics(model) -> str:
    """A table of the parameters in each layer of ``model`` and their total."""
    rows = []
    for name, module in checkpoints.unwrap_model(model).named_modules():
        count = sum(p.numel() for p in module.parameters(recurse=False))
        if count:
            rows.append((name or "(model)", type(module).__name__, count))
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    width = max([len(row[0]) for row in rows] + [5])
    lines = [f"{'layer':<{width}}  {'type':<16} {'parameters':>12}"]
    lines += [f"{name:<{width}}  {kind:<16} {count:>12,}" for name, kind, count in rows]
    lines.append(f"{'total':<{width}}  {'':<16} {total:>12,}  ({trainable:,} trainable)")
    return "\n".join(lines)


def _argument_parser(description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hparams", type=Path, default=None,
                        help="hyper-parameter file, one key=value a line (default: the one "
                             "workbench.toml names)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one hyper-parameter (repeatable)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="folder for metrics, checkpoints and outputs (default: model_dir)")
    parser.add_argument("--resume", default=None, metavar="CHECKPOINT",
                        help="resume from a checkpoint file, or the latest one in a folder")
    return parser


def _field(name: str, value: float) -> str:
    # A learning rate of 0.0001 would print as 0.0001 at best with 4 decimals; keep its digits.
    return f"{name}={value:.6g}" if name in NOT_AVERAGED else f"{name}={value:.4f}"


def _exit_with_error(exc: Exception, context: distributed.DistributedContext):
    """Print an error as ``error: ...`` (one line per problem) and exit with status 2."""
    problems = getattr(exc, "diagnostics", None)
    lines = ([str(d) for d in problems if d.severity == "error"] if problems else [str(exc)])
    prefix = "error: " if context.is_main else f"error: rank {context.rank}: "
    for line in lines or [str(exc)]:
        print(prefix + " ".join(line.split()), file=sys.stderr, flush=True)
    raise SystemExit(SETUP_ERROR_STATUS)
