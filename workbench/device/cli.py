"""``workbench device …``: find, pair with and use devices from a terminal.

The commands call the same services as the Devices panel (discovery, PairedDevices,
DeviceLink, verify_model, serve_local), and the CLI kit (workbench.clikit) for the rest:
errors are DeviceError, one line and exit status 1 (with ``--json``, stdout gets
``{"error": …, "code": …}`` too). Progress goes to stderr, results to stdout. Ctrl+C cancels
(exit status 130); a cancelled push resumes where it stopped the next time. A notice of the
services (no OS keyring: the device keys went to a file instead) is one plain line on stderr,
said once.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import sys
from datetime import datetime
from pathlib import Path

import click

from workbench.clikit import CANCELLED_STATUS, CtrlC, HelpWhenBareGroup, ProgressLine, emit, reported_errors
from workbench.tasks import Progress

_CONTEXT = {"help_option_names": ["-h", "--help"]}
RUNTIMES = ("onnxruntime", "mnn")

DEVICE_HELP = ("HOST:PORT (what the agent prints), a paired or announced name, `local` (the "
               "agent serve-local runs here) or `usb[:SERIAL]` (a phone on a cable, through adb)")


@click.group("device", cls=HelpWhenBareGroup, context_settings=_CONTEXT)
def device_group() -> None:
    """Find, pair with and use devices: push models, run, benchmark and verify them against
    this computer.

    A DEVICE is named by HOST:PORT (what its agent prints: `Listening on 127.0.0.1:7300`), by
    its name (a paired device's, or one a device announces on the LAN), `local` for the agent
    `workbench device serve-local` runs on this computer, or `usb` / `usb:SERIAL` for a phone
    on a USB cable (through adb). Pair once with the code the agent prints; after that no code
    is needed. Add --json to any command for JSON on stdout.
    """


# --- plumbing ---

_said: set[str] = set()


def _say_once(message: str) -> None:
    """A notice for the user: one plain line on stderr, and never the same one twice."""
    line = " ".join(str(message).split())
    if line and line not in _said:
        _said.add(line)
        click.echo(line, err=True)


class _WarningsOnce(logging.Handler):
    """The warnings Workbench's modules log, said once each. The CLI sets up no logging, so
    Python would print each on its own; the keyring fallback is logged twice (by the secret
    store and by the device keys) besides reaching ``on_notice``, and would show three times."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _say_once(record.getMessage())
        except Exception:
            self.handleError(record)


def _hear_warnings() -> None:
    logger = logging.getLogger("workbench")
    if not any(isinstance(h, _WarningsOnce) for h in logger.handlers):
        logger.addHandler(_WarningsOnce())


def _devices():
    """The paired devices, their notices said on stderr (once)."""
    from workbench.device.paired import PairedDevices

    return PairedDevices(on_notice=_say_once)


def _command(function):
    """A device command, its errors and Ctrl+C as the CLI kit has them (an error's code in its
    JSON too). A command with a ``cancel`` parameter gets the token the first Ctrl+C cancels,
    and a second Ctrl+C stops it at once; any other stops at the first (a link's work may be
    dropped at any point: a push cut off resumes)."""
    takes_token = "cancel" in inspect.signature(function).parameters

    @functools.wraps(function)
    def run(*args, **kwargs):
        _hear_warnings()
        with reported_errors(kwargs.get("as_json", False), error_fields=_error_code), \
                CtrlC(interrupt_at=2 if takes_token else 1) as ctrl_c:
            if takes_token:
                kwargs["cancel"] = ctrl_c.token
            return function(*args, **kwargs)

    return run


def _error_code(error: BaseException) -> dict:
    return {"code": getattr(error, "code", None) or None}


def _json_option(function):
    return click.option("--json", "as_json", is_flag=True,
                        help="Print the result as JSON on stdout (progress stays on stderr).")(function)


def _runtime_options(function):
    function = click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True,
                            help="Threads the runtime uses on the device.")(function)
    return click.option("--runtime", type=click.Choice(RUNTIMES), default="onnxruntime",
                        show_default=True, help="The runtime on the device.")(function)


def _open(device: str, runtime: str = "onnxruntime", threads: int = 1):
    from workbench.device.link import DeviceLink

    return DeviceLink.open(device, devices=_devices(), runtime=runtime, threads=threads)


def _when(iso: str) -> str:
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def _model_path(model: Path, runtime: str | None = None) -> Path:
    """MODEL as an absolute path; with ``runtime``, also checked to hold a model that runtime
    takes (any runtime's, for "any"), so that a text file or a truncated model is refused here,
    before it is sent, rather than by the device after the push."""
    from workbench.device.errors import DeviceError

    path = model.expanduser().absolute()
    if not path.is_file():
        raise DeviceError(f"{path} does not exist: give the model file (.onnx, or .mnn with "
                          "--runtime mnn)")
    if runtime is not None:
        from workbench.device.link import check_model_file

        check_model_file(path, runtime)
    return path


# --- list ---

@device_group.command("list", context_settings=_CONTEXT,
                      short_help="List paired, local and LAN devices.")
@click.option("--browse/--no-browse", default=True, show_default=True,
              help="Look for devices that announce themselves on the LAN (mDNS).")
@click.option("--seconds", type=click.FloatRange(0.1, 60), default=2.0, show_default=True,
              help="How long to look on the LAN.")
@click.option("--usb", is_flag=True, help="Also list phones on USB cables (adb devices).")
@_json_option
@_command
def list_command(browse: bool, seconds: float, usb: bool, as_json: bool) -> None:
    """List paired devices (online or not), this computer's agent, and devices seen on the LAN."""
    from workbench.device.discovery import device_overview

    devices = _devices()
    overview = device_overview(devices, browse_lan=browse, seconds=seconds, usb=usb)
    if as_json:
        emit(_with_pins(overview, devices), True, "")
        return
    rows = [[d["name"], d["address"], "yes" if d["paired"] else "no", d["status"],
             _when(d.get("last_seen") or ""), d.get("note") or ""] for d in overview["devices"]]
    lines = []
    if rows:
        from workbench.device.verify import text_table

        lines += text_table(["NAME", "ADDRESS", "PAIRED", "STATUS", "LAST SEEN", ""], rows)
    else:
        lines.append("No devices yet. Start the agent on a device (`workbench-device-agent`) and "
                     "pair with the code it prints (`workbench device pair HOST:PORT --code "
                     "NNNNNN`), or use this computer: `workbench device serve-local`.")
    if usb:
        usb_rows = overview.get("usb") or []
        lines.append("")
        lines += ([f"usb:{u['serial']}  {u['state']}  {u['model']}".rstrip() for u in usb_rows]
                  or ["No phone is attached over USB."])
    for note in overview.get("notes") or []:
        lines.append(f"note: {note}")
    click.echo("\n".join(lines))


def _with_pins(overview: dict, devices) -> dict:
    """The listing with each paired device's pinned certificate (``pinned_fingerprint``, hex);
    a pin that cannot be read is left out (the listing's notes say why)."""
    from workbench.device.errors import DeviceError

    for row in overview["devices"]:
        if row.get("paired"):
            try:
                row["pinned_fingerprint"] = devices.pin(row["device_id"])
            except DeviceError:
                row["pinned_fingerprint"] = None
    return overview


# --- pair / forget ---

@device_group.command("pair", context_settings=_CONTEXT,
                      short_help='Pair with a device using the code its agent prints.')
@click.argument("device")
@click.option("--code", help="The 6-digit pairing code the agent prints.")
@_json_option
@_command
def pair_command(device: str, code: str | None, as_json: bool) -> None:
    """Pair with DEVICE using the code its agent prints (once per device).

    DEVICE is HOST:PORT, or a name the device announces on the LAN. The code confirms, over
    TLS, that both ends see each other's certificate; the device's certificate is then pinned
    (compare its fingerprint with the `Certificate:` line the agent prints). Later commands
    need no code, and a device whose certificate changes is refused.
    """
    from workbench.device.errors import DeviceError
    from workbench.device.link import pair_device
    from workbench_device.tls import short_fingerprint

    if not code:
        if not sys.stdin.isatty():
            raise DeviceError("give the code the agent prints with --code NNNNNN")
        code = click.prompt("Pairing code (the agent prints it)", err=True)
    devices = _devices()
    paired = pair_device(device, code, devices)
    pin = devices.pin(paired.device_id) or ""
    where = devices.keys.where()
    emit(paired.to_json() | {"address": paired.address, "cert_fingerprint": pin,
                             "keys": where}, as_json,
          f"Paired with {paired.name} at {paired.address} (device {paired.device_id[:12]}). Its "
          f"certificate {short_fingerprint(pin)} is pinned, kept in {where}.")


@device_group.command("forget", context_settings=_CONTEXT,
                      short_help='Forget a paired device and its pinned certificate.')
@click.argument("device")
@_json_option
@_command
def forget_command(device: str, as_json: bool) -> None:
    """Forget the paired DEVICE (its entry and its pinned certificate); pair again to use it."""
    from workbench.device.discovery import parse_address
    from workbench.device.errors import DeviceError

    devices = _devices()
    address = parse_address(device)
    if address is not None:
        found = [d for d in devices.list() if (d.host, d.port) == address]
    elif device.lower() in ("local", "this-computer"):
        found = [d for d in devices.list() if d.local]
    else:
        found = devices.find(device)
    if not found:
        raise DeviceError(f"no paired device is called {device!r}; see `workbench device list`")
    if len(found) > 1:
        raise DeviceError(f"several paired devices are called {device!r}; name one by HOST:PORT "
                          f"({', '.join(d.address for d in found)})")
    devices.forget(found[0].device_id)
    emit({"forgotten": found[0].to_json()}, as_json,
          f"Forgot {found[0].name} at {found[0].address} and its pinned certificate; "
          "pair again to use it.")


# --- info ---

@device_group.command("info", context_settings=_CONTEXT,
                      short_help="Show a device's model, OS, CPU, memory, runtimes and certificate.")
@click.argument("device")
@_json_option
@_command
def info_command(device: str, as_json: bool) -> None:
    """Show what DEVICE is: model, OS, CPU, memory, runtimes, versions, and the fingerprint
    of its certificate (the one pinned when it was paired)."""
    from workbench.device.units import memory_text
    from workbench_device.tls import short_fingerprint

    with _open(device) as link:
        info = link.info()
    cpu = info.get("cpu") or {}
    memory = info.get("memory_bytes")
    runtimes = ", ".join(f"{r.get('name')} {r.get('version')}" for r in info.get("runtimes") or [])
    pin = info.get("cert_fingerprint")
    lines = [f"{info.get('name')} at {info['address']}",
             f"  device id   {info.get('device_id')}",
             f"  model       {info.get('model') or '-'}",
             f"  system      {info.get('os') or '-'}",
             f"  CPU         {cpu.get('cores', '?')} cores, {cpu.get('arch') or '?'}",
             f"  memory      {memory_text(memory)}" if memory else "  memory      -",
             f"  runtimes    {runtimes or '-'}",
             f"  python      {info.get('python') or '-'}",
             f"  agent       {info.get('agent_version') or '-'}",
             f"  sessions    {info.get('sessions', 0)} open",
             f"  certificate {short_fingerprint(pin) if pin else '-'}",
             f"  debugging   {_debugging(info)}"]
    emit(info, as_json, "\n".join(lines))


def _debugging(info: dict) -> str:
    debug = info.get("debug")
    if isinstance(debug, dict) and debug.get("debugpy"):
        return f"debugpy {debug['debugpy']}"
    return "no (install debugpy on the device to debug scripts there)"


# --- push ---

@device_group.command("push", context_settings=_CONTEXT,
                      short_help='Send a model to a device (nothing when it has it).')
@click.argument("device")
@click.argument("model", type=click.Path(path_type=Path))
@_json_option
@_command
def push_command(device: str, model: Path, as_json: bool, cancel=None) -> None:
    """Send MODEL to DEVICE (nothing is sent when the device has it; a push cut off resumes)."""
    from workbench.device.link import size_text

    path = _model_path(model, "any")
    status = ProgressLine()
    try:
        with _open(device) as link:
            result = link.push(path, progress=status, cancel=cancel)
            name, address = link.name, link.address
    finally:
        status.close()
    data = {"device": name, "address": address, "model": str(path), "sha256": result.sha256,
            "size": result.size, "sent": result.sent, "resumed_from": result.resumed_from,
            "skipped": result.skipped}
    if result.skipped:
        text = f"{name} already has {path.name} (sha256 {result.sha256[:12]}…): nothing sent."
    else:
        resumed = f", resumed at {size_text(result.resumed_from)}" if result.resumed_from else ""
        text = (f"Pushed {path.name} ({size_text(result.size)}, sha256 {result.sha256[:12]}) to "
                f"{name} at {address}: sent {size_text(result.sent)}{resumed}.")
    emit(data, as_json, text)


# --- run ---

def _inputs_options(function):
    function = click.option("--split", type=click.Choice(("test", "val", "train")), default="test",
                            show_default=True, help="The dataset split of the project.")(function)
    function = click.option("--project", type=click.Path(path_type=Path, file_okay=False),
                            help="Take the inputs from this project's dataset (default: the "
                                 "project holding the model).")(function)
    return click.option("--npz", type=click.Path(path_type=Path, dir_okay=False),
                        help="Take the inputs from a .npz file (x: inputs, y: labels).")(function)


@device_group.command("run", context_settings=_CONTEXT,
                      short_help='Run a model on a device on sample inputs.')
@click.argument("device")
@click.argument("model", type=click.Path(path_type=Path))
@_inputs_options
@click.option("--samples", type=click.IntRange(1), default=8, show_default=True,
              help="How many samples to run.")
@click.option("--save", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the device's outputs to this .npz file.")
@_runtime_options
@_json_option
@_command
def run_command(device: str, model: Path, npz: Path | None, project: Path | None, split: str,
                samples: int, save: Path | None, runtime: str, threads: int,
                as_json: bool, cancel=None) -> None:
    """Run MODEL on DEVICE on sample inputs (the project's dataset, a .npz, or random inputs
    of the model's shape) and show its outputs."""
    import numpy as np

    from workbench.device.verify import inputs_for

    path = _model_path(model, runtime)
    status = ProgressLine()
    try:
        with _open(device, runtime, threads) as link:
            loaded = link.load(path, progress=status, cancel=cancel)
            first = loaded.inputs[0] if loaded.inputs else {"name": "input", "shape": None}
            status(Progress(f"Reading {samples} sample inputs…"))
            data = inputs_for(path, npz, project, split, samples, first.get("shape"))
            dtype = first.get("dtype") if first.get("dtype") in ("float16", "float32", "float64") else "float32"
            fixed = first.get("shape")[0] if first.get("shape") else None
            step = fixed if isinstance(fixed, int) and fixed > 0 else len(data)
            parts: dict[str, list] = {}
            run_ms = 0.0
            for start in range(0, len(data), step):
                cancel.raise_if_cancelled()
                status(Progress(f"Running on {link.name}: {start} of {len(data)} samples"))
                chunk = np.ascontiguousarray(data.x[start:start + step], dtype=dtype)
                if len(chunk) < step:
                    break  # a model of fixed batch: the samples that fill whole batches
                outputs, ms = link.run(loaded, {first["name"]: chunk})
                run_ms += ms
                for name, value in outputs.items():
                    parts.setdefault(name, []).append(np.asarray(value))
            name, address = link.name, link.address
    finally:
        status.close()
    outputs = {k: np.concatenate(v) for k, v in parts.items()}
    if save is not None:
        np.savez(save.expanduser(), **outputs)
    done = len(next(iter(outputs.values()))) if outputs else 0
    labels = None if data.y is None else [int(v) for v in data.y[:done]]
    described = []
    for key, value in outputs.items():
        entry = {"name": key, "shape": list(value.shape), "dtype": str(value.dtype)}
        if value.ndim == 2 and value.shape[1] > 1:
            entry["top1"] = [int(v) for v in value.argmax(axis=1)]
        described.append(entry)
    data_json = {"device": name, "address": address, "model": str(path), "sha256": loaded.sha256,
                 "runtime": loaded.runtime, "samples": done, "source": data.source,
                 "run_ms": round(run_ms, 4), "outputs": described, "labels": labels,
                 "saved": str(save) if save else None}
    lines = [f"Ran {path.name} on {name} at {address} ({loaded.runtime}): {done} samples from "
             f"{data.source} in {run_ms:.3f} ms on the device"]
    for entry in described:
        lines.append(f"  {entry['name']}: {tuple(entry['shape'])} {entry['dtype']}")
        if "top1" in entry:
            lines.append(f"    top-1:  {' '.join(str(v) for v in entry['top1'])}")
            if labels is not None:
                lines.append(f"    labels: {' '.join(str(v) for v in labels)}")
    if save is not None:
        lines.append(f"Wrote the outputs to {save}")
    emit(data_json, as_json, "\n".join(lines))


# --- bench ---

@device_group.command("bench", context_settings=_CONTEXT,
                      short_help='Benchmark a model on a device: p50 / p90 / p99.')
@click.argument("device")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--runs", type=click.IntRange(1, 100000), default=50, show_default=True,
              help="Timed runs.")
@click.option("--warmup", type=click.IntRange(0, 10000), default=5, show_default=True,
              help="Untimed runs first.")
@click.option("--batch", type=click.IntRange(1), default=1, show_default=True,
              help="Batch size of the random inputs.")
@_runtime_options
@_json_option
@_command
def bench_command(device: str, model: Path, runs: int, warmup: int, batch: int, runtime: str,
                  threads: int, as_json: bool) -> None:
    """Benchmark MODEL on DEVICE: init time, latency p50 / p90 / p99, peak memory."""
    from workbench.device.verify import latency_table

    path = _model_path(model, runtime)
    status = ProgressLine()
    try:
        with _open(device, runtime, threads) as link:
            loaded = link.load(path, progress=status)
            status(Progress(f"Benchmarking {path.name} on {link.name}: {warmup} warm-up runs, then "
                            f"{runs} timed runs of batch {batch}…"))
            figures = link.bench(loaded, warmup=warmup, runs=runs, batch=batch)
            name, address = link.name, link.address
    finally:
        status.close()
    data = {"device": name, "address": address, "model": str(path), "sha256": loaded.sha256,
            "runtime": loaded.runtime, "threads": threads, **figures}
    text = [f"{path.name} on {name} at {address} ({loaded.runtime}, {threads} thread"
            f"{'s' if threads > 1 else ''})"] + latency_table({"device": figures})
    emit(data, as_json, "\n".join(text))


# --- verify / history ---

@device_group.command("verify", context_settings=_CONTEXT,
                      short_help='Verify a model on a device against this computer.')
@click.argument("device")
@click.argument("model", type=click.Path(path_type=Path))
@_inputs_options
@click.option("--samples", type=click.IntRange(1), default=256, show_default=True,
              help="How many samples to compare.")
@click.option("--atol", type=click.FloatRange(0), default=1e-3, show_default=True,
              help="The largest absolute difference of an output that passes.")
@click.option("--min-agreement", type=click.FloatRange(0, 100), default=99.0, show_default=True,
              help="The top-1 agreement (percent) a classifier's output needs to pass.")
@click.option("--runs", type=click.IntRange(0, 100000), default=50, show_default=True,
              help="Benchmark runs for the latency table (0: none).")
@click.option("--record/--no-record", default=True, show_default=True,
              help="Add the result to the model's verification history.")
@_runtime_options
@_json_option
@_command
def verify_command(device: str, model: Path, npz: Path | None, project: Path | None, split: str,
                   samples: int, atol: float, min_agreement: float, runs: int, record: bool,
                   runtime: str, threads: int, as_json: bool, cancel=None) -> None:
    """Verify MODEL on DEVICE against this computer: the same inputs through both, per output
    the max abs diff and top-1 agreement, and the latency table. Exit status 1 when it fails."""
    from workbench.device.verify import verify_model

    path = _model_path(model, "any")
    status = ProgressLine()
    try:
        with _open(device, runtime, threads) as link:
            result = verify_model(link, path, npz=npz, project=project, split=split,
                                  samples=samples, atol=atol, min_agreement=min_agreement,
                                  bench_runs=runs, threads=threads, record=record,
                                  progress=status, cancel=cancel)
    finally:
        status.close()
    emit(result.to_json(), as_json, result.to_text())
    if not result.passed:
        click.echo(f"workbench: {path.name} on {result.device_name} differs from this computer "
                   "beyond the tolerances", err=True)
        raise SystemExit(1)


@device_group.command("history", context_settings=_CONTEXT,
                      short_help="Show the verifications of a model's version.")
@click.argument("model", type=click.Path(path_type=Path))
@click.option("--project", type=click.Path(path_type=Path, file_okay=False),
              help="The project whose history to read (default: the one holding the model).")
@click.option("--all-versions", is_flag=True,
              help="Every verification recorded, not only of this version of the model.")
@_json_option
@_command
def history_command(model: Path, project: Path | None, all_versions: bool, as_json: bool) -> None:
    """Show the verifications of MODEL's version (by sha256), oldest first."""
    from workbench.device.verify import history_for, text_table
    from workbench_device.client import sha256_of

    path = _model_path(model)
    history = history_for(path, project)
    entries = history.entries(None if all_versions else sha256_of(path))
    if as_json:
        emit([e.to_json() for e in entries], True, "")
        return
    if not entries:
        click.echo(f"{path.name} has not been verified on a device yet (history: {history.path}).")
        return
    rows = []
    for e in entries:
        worst = max((o.max_abs_diff for o in e.outputs if o.max_abs_diff is not None), default=0.0)
        agreements = [o.top1_agreement for o in e.outputs if o.top1_agreement is not None]
        device_p50 = (e.latency.get("device") or {}).get("p50_ms")
        rows.append([_when(e.time), e.device_name, e.runtime, e.sha256[:12],
                     "PASS" if e.passed else "FAIL", f"{worst:.3g}",
                     f"{min(agreements):.1f} %" if agreements else "-",
                     "-" if device_p50 is None else f"{device_p50:.3f}"])
    click.echo("\n".join(text_table(["WHEN", "DEVICE", "RUNTIME", "SHA256", "RESULT", "MAX DIFF",
                                 "TOP-1", "P50 MS"], rows)))


# --- serve-local ---

@device_group.command("serve-local", context_settings=_CONTEXT,
                      short_help='Run the agent on this computer as the device `local`.')
@click.option("--port", type=click.IntRange(0, 65535), default=7300, show_default=True,
              help="The port to listen on (a free one when it is taken; 0: any free one).")
@click.option("--name", help="The device's name (default: this computer's name, \"(local)\").")
@click.option("--stop", is_flag=True, help="Stop the local agent instead.")
@_json_option
@_command
def serve_local_command(port: int, name: str | None, stop: bool, as_json: bool) -> None:
    """Run the agent on this computer, in the background, as the device named `local`.

    It listens on loopback only, keeps its data in Workbench's data folder, and is paired with
    at once (this computer reads the code it prints). `--stop` ends it.
    """
    from workbench.device.serve_local import serve_local, stop_local

    if stop:
        stopped = stop_local()
        emit({"stopped": stopped.to_json() if stopped else None}, as_json,
              f"Stopped the local agent (pid {stopped.pid})." if stopped
              else "No local agent was running.")
        return
    agent = serve_local(port=port, name=name, devices=_devices())
    if agent.started:
        text = f"Started the local agent (pid {agent.pid}) at {agent.address}"
    else:
        text = f"The local agent runs already (pid {agent.pid}) at {agent.address}"
    text += (", and paired with it" if agent.paired_now else "") + \
        ". Name it `local`: `workbench device info local`."
    emit(agent.to_json(), as_json, text)


# --- logs ---

@device_group.command("logs", context_settings=_CONTEXT,
                      short_help="Follow a device's log.")
@click.argument("device")
@click.option("--level", type=click.Choice(("debug", "info", "warning", "error")), default="info",
              show_default=True, help="The lowest level shown.")
@click.option("--count", type=click.IntRange(1), help="Stop after this many lines.")
@click.option("--seconds", type=click.FloatRange(0.1), help="Stop after this many seconds.")
@_json_option
@_command
def logs_command(device: str, level: str, count: int | None, seconds: float | None,
                 as_json: bool, cancel=None) -> None:
    """Follow DEVICE's log as it is written (until Ctrl+C, --count lines or --seconds)."""

    def show(line: dict) -> None:
        if as_json:
            click.echo(json.dumps(line))
        else:
            when = line.get("time")
            stamp = (datetime.fromtimestamp(when).strftime("%H:%M:%S")
                     if isinstance(when, (int, float)) else str(when or ""))
            click.echo(f"{stamp} {str(line.get('level', '')).upper():7} {line.get('message', '')}")
        sys.stdout.flush()

    with _open(device) as link:
        if not as_json:
            click.echo(f"Following the log of {link.name} at {link.address} (Ctrl+C stops)…",
                       err=True)
        link.follow_logs(show, level=level, count=count, seconds=seconds, cancel=cancel)
    if cancel.cancelled:  # Ctrl+C is the way to stop following: no message
        raise SystemExit(CANCELLED_STATUS)


# --- script ---

@device_group.command("script", context_settings=_CONTEXT,
                      short_help="Run a Python script on a device, its output streamed here.")
@click.argument("device")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--model", type=click.Path(path_type=Path),
              help="A model to push and load first; the script finds its file in "
                   "WORKBENCH_MODEL.")
@click.option("--runtime", type=click.Choice(RUNTIMES), default="onnxruntime", show_default=True,
              help="The runtime the model is loaded with on the device.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(0.1, 86400), default=600.0,
              show_default=True, help="Stop the script after this many seconds.")
@_json_option
@_command
def script_command(device: str, file: Path, model: Path | None, runtime: str, timeout_s: float,
                   as_json: bool, cancel=None) -> None:
    """Run FILE (a Python script) on DEVICE with the device's Python, in a folder of its own
    there, and show what it prints as it prints it. The command ends with the script's exit
    status (124 when it ran out of time); Ctrl+C stops it on the device.

    The script goes to the device at its path in the project holding it (the folder with
    workbench.toml above it), else under its own name; it finds that folder on the device in
    WORKBENCH_SESSION_DIR and, with --model, the model's file in WORKBENCH_MODEL. With --json
    its output goes to stderr and stdout gets the result (exit_code, seconds, result, the end
    of its output).
    """
    from workbench.device.scripts import run_script_on_device

    path = file.expanduser().absolute()
    model_path = _model_path(model, runtime) if model is not None else None
    out = sys.stderr if as_json else sys.stdout
    status = ProgressLine()

    def show(stream: str, text: str) -> None:
        status.close()  # the script's output is what is shown from here on
        target = sys.stderr if stream == "stderr" else out
        target.write(text)
        target.flush()

    try:
        with _open(device, runtime) as link:
            run = run_script_on_device(link, path, _project_of(path), model_path,
                                       timeout_s=timeout_s, on_output=show, progress=status,
                                       cancel=cancel)
    finally:
        status.close()
    if as_json:
        emit(run.to_json(), True, "")
    else:
        click.echo(run.summary(), err=True)
    if run.exit_status:
        raise SystemExit(run.exit_status)


def _project_of(path: Path) -> Path | None:
    """The project folder (the one with workbench.toml) holding ``path``, else None."""
    for folder in path.parents:
        if (folder / "workbench.toml").is_file():
            return folder
    return None
