"""The hyper-parameter keys every training project knows, with FastNN's defaults.

A key is declared once, with its type, default, allowed values and a line of help; the file
parser checks values against it, the editor underlines what breaks it, and the training helpers
read the typed values. A project adds its own keys in ``workbench.toml`` (see hparams.py).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

KINDS = ("bool", "int", "float", "str", "list")


@dataclass(frozen=True)
class HParamKey:
    """One hyper-parameter: its name, type, default, group and the values it accepts."""

    name: str
    kind: str
    default: object
    group: str
    help: str = ""
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    item_kind: str = "str"
    # Why setting this key changes nothing in a PyTorch run (a FastNN key kept so FastNN's own
    # files load); a file that sets it gets a warning saying so. None for a key that works.
    no_effect: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"hyper-parameter {self.name!r}: type must be one of "
                             f"{', '.join(KINDS)}, not {self.kind!r}")
        if self.kind == "list" and self.item_kind not in ("bool", "int", "float", "str"):
            raise ValueError(f"hyper-parameter {self.name!r}: list items must be bool, int, "
                             f"float or str, not {self.item_kind!r}")

    def describe(self) -> str:
        """The accepted values in words, for error messages: "a number from 0 to 1"."""
        if self.choices:
            return "one of " + ", ".join(str(choice) for choice in self.choices)
        words = {"bool": "true or false", "int": "a whole number", "float": "a number",
                 "str": "text", "list": f"a comma-separated list of {self.item_kind} values"}
        text = words[self.kind]
        if self.minimum is not None and self.maximum is not None:
            text += f" from {_number(self.minimum)} to {_number(self.maximum)}"
        elif self.minimum is not None:
            text += f" of at least {_number(self.minimum)}"
        elif self.maximum is not None:
            text += f" of at most {_number(self.maximum)}"
        return text


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class HParamSchema:
    """The keys a hyper-parameter file may set, in declaration order."""

    def __init__(self, keys: Iterable[HParamKey]):
        self.keys: dict[str, HParamKey] = {}
        for key in keys:
            self.keys[key.name] = key

    def __contains__(self, name: str) -> bool:
        return name in self.keys

    def __getitem__(self, name: str) -> HParamKey:
        return self.keys[name]

    def extended(self, keys: Iterable[HParamKey]) -> "HParamSchema":
        """This schema plus ``keys``; a key of the same name replaces the built-in one."""
        return HParamSchema([*self.keys.values(), *keys])

    def closest(self, name: str) -> str | None:
        """The known key a mistyped ``name`` most likely meant, or None if nothing is close."""
        matches = difflib.get_close_matches(name.lower(), list(self.keys), n=1, cutoff=0.6)
        return matches[0] if matches else None

    def defaults(self) -> dict:
        """Every key's default value (lists as fresh lists, so callers may change them)."""
        return {name: list(key.default) if isinstance(key.default, tuple) else key.default
                for name, key in self.keys.items()}

    def groups(self) -> dict[str, list[HParamKey]]:
        grouped: dict[str, list[HParamKey]] = {}
        for key in self.keys.values():
            grouped.setdefault(key.group, []).append(key)
        return grouped


# ftrl is FastNN's too: known, so its files load, but PyTorch has no FTRL and build_optimizer
# refuses it; adamweightdecay (BERT's Adam with decoupled weight decay) is built as AdamW.
OPTIMIZERS = ("adadelta", "adagrad", "adam", "adamw", "adamweightdecay", "ftrl", "momentum",
              "sgd", "rmsprop")
# FastNN's cluster keys: PyTorch runs start with torchrun, which sets what they set.
CLUSTER_NO_EFFECT = "torchrun sets up the processes of a PyTorch run"


def _keys() -> list[HParamKey]:
    k = HParamKey
    dataset, prep, model, lr, opt, log, perf, cluster = (
        "dataset", "preprocessing", "model", "learning rate", "optimizer", "log", "performance",
        "cluster")
    ftrl_only = "PyTorch has no FTRL optimizer, so only optimizer=ftrl would read it"
    return [
        k("dataset_name", "str", "mock", dataset, "name of a dataset registered by the project"),
        k("dataset_dir", "str", "", dataset, "folder holding the dataset files"),
        k("num_sample_per_epoch", "int", 1000000, dataset,
          "samples in one pass over the data", minimum=1),
        k("num_classes", "int", 100, dataset, "number of classes", minimum=1),
        k("train_files", "list", (), dataset, "comma-separated training files (in dataset_dir)"),

        k("preprocessing_name", "str", "", prep, "preprocessing registered by the project"),
        k("shuffle_buffer_size", "int", 1024, prep, "samples held for shuffling", minimum=0),
        k("num_parallel_batches", "int", 8, prep,
          "batches prepared at once (PyTorch: each loader worker prepares whole batches)",
          minimum=1),
        k("prefetch_buffer_size", "int", 32, prep,
          "batches loaded ahead, shared by the loader workers", minimum=0),
        k("num_preprocessing_threads", "int", 16, prep,
          "data loading worker processes (when not set: none, the script loads the data)",
          minimum=0),
        k("datasets_use_caching", "bool", False, prep, "keep the decoded dataset in memory"),

        k("task_type", "str", "pretrain", model, "train from scratch or from a checkpoint",
          choices=("pretrain", "finetune")),
        k("model_name", "str", "inception_resnet_v2", model, "model registered by the project"),
        k("num_epochs", "int", 100, model, "passes over the training data", minimum=1),
        k("weight_decay", "float", 0.00004, model, "L2 penalty on the weights", minimum=0),
        k("max_gradient_norm", "float", 0.0, model,
          "clip gradients to this global norm (0 = no clipping)", minimum=0),
        k("batch_size", "int", 32, model, "samples per step (per process)", minimum=1),
        k("model_dir", "str", "", model, "where checkpoints and the model go outside a run"),
        k("ckpt_file_name", "str", "", model, "checkpoint to start from when finetuning"),

        k("learning_rate", "float", 0.01, lr, "initial learning rate", minimum=0),
        k("end_learning_rate", "float", 0.0001, lr,
          "learning rate reached at the end by polynomial decay", minimum=0),
        k("learning_rate_decay_type", "str", "exponential", lr, "how the learning rate falls",
          choices=("fixed", "exponential", "polynomial")),
        k("learning_rate_decay_factor", "float", 0.94, lr,
          "factor of each exponential decay", minimum=0, maximum=1),
        k("warmup_steps", "int", 0, lr, "steps of warm-up before the schedule (0 = none)",
          minimum=0),
        k("warmup_scheme", "str", "t2t", lr, "warm-up curve", choices=("t2t",)),
        k("decay_scheme", "str", "luong234", lr,
          "when exponential decay starts and how often it applies",
          choices=("luong234", "luong5", "luong10")),

        k("optimizer", "str", "rmsprop", opt, "the optimizer", choices=OPTIMIZERS),
        k("adadelta_rho", "float", 0.95, opt, "Adadelta decay rate", minimum=0, maximum=1),
        k("adagrad_initial_accumulator_value", "float", 0.1, opt,
          "Adagrad starting accumulator", minimum=0),
        k("adam_beta1", "float", 0.9, opt, "Adam / AdamW first moment decay",
          minimum=0, maximum=1),
        k("adam_beta2", "float", 0.999, opt, "Adam / AdamW second moment decay",
          minimum=0, maximum=1),
        k("opt_epsilon", "float", 1.0, opt, "optimizer epsilon", minimum=0),
        k("momentum", "float", 0.9, opt, "momentum of the momentum optimizer",
          minimum=0, maximum=1),
        k("rmsprop_momentum", "float", 0.9, opt, "RMSProp momentum", minimum=0, maximum=1),
        k("rmsprop_decay", "float", 0.9, opt, "RMSProp decay (alpha)", minimum=0, maximum=1),
        k("ftrl_learning_rate_power", "float", -0.5, opt, "FTRL learning rate power",
          maximum=0, no_effect=ftrl_only),
        k("ftrl_initial_accumulator_value", "float", 0.1, opt,
          "FTRL starting accumulator", minimum=0, no_effect=ftrl_only),
        k("ftrl_l1", "float", 0.0, opt, "FTRL l1 regularization strength", minimum=0,
          no_effect=ftrl_only),
        k("ftrl_l2", "float", 0.0, opt, "FTRL l2 regularization strength", minimum=0,
          no_effect=ftrl_only),

        k("stop_at_step", "int", 0, log, "stop after this many steps (0 = run every epoch)",
          minimum=0),
        k("log_loss_every_n_iters", "int", 10, log, "steps between logged losses", minimum=1),
        k("profile_every_n_iters", "int", 0, log,
          "steps between profiler traces (0 = never)", minimum=0),
        k("print_model_statistics", "bool", False, log, "print parameters per layer at start"),
        k("hooks", "list", ("StopAtStepHook", "ProfilerHook"), log,
          "FastNN's TensorFlow session hooks",
          no_effect="TensorFlow hooks do not exist in PyTorch; stop_at_step and "
                    "profile_every_n_iters do what FastNN's hooks did"),
        k("profile_at_task", "int", 0, log, "the FastNN task that profiles", minimum=0,
          no_effect="profile_every_n_iters profiles every process of a PyTorch run"),
        k("log_device_placement", "bool", False, log, "log where TensorFlow places each op",
          no_effect="PyTorch places tensors where the script puts them"),

        k("use_fp16", "bool", False, perf, "autocast to float16 (bfloat16 on CPU)"),
        k("use_bf16", "bool", False, perf, "autocast to bfloat16"),
        k("loss_scale", "float", 1.0, perf, "static loss scale for half precision",
          minimum=0),

        k("job_name", "str", "", cluster, "FastNN's role of this process (ps or worker)",
          no_effect=CLUSTER_NO_EFFECT),
        k("protocol", "str", "grpc", cluster, "FastNN's transport between processes",
          no_effect="torch.distributed chooses its own transport (NCCL or gloo)"),
        k("enable_paisoar", "bool", True, cluster, "PAI's all-reduce library in FastNN",
          no_effect="PyTorch runs use DistributedDataParallel instead of PAISoar"),
    ]


FASTNN_SCHEMA = HParamSchema(_keys())
