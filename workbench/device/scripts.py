"""Running a project's script on a device (``workbench device script``, Run on Device): the
script goes to the session's folder on the device at its path in the project, runs there with
the device's Python, and what it prints comes back while it runs.

The script gets ``WORKBENCH_SESSION_DIR`` (its working folder on the device) and, with a model,
``WORKBENCH_MODEL`` (the model's file there). Only the script itself is sent: what else it
reads must be on the device already or come through the model.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from workbench.device.device_debug import device_path
from workbench.device.errors import DeviceError
from workbench.tasks import CancelToken, Progress

DEFAULT_TIMEOUT_S = 600.0
# The window command (no menu, not in the palette) through which another capability asks the
# Devices dock for a script and a device, as Run on Device chooses them: a ScriptTarget or None.
CHOOSE_SCRIPT_TARGET = "device.chooseScriptTarget"
MAX_SCRIPT_BYTES = 16 * 1024 * 1024


@dataclass
class ScriptTarget:
    """A script chosen to run (or be debugged) on a device, and the device: what another
    capability needs to start it there."""

    script: Path  # on this computer
    text: str | None  # its unsaved text in the editor, None when saved
    address: str  # the device's HOST:PORT
    device: str  # the device's name
    devices: object = None  # the paired devices (a PairedDevices) to open the link with


@dataclass
class ScriptRun:
    """How a script ran on a device."""

    device: str
    address: str
    script: str  # on this computer
    path: str  # in the session's folder on the device
    exit_code: int | None  # None: stopped at its time-out
    timed_out: bool
    seconds: float
    result: object = None
    result_error: str = ""
    stdout: str = ""  # the ends the device kept (16 KiB each)
    stderr: str = ""

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line: how it ended, how long it took, its result."""
        name = Path(self.script).name
        if self.timed_out:
            ended = f"was stopped after {self.seconds:.1f} s (its time-out)"
        elif self.exit_code is not None and self.exit_code < 0:
            ended = f"was killed by signal {-self.exit_code} after {self.seconds:.2f} s"
        else:
            ended = f"exited with {self.exit_code} in {self.seconds:.2f} s"
        line = f"{name} on {self.device} {ended}"
        if self.result is not None:
            import json

            text = json.dumps(self.result)
            line += f"; result: {text if len(text) <= 200 else text[:197] + '…'}"
        elif self.result_error:
            line += f"; no result: {self.result_error}"
        return line

    @property
    def exit_status(self) -> int:
        """The status a command that ran it ends with: the script's own, 124 when it ran out of
        time (as timeout(1) says), 128 + N when signal N killed it."""
        if self.timed_out:
            return 124
        if self.exit_code is None:
            return 1
        return 128 - self.exit_code if self.exit_code < 0 else min(self.exit_code, 255)


def run_script_on_device(link, script: Path | str, project_root: Path | str | None = None,
                         model: Path | str | None = None, text: str | None = None,
                         timeout_s: float = DEFAULT_TIMEOUT_S,
                         on_output: Callable[[str, str], None] | None = None,
                         progress: Callable[[Progress], None] | None = None,
                         cancel: CancelToken | None = None) -> ScriptRun:
    """Send ``script`` (or ``text``, the editor's unsaved text of it) over ``link`` (a
    DeviceLink) and run it there; ``on_output(stream, text)`` gets what it prints as it prints
    it. ``model`` (a model file, pushed and loaded first, or a sha256 on the device) becomes its
    WORKBENCH_MODEL. Cancelling stops the script on the device (Cancelled is raised)."""
    script = Path(script)
    if text is not None:
        data = text.encode("utf-8")
    else:
        if not script.is_file():
            raise DeviceError(f"{script} does not exist: give the script to run")
        if script.stat().st_size > MAX_SCRIPT_BYTES:
            raise DeviceError(f"{script} is over {MAX_SCRIPT_BYTES >> 20} MiB: is it a script?")
        data = script.read_bytes()
    root = Path(project_root) if project_root is not None else None
    path = device_path(script, root)
    watcher = _abort_on_cancel(link, cancel)
    try:
        loaded = None
        if model is not None:
            loaded = link.load(model, progress=progress, cancel=cancel)
        if progress is not None:
            progress(Progress(f"Running {script.name} on {link.name}…", None))
        link.put_file(path, data)
        if cancel is not None:
            cancel.raise_if_cancelled()
        reply = link.run_script(path, loaded, timeout_s, on_output)
    finally:
        watcher.set()
    return ScriptRun(device=link.known_name or link.name, address=link.address, script=str(script),
                     path=path, exit_code=reply.get("exit_code"),
                     timed_out=bool(reply.get("timed_out")), seconds=float(reply.get("seconds") or 0),
                     result=reply.get("result"), result_error=str(reply.get("result_error") or ""),
                     stdout=str(reply.get("stdout") or ""), stderr=str(reply.get("stderr") or ""))


def _abort_on_cancel(link, cancel: CancelToken | None) -> threading.Event:
    """Abort ``link`` (the call under way raises Cancelled; the device stops the script of a
    host that hung up) once ``cancel`` is set; setting the returned event ends the watch."""
    done = threading.Event()
    if cancel is None:
        return done

    def watch() -> None:
        while not done.wait(0.1):
            if cancel.cancelled:
                link.abort()
                return

    threading.Thread(target=watch, name="wb-device-script-cancel", daemon=True).start()
    return done
