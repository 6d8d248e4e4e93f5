"""Deploy a model version to the deployment slots of paired devices.

``build_bundle`` writes what an app needs to use a version of the project's model registry into
``<registry>/deployments/``: ``deployment_NNNN.yaml`` (the model file and its sha256, the
runtime, the inputs and outputs with their names, shapes and dtypes as the ONNX model declares
them, and the preprocessing the app must do, as the version's record has it) and
``nn_model_NNNN.zip`` holding that YAML and the model. The version's quantized model
(``.int8.onnx``) is preferred to its plain ONNX one.

``deploy_to_devices`` pushes the model to every device (nothing is sent when a device has it; a
push cut off resumes) and switches the slot to it (``slot.deploy``, protocol 4: the device
loads and warms the model beside the old one and switches new requests to it; a model it cannot
load leaves the slot serving the old one). The devices are served in parallel, a thread each
(at most ``MAX_PARALLEL``), each under its own time limit, so that a slow or dead device holds
up no other. The report says per device: switched (with its load and warm-up times), failed
(with the device's reason) or unreachable. Each deploy is added to
``<registry>/deployments/deployments.jsonl``.

``stage_to_devices`` pushes a model file that is no registry version (a checkpoint of a run
still training, converted) to a slot the same way; its log line says ``staging`` (the run and
the epoch) and has no version, so no alias, rollback or redeploy ever takes it for one.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from workbench.device.errors import ConnectionLost, DeviceError, DeviceUnreachable
from workbench.device.paired import PairedDevice, PairedDevices, now_iso
from workbench.tasks import CancelToken, Cancelled, Progress

log = logging.getLogger(__name__)

DEFAULT_SLOT = "classifier"
DEFAULT_RUNTIME = "onnxruntime"
DEFAULT_DEVICE_TIMEOUT_S = 120.0
MAX_PARALLEL = 32
DEPLOYMENTS_FOLDER = "deployments"
DEPLOYMENT_LOG = "deployments.jsonl"
NO_PREPROCESSING = "none recorded"
CANCELLED_BEFORE_SWITCH = "cancelled before it switched"
SWITCHED, FAILED, UNREACHABLE = "switched", "failed", "unreachable"
# Hyper-parameters whose names say they shape what the model is fed ...
_PREPROCESSING_WORDS = ("mean", "std", "normal", "resize", "image_size", "input_size", "crop",
                        "scale", "grayscale", "channels", "preprocess", "img_size")
# ... but for these, which are about loading the data or training (FastNN's keys).
_NOT_PREPROCESSING = frozenset({"num_preprocessing_threads", "loss_scale", "shuffle_buffer_size",
                                "num_parallel_batches", "prefetch_buffer_size", "datasets_use_caching"})


@dataclass
class Bundle:
    """The deployment bundle of one model version."""

    version: str
    model: Path
    sha256: str
    yaml_path: Path
    zip_path: Path
    description: dict


@dataclass
class DeviceOutcome:
    """What one device did with a deploy: ``state`` is switched, failed or unreachable."""

    device: str
    address: str
    state: str
    reason: str = ""
    load_ms: float | None = None
    warm_ms: float | None = None
    previous: str | None = None
    pushed_bytes: int = 0
    seconds: float = 0.0
    worst_request_ms: float | None = None
    """The slowest request the slot served during the switch, when the agent reports it."""

    def timings_text(self) -> str:
        """"load 3.1 ms, warm-up 1.2 ms" (and the worst request during the switch, if known)."""
        text = f"load {self.load_ms or 0.0:.1f} ms, warm-up {self.warm_ms or 0.0:.1f} ms"
        if self.worst_request_ms is not None:
            text += f", worst request during the switch {self.worst_request_ms:.1f} ms"
        return text


@dataclass
class DeployReport:
    version: str
    slot: str
    model: str
    sha256: str
    bundle: str
    time: str
    outcomes: list[DeviceOutcome] = field(default_factory=list)
    seconds: float = 0.0
    alias: str = ""
    staging: dict = field(default_factory=dict)
    """For a staging push: ``run`` and ``epoch`` of the checkpoint (empty for a version)."""

    @property
    def switched(self) -> list[DeviceOutcome]:
        return [o for o in self.outcomes if o.state == SWITCHED]

    @property
    def not_switched(self) -> list[DeviceOutcome]:
        return [o for o in self.outcomes if o.state != SWITCHED]

    @property
    def ok(self) -> bool:
        return bool(self.outcomes) and not self.not_switched

    def to_json(self) -> dict:
        return {**asdict(self), "ok": self.ok}

    def to_text(self) -> str:
        what = (f"Run {self.staging.get('run')} epoch {self.staging.get('epoch')}" if self.staging
                else f"Model version {self.version}")
        lines = [f"{what} ({Path(self.model).name}, sha256 "
                 f"{self.sha256[:12]}) to slot {self.slot}: {len(self.switched)} of "
                 f"{len(self.outcomes)} devices switched in {self.seconds:.1f} s."]
        for outcome in self.outcomes:
            where = f"{outcome.device} ({outcome.address})"
            if outcome.state == SWITCHED:
                lines.append(f"  switched     {where}: {outcome.timings_text()}")
            else:
                lines.append(f"  {outcome.state:<12} {where}: {outcome.reason}")
        if self.bundle:
            lines.append(f"Bundle: {self.bundle}")
        return "\n".join(lines)


# --- The bundle ------------------------------------------------------------------------------

def deployments_folder(project_dir: Path) -> Path:
    """``<registry>/deployments`` of the project (its registry folder from workbench.toml)."""
    from workbench.project.project_file import load_project
    from workbench.registry.errors import RegistryError
    from workbench.registry.settings import read_settings

    try:
        settings = read_settings(Path(project_dir), load_project(Path(project_dir)).settings)
    except RegistryError as exc:
        raise DeviceError(str(exc)) from None
    return settings.folder / DEPLOYMENTS_FOLDER


def _registry(project_dir: Path):
    from workbench.registry.models import ModelRegistry
    from workbench.registry.settings import read_settings
    from workbench.project.project_file import load_project

    project_dir = Path(project_dir)
    if not (project_dir / "workbench.toml").is_file():
        raise DeviceError(f"{project_dir} is not a Workbench project (it has no workbench.toml); "
                          "give the project's folder")
    return ModelRegistry(read_settings(project_dir, load_project(project_dir).settings))


def model_for_device(registry, version) -> Path:
    """The file of ``version`` a device runs: its ``.int8.onnx`` variant, else its ``.onnx``."""
    names = [item.name for item in version.files]
    for suffix in (".int8.onnx", ".onnx"):
        chosen = next((name for name in names if name.endswith(suffix)), None)
        if chosen is not None:
            path = registry.folder / chosen
            if not path.is_file():
                raise DeviceError(f"model version {version.name}'s file {chosen} is missing from "
                                  f"{registry.folder}; restore it, or convert the version again")
            return path
    raise DeviceError(f"model version {version.name} has no ONNX model to deploy (its files: "
                      f"{', '.join(names) or 'none'}); convert it first with `workbench model "
                      f"convert` (and `workbench model quantize` for a smaller one)")


def describe_onnx(path: Path) -> tuple[list[dict], list[dict]]:
    """The inputs and outputs the ONNX model declares: name, shape (a dimension without a fixed
    size is its name, or null) and dtype (a NumPy dtype name)."""
    import onnx
    from onnx import helper

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises its own errors and protobuf's
        raise DeviceError(f"{path} is not an ONNX model onnx can read ({exc}); convert the "
                          "version again") from None
    initializers = {item.name for item in model.graph.initializer}

    def tensors(values) -> list[dict]:
        found = []
        for value in values:
            if value.name in initializers:
                continue
            tensor = value.type.tensor_type
            shape = [dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None)
                     for dim in tensor.shape.dim]
            try:
                dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            except Exception:
                dtype = f"onnx type {tensor.elem_type}"
            found.append({"name": value.name, "shape": shape, "dtype": dtype})
        return found

    return tensors(model.graph.input), tensors(model.graph.output)


def preprocessing_of(info: dict, project_dir: Path | None = None) -> dict | str:
    """The preprocessing an app must do to its inputs: what the version's record declares (its
    ``preprocessing``), else the project's ``[deploy.preprocessing]`` table of workbench.toml,
    else the hyper-parameters that shape the input, or "none recorded"."""
    declared = info.get("preprocessing") or (_project_preprocessing(project_dir) if project_dir else None)
    if declared:
        return declared
    hparams = info.get("hyper_parameters") or {}
    if isinstance(hparams, dict):
        found = {key: value for key, value in hparams.items()
                 if key not in _NOT_PREPROCESSING and value not in ("", None)
                 and any(word in str(key).lower() for word in _PREPROCESSING_WORDS)}
        if found:
            return found
    return NO_PREPROCESSING


def _project_preprocessing(project_dir: Path) -> dict | None:
    from workbench.project import ProjectError, load_project

    try:
        deploy = load_project(project_dir).settings.get("deploy")
    except ProjectError as exc:
        raise DeviceError(str(exc)) from None
    table = deploy.get("preprocessing") if isinstance(deploy, dict) else None
    if table is not None and not isinstance(table, dict):
        raise DeviceError(f"{Path(project_dir) / 'workbench.toml'}: [deploy] preprocessing must be a table "
                          f"(e.g. [deploy.preprocessing] divide_by = 16), not {table!r}")
    return table or None


def build_bundle(project_dir: Path | str, version_or_alias: str,
                 runtime: str = DEFAULT_RUNTIME, deployed_as: str = "") -> Bundle:
    """Write ``deployment_NNNN.yaml`` and ``nn_model_NNNN.zip`` of the version into the
    registry's deployments folder (each atomically) and describe them. ``deployed_as`` is the
    alias the deploy serves (the pipeline moves ``production`` only once the devices switched,
    so the version's own aliases do not name it yet)."""
    import yaml

    from workbench.platform.atomic_files import write_atomically, write_text_atomically
    from workbench.platform.file_hashes import hash_file
    from workbench.registry.errors import RegistryError

    project_dir = Path(project_dir).expanduser().absolute()
    registry = _registry(project_dir)
    try:
        version = registry.resolve(str(version_or_alias))
    except RegistryError as exc:
        raise DeviceError(str(exc)) from None
    model = model_for_device(registry, version)
    sha = hash_file(model)
    inputs, outputs = describe_onnx(model)
    description = {
        "version": version.name,
        "aliases": list(version.aliases),
        **({"deployed_as": deployed_as} if deployed_as else {}),
        "model": {"file": model.name, "sha256": sha, "size": model.stat().st_size},
        "runtime": runtime,
        "inputs": inputs,
        "outputs": outputs,
        "preprocessing": preprocessing_of(version.info, project_dir),
        "metrics": version.metrics,
        "created": now_iso(),
    }
    folder = registry.store.folder / DEPLOYMENTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    yaml_name = f"deployment_{version.name}.yaml"
    text = (f"# Deployment of model version {version.name}: what an app needs to run it.\n"
            + yaml.safe_dump(description, sort_keys=False, allow_unicode=True, width=100))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(yaml_name, text)
        archive.write(model, model.name)
    try:
        write_text_atomically(folder / yaml_name, text)
        write_atomically(folder / f"nn_model_{version.name}.zip", packed.getvalue())
    except OSError as exc:
        raise DeviceError(f"could not write the deployment bundle into {folder}: "
                          f"{exc.strerror or exc}; free some space (or fix its permissions) and "
                          "deploy again") from None
    return Bundle(version.name, model, sha, folder / yaml_name,
                  folder / f"nn_model_{version.name}.zip", description)


# --- Deploying -------------------------------------------------------------------------------

def _targets(devices: Iterable[str] | None, paired: PairedDevices) -> list:
    """The DeviceTargets to deploy to: those ``devices`` name, else every paired device."""
    from workbench.device.link import DeviceTarget, resolve

    if devices is None:
        known = paired.list()
        if not known:
            raise DeviceError("no device is paired: pair one with `workbench device pair "
                              "HOST:PORT --code NNNNNN`, or name the devices (--device)")
        return [DeviceTarget(d.host, d.port, d.name, "paired", d) for d in known]
    names = [str(name) for name in devices]
    if not names:
        raise DeviceError("name at least one device to deploy to")
    return [resolve(name, paired) for name in names]


def _deploy_one(target, paired: PairedDevices, model: Path, sha: str, slot: str, runtime: str,
                timeout: float, cancel: CancelToken | None,
                say: Callable[[str], None]) -> DeviceOutcome:
    from workbench.device.link import DeviceLink
    from workbench_device.client import DeviceClient

    started = time.monotonic()
    outcome = DeviceOutcome(target.label, target.address, UNREACHABLE)
    link = DeviceLink(target, paired, runtime=runtime, timeout=timeout)
    timed_out = threading.Event()

    def give_up() -> None:
        timed_out.set()
        link.abort()

    watchdog = threading.Timer(timeout, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        link.connect()
        outcome.device = link.name
        result = link.push(model, model.name, cancel=cancel)
        outcome.pushed_bytes = result.sent
        say(f"{link.name}: switching slot {slot}…")
        reply = link._call(f"deploy {model.name} to slot {slot}", DeviceClient.deploy_slot,
                           slot, sha, runtime=runtime, name=model.name, timeout=timeout)
        outcome.state = SWITCHED
        outcome.load_ms = float(reply.get("load_ms") or 0.0)
        outcome.warm_ms = float(reply.get("warm_ms") or 0.0)
        outcome.previous = reply.get("previous")
        worst = reply.get("worst_request_ms")
        outcome.worst_request_ms = float(worst) if isinstance(worst, (int, float)) else None
    except Cancelled:
        if timed_out.is_set():
            outcome.reason = (f"no answer within {timeout:g} s; the slot keeps whatever it served "
                              "unless the device finishes the switch on its own")
        else:
            outcome.state, outcome.reason = FAILED, CANCELLED_BEFORE_SWITCH
    except (DeviceUnreachable, ConnectionLost) as exc:
        outcome.reason = str(exc)
    except DeviceError as exc:
        outcome.state, outcome.reason = FAILED, str(exc)
    except Exception as exc:  # a device's fault must not stop the others' deploys
        log.exception("deploying to %s failed", target.address)
        outcome.state, outcome.reason = FAILED, f"{type(exc).__name__}: {exc}"
    finally:
        watchdog.cancel()
        link.close()
    outcome.seconds = round(time.monotonic() - started, 3)
    return outcome


def deploy_to_devices(project_dir: Path | str, version_or_alias: str,
                      devices: Iterable[str] | None = None, slot: str = DEFAULT_SLOT,
                      progress: Callable[[Progress], None] | None = None,
                      cancel: CancelToken | None = None, *,
                      timeout: float = DEFAULT_DEVICE_TIMEOUT_S,
                      paired: PairedDevices | None = None,
                      runtime: str = DEFAULT_RUNTIME, alias: str | None = None) -> DeployReport:
    """Build the version's bundle, then push and switch ``slot`` to its model on every device
    ``devices`` names (every paired device when None), in parallel; see the module. The log
    records ``alias`` (default: ``version_or_alias`` when it is an alias) as what the slots
    serve, so that a rollback of that alias finds them."""
    validate_slot(slot)
    paired = paired or PairedDevices()
    if alias is None:
        alias = "" if str(version_or_alias).strip().isdigit() else str(version_or_alias)
    bundle = build_bundle(project_dir, version_or_alias, runtime, deployed_as=alias)
    targets = _targets(devices, paired)
    report = DeployReport(bundle.version, slot, str(bundle.model), bundle.sha256,
                          str(bundle.zip_path.parent), now_iso(), alias=alias)
    _switch_all(report, targets, paired, bundle.model, runtime, timeout, progress, cancel)
    _record(bundle.zip_path.parent, report)
    return report


def stage_to_devices(project_dir: Path | str, model: Path | str, devices: Iterable[str],
                     slot: str, run_id: str, epoch: int,
                     progress: Callable[[Progress], None] | None = None,
                     cancel: CancelToken | None = None, *,
                     timeout: float = DEFAULT_DEVICE_TIMEOUT_S,
                     paired: PairedDevices | None = None,
                     runtime: str = DEFAULT_RUNTIME) -> DeployReport:
    """Push ``model`` (a checkpoint of run ``run_id`` after ``epoch`` epochs, converted) to
    ``slot`` of every device ``devices`` names, in parallel, as ``deploy_to_devices`` does, but
    with no bundle and no alias: the deploy log records it as a staging push of that run and
    epoch, with no version."""
    from workbench.platform.file_hashes import hash_file

    validate_slot(slot)
    model = Path(model)
    if not model.is_file():
        raise DeviceError(f"{model} does not exist: nothing to push to slot {slot}")
    paired = paired or PairedDevices()
    targets = _targets(list(devices), paired)
    report = DeployReport("", slot, str(model), hash_file(model), "", now_iso(),
                          staging={"run": str(run_id), "epoch": int(epoch)})
    _switch_all(report, targets, paired, model, runtime, timeout, progress, cancel)
    _record(deployments_folder(Path(project_dir)), report)
    return report


def validate_slot(slot: str) -> None:
    """DeviceError unless ``slot`` can name a device's slot (as the agent checks it)."""
    from workbench_device.protocol import ProtocolError
    from workbench_device.slots import check_slot_name

    try:
        check_slot_name(slot)
    except ProtocolError as exc:
        raise DeviceError(f"{slot!r} cannot name a slot: {exc.message}") from None


def _switch_all(report: DeployReport, targets: list, paired: PairedDevices, model: Path,
                runtime: str, timeout: float, progress: Callable[[Progress], None] | None,
                cancel: CancelToken | None) -> None:
    """Push ``model`` to every target and switch ``report.slot`` to it, in parallel; fills in
    the report's outcomes and seconds."""
    # This computer's key and id, read once here: the first read may create or unlock them,
    # which the device threads must not do at the same time.
    paired.keys.check()
    paired.keys.identity()
    paired.host_id()
    lock = threading.Lock()
    finished = 0

    def say(text: str) -> None:
        if progress is not None:
            with lock:
                progress(Progress(text, finished / len(targets)))

    def one(target) -> DeviceOutcome:
        nonlocal finished
        outcome = _deploy_one(target, paired, model, report.sha256, report.slot, runtime, timeout,
                              cancel, say)
        with lock:
            finished += 1
        say(f"{outcome.device}: {outcome.state}")
        return outcome

    started = time.monotonic()
    say(f"Deploying {model.name} to {len(targets)} device(s)…")
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(targets)),
                            thread_name_prefix="deploy") as pool:
        report.outcomes = list(pool.map(one, targets))
    report.seconds = round(time.monotonic() - started, 3)


def _record(folder: Path, report: DeployReport) -> None:
    """Add the deploy to ``deployments.jsonl`` (one JSON object a line; a failed write is
    logged, never a failed deploy: the devices switched already)."""
    line = {"time": report.time, "version": report.version, "alias": report.alias,
            "slot": report.slot, "model": Path(report.model).name, "sha256": report.sha256, "seconds": report.seconds,
            **({"staging": report.staging} if report.staging else {}),
            "devices": [{"device": o.device, "address": o.address, "state": o.state,
                         "reason": o.reason, "load_ms": o.load_ms, "warm_ms": o.warm_ms}
                        for o in report.outcomes]}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / DEPLOYMENT_LOG, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    except OSError as exc:
        log.warning("the deploy was not recorded in %s: %s", folder / DEPLOYMENT_LOG, exc)


def list_slots(target: str, paired: PairedDevices | None = None) -> tuple[str, str, list[dict]]:
    """The device's name, address and slots (slot, model, name, since, served, errors…)."""
    from workbench.device.link import DeviceLink
    from workbench_device.client import DeviceClient

    with DeviceLink.open(target, devices=paired or PairedDevices()) as link:
        if link.protocol < 4:
            raise DeviceError(f"{link.name} at {link.address} runs an agent of protocol "
                              f"{link.protocol}, which has no deployment slots: update "
                              "workbench-device-agent on it")
        slots = link._call("list its slots", DeviceClient.list_slots)
        return link.name, link.address, slots


__all__ = ["Bundle", "DeployReport", "DeviceOutcome", "PairedDevice", "build_bundle",
           "deploy_to_devices", "describe_onnx", "list_slots", "model_for_device",
           "stage_to_devices"]
