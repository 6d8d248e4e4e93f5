"""The device side of one project window: the device services, called off the GUI thread.

The Devices panel and the commands talk to this adapter, never to the services directly. Every
call that can touch the network (listing and probing devices, pairing, the local agent, info,
push, verify, the log stream) runs through the window's task runner; its answer comes back on
the GUI thread as a signal. A failure becomes one line for the panel's banner; the traceback
goes to the log. A pairing made elsewhere (another window, the CLI) lists the devices again.

A device that stops (or starts) answering is noticed without a Refresh: every few seconds the
listed devices' addresses are tried with a plain TCP connect, which is cheap enough to run all
the time, unlike a full listing with its mDNS browse and handshakes.

Each call gets its own ``PairedDevices`` (a window lives long: a keyring unlocked, or keys moved
away, since the last call are seen by the next), all saying their notices through
``sig_notice``, each message once per window: on a machine with no OS keyring, where the device
keys went instead.
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal

log = logging.getLogger(__name__)

LIST_KEY = "device.list"
PAIR_KEY = "device.pair"
LOCAL_KEY = "device.serveLocal"
INFO_KEY = "device.info"
PUSH_KEY = "device.push"
VERIFY_KEY = "device.verify"
HISTORY_KEY = "device.history"
LOGS_KEY = "device.logs"
FORGET_KEY = "device.forget"
LIVENESS_KEY = "device.liveness"
SCRIPT_KEY = "device.script"
REDEPLOY_KEY = "device.redeployAlias"

LIVENESS_INTERVAL_MS = 5000
CONNECT_TIMEOUT_S = 0.5


def reachable(host: str, port: int, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether something accepts a TCP connection at ``host``:``port`` within ``timeout``."""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


# What a changed certificate's message (worded for a terminal) says to do in the panel.
PANEL_REPAIR_HINT = ("In this panel: right-click the device, Forget Device, then Pair… with the "
                     "code its agent prints.")


def one_line(exc: BaseException) -> str:
    """The message a user reads for ``exc``: its first line, never a traceback."""
    from workbench.device.errors import CertificateChanged, DeviceError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, CertificateChanged) and "workbench device forget" in text:
        return f"{text}. {PANEL_REPAIR_HINT}"
    if isinstance(exc, DeviceError):
        return text or "the device failed without saying why"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DeviceSession(QObject):
    """Devices of one project window: the list, pairing, and the calls on one device."""

    sig_devices_listed = Signal(object)
    """The device list (``device_overview``'s JSON: ``devices``, ``usb``, ``notes``)."""

    sig_paired = Signal(str)
    """A device was paired (its name)."""

    sig_forgotten = Signal(str)
    """A paired device and its pinned certificate were forgotten (its name)."""

    sig_info = Signal(object)
    """What a device says about itself (a dict with its address)."""

    sig_pushed = Signal(object)
    """A model was pushed (the link's PushResult)."""

    sig_verified = Signal(object)
    """A verification ended (its ``Verification``)."""

    sig_history = Signal(object)
    """The verification history of the model asked for (``list[Verification]``, oldest first)."""

    sig_log_line = Signal(object)
    """A line of the followed device's log (``{"time", "level", "message"}``)."""

    sig_script_output = Signal(str, str)
    """What the script running on a device wrote: (``"stdout"`` or ``"stderr"``, text)."""

    sig_script_finished = Signal(object)
    """The script run on a device ended (its ``ScriptRun``: exit code, seconds, result)."""

    sig_script_failed = Signal(str)
    """Running the script on a device failed or was stopped (the one-line reason)."""

    sig_alias_pushed = Signal(object)
    """An alias's version was pushed to the slots that served the version it left (its
    ``AliasPushOperation``, finished: each device switched, failed or was unreachable)."""

    sig_progress = Signal(str)
    """What the running call is doing ("Running 64 samples on Phone and here: 32 done")."""

    sig_device_status_changed = Signal(str, str)
    """A listed device stopped answering: (its HOST:PORT, its new status, "offline"). One that
    answers again is listed anew (``sig_devices_listed``), which tells online from a stranger."""

    sig_error = Signal(str)
    """A call failed; the one-line message a user can act on."""

    sig_notice = Signal(str)
    """Something the user should know that is no failure (no OS keyring is usable: the device
    keys are kept in a file instead); each message once."""

    sig_busy_changed = Signal(bool)
    """A call started or ended: True while any call of this session runs (sent at each start
    and end, so a widget can ask ``is_busy(key)`` for the call it cares about)."""

    _sig_streamed = Signal(int, object)  # (stream number, log line), from the log's worker
    _sig_noticed = Signal(str)  # a service's notice, from whichever thread said it

    def __init__(self, window, parent: QObject | None = None, browse_lan: bool = True):
        super().__init__(parent if parent is not None else window)
        self.window = window
        self.tasks = window.tasks
        self.project_dir = Path(window.project.root)
        self.browse_lan = browse_lan
        self.overview: dict = {"devices": [], "usb": [], "notes": []}
        self.listed = False
        self.last_verification = None
        self.closed = False
        """Whether ``close_down`` ran: no call starts after it, and a worker still ending stops
        reporting."""
        self._keys: set[str] = set()
        self._links_lock = threading.Lock()
        self._links: dict[str, object] = {}  # key -> the DeviceLink its call uses, for cancel
        self._log_stream = 0  # the number of the log stream followed now (0: none)
        self._sig_streamed.connect(self._streamed)
        self._notices_said: set[str] = set()
        self._sig_noticed.connect(self._noticed)
        from workbench.device.widgets.paired_watch import PairedDevicesWatcher

        self.paired_watch = PairedDevicesWatcher(self.paired_devices(), self)
        self.paired_watch.sig_paired_devices_changed.connect(self.refresh)
        # Whether each probed address accepted a connection last time: only a change is acted
        # on, so a device that answers but is listed offline (another agent on its port) does
        # not cause a listing every round.
        self._reachable: dict[str, bool] = {}
        self._alias_push_token = None  # the CancelToken of the alias push under way
        self._listing = 0  # counts listings, so a probe round that began before one is dropped
        self.liveness_timer = QTimer(self)
        self.liveness_timer.setInterval(LIVENESS_INTERVAL_MS)
        self.liveness_timer.timeout.connect(self.check_liveness)
        self.liveness_timer.start()

    # --- running calls -------------------------------------------------------------------------

    def _run(self, key: str, function, *args, on_done=None, on_failed=None, title: str = "",
             **kwargs):
        """Run ``function`` for ``key`` on the task runner; its CancelToken (None once closed)."""
        if self.closed:
            return None
        self._keys.add(key)
        self.sig_busy_changed.emit(True)

        def done(result) -> None:
            self._finish(key)
            if on_done is not None:
                on_done(result)

        def failed(exc: Exception) -> None:
            self._finish(key)
            log.info("device call %s failed", key, exc_info=exc)
            if on_failed is not None:
                on_failed(one_line(exc))
            self.sig_error.emit(one_line(exc))
            from workbench.device.errors import ConnectionLost, DeviceUnreachable

            if key != LIST_KEY and isinstance(exc, (ConnectionLost, DeviceUnreachable)):
                self.refresh()  # the list shows the device offline now

        return self.tasks.run(key, function, *args, on_done=done, on_error=failed, title=title, **kwargs)

    def _finish(self, key: str) -> None:
        self._keys.discard(key)
        self.sig_busy_changed.emit(bool(self._keys))

    def is_busy(self, key: str | None = None) -> bool:
        return bool(self._keys) if key is None else key in self._keys

    def paired_devices(self):
        """The paired devices, for one call (any thread): their notices reach ``sig_notice``."""
        from workbench.device.paired import PairedDevices

        return PairedDevices(on_notice=self._notice)

    def _notice(self, message: str) -> None:
        # Said on a worker thread, in the middle of a call: a window closed since only drops it.
        if shiboken6.isValid(self) and not self.closed:
            try:
                self._sig_noticed.emit(message)
            except RuntimeError:
                pass  # deleted between the check and the emit

    def _noticed(self, message: str) -> None:
        if message not in self._notices_said:
            self._notices_said.add(message)
            self.sig_notice.emit(message)

    def _open_link(self, key: str, target: str, **options):
        from workbench.device.link import DeviceLink

        link = DeviceLink.open(target, devices=self.paired_devices(), **options)
        with self._links_lock:
            self._links[key] = link
        return link

    def _close_link(self, key: str, link) -> None:
        with self._links_lock:
            if self._links.get(key) is link:
                del self._links[key]
        link.close()

    def cancel(self, key: str) -> None:
        """Stop the call ``key`` at once (its link is aborted; its answer is dropped)."""
        with self._links_lock:
            link = self._links.pop(key, None)
        if link is not None:
            link.abort()
        self.tasks.cancel(key)
        self._finish(key)

    def close_down(self) -> None:
        """End every call (the window closes): each link is aborted, so no worker is left
        waiting on a device after the window has gone."""
        self.closed = True
        self.liveness_timer.stop()
        self.tasks.cancel(LIVENESS_KEY)
        self.paired_watch.stop()
        for key in list(self._keys):
            self.cancel(key)

    def _from_worker(self, signal_name: str, *values) -> None:
        """Emit ``signal_name`` from a worker thread, unless the window has closed: the session
        may already be deleted then, and a log stream is ended by raising Cancelled."""
        from workbench.tasks import Cancelled

        if not shiboken6.isValid(self) or self.closed:
            raise Cancelled()
        try:
            getattr(self, signal_name).emit(*values)
        except RuntimeError:
            if shiboken6.isValid(self):
                raise
            raise Cancelled() from None  # deleted between the check and the emit

    # --- the calls -----------------------------------------------------------------------------

    def refresh(self) -> None:
        """List paired devices (probed), this computer's agent and devices on the LAN."""
        from workbench.device.discovery import device_overview

        def listed(overview: dict) -> None:
            self.overview = overview
            self.listed = True
            self._listing += 1
            for row in overview.get("devices", []):
                self._reachable.setdefault(row["address"], row.get("status") != "offline")
            self.sig_devices_listed.emit(overview)

        if self.closed:
            return
        self.paired_watch.note_current()
        self._run(LIST_KEY, device_overview, self.paired_devices(), on_done=listed,
                  title="Looking for devices", browse_lan=self.browse_lan)

    def pair(self, address: str, code: str) -> None:
        """Pair with the agent at ``address`` using the 6-digit ``code`` it prints."""
        from workbench.device.link import pair_device

        def paired(device) -> None:
            self.sig_paired.emit(getattr(device, "name", address))
            self.refresh()

        self._run(PAIR_KEY, pair_device, address.strip(), code.strip(), self.paired_devices(),
                  on_done=paired, title=f"Pairing with {address}")

    def forget(self, device_id: str, name: str = "") -> None:
        """Forget the paired device ``device_id`` and its pinned certificate (to pair again)."""
        devices = self.paired_devices()

        def forgotten(_was_paired) -> None:
            self.sig_forgotten.emit(name or device_id)
            self.refresh()

        self._run(FORGET_KEY, devices.forget, device_id, on_done=forgotten,
                  title=f"Forgetting {name or device_id}")

    def start_local(self) -> None:
        """Start this computer's agent (or find it running) and pair with it."""
        from workbench.device.serve_local import serve_local

        self._run(LOCAL_KEY, serve_local, devices=self.paired_devices(),
                  on_done=lambda agent: self.refresh(), title="Starting this computer's agent")

    def info(self, target: str) -> None:
        """Connect to ``target`` (HOST:PORT or a name) and ask what it is."""

        def call():
            link = self._open_link(INFO_KEY, target)
            try:
                return link.info()
            finally:
                self._close_link(INFO_KEY, link)

        def answered(info) -> None:
            self._answered(target)
            self.sig_info.emit(info)

        self._run(INFO_KEY, call, on_done=answered, title=f"Connecting to {target}")

    def push(self, target: str, model: Path | str) -> None:
        """Send ``model`` to ``target`` unless it has it."""

        def call(progress=None, cancel=None):
            from workbench.device.link import check_model_file

            check_model_file(Path(model))
            link = self._open_link(PUSH_KEY, target)
            try:
                return link.push(Path(model), progress=progress, cancel=cancel)
            finally:
                self._close_link(PUSH_KEY, link)

        def pushed(result) -> None:
            self._answered(target)
            self.sig_pushed.emit(result)

        self._run(PUSH_KEY, self._reporting(call), on_done=pushed,
                  title=f"Pushing {Path(model).name}")

    def verify(self, target: str, model: Path | str, runtime: str = "onnxruntime", **options) -> None:
        """Verify ``model`` on ``target`` with the device's ``runtime`` against this computer on
        the project's test split (``options`` go to ``verify_model``: samples, bench_runs,
        atol…); recorded in the model's history, which is read again afterwards."""
        from workbench.device.verify import verify_model

        model = Path(model)

        def call(progress=None, cancel=None):
            link = self._open_link(VERIFY_KEY, target, runtime=runtime)
            try:
                return verify_model(link, model, project=self._project_of(model), progress=progress,
                                    cancel=cancel, **options)
            finally:
                self._close_link(VERIFY_KEY, link)

        def verified(result) -> None:
            self._answered(target)
            self.last_verification = result
            self.sig_verified.emit(result)
            self.history(model)

        self._run(VERIFY_KEY, self._reporting(call), on_done=verified,
                  title=f"Verifying {model.name} on {self.device_name(target)} ({runtime})")

    def redeploy_alias(self, alias: str, left: str | int | None = None, on_finished=None):
        """Push the version ``alias`` points to to the slots whose last switched deploy was
        ``left`` (default: the version the alias's last move left), as ``workbench device
        redeploy`` does; returns its ``AliasPushOperation``, which ``on_finished`` gets too."""
        from workbench.device.widgets.alias_push import AliasPushOperation

        operation = AliasPushOperation(alias, left)

        def call(progress=None, cancel=None):
            from workbench.device.rollback import redeploy_alias

            return redeploy_alias(self.project_dir, alias, left, progress=progress, cancel=cancel,
                                  paired=self.paired_devices())

        def over(result=None, error: str = "") -> None:
            operation.finish(result, error, name_of=self.device_name)
            self.sig_alias_pushed.emit(operation)
            if on_finished is not None:
                on_finished(operation)
            if result is not None and any(o.state == "unreachable" for r in result.reports for o in r.outcomes):
                self.refresh()  # the list shows the devices that did not answer offline now

        if self.closed:
            over(error="the window is closing")
            return operation
        if self.is_busy(REDEPLOY_KEY):  # two pushes to the same slots would race
            over(error="a push to the devices is under way; push again once it is over")
            return operation
        self._alias_push_token = self._run(REDEPLOY_KEY, self._reporting(call), on_done=over,
                                           on_failed=lambda message: over(error=message),
                                           title=f"Pushing {alias} to its devices")
        return operation

    def stop_alias_push(self) -> bool:
        """Cancel the alias push under way: the devices it has not switched yet keep the model
        they serve (their line says "cancelled before it switched"), one in the middle of its
        switch finishes it, and the push still reports, so every device's state is said.
        Whether a push was under way."""
        token = self._alias_push_token
        if token is None or not self.is_busy(REDEPLOY_KEY):
            return False
        token.cancel()
        return True

    def history(self, model: Path | str) -> None:
        """Read the verifications of ``model``'s version (by sha256)."""
        from workbench.device.verify import history_for
        from workbench_device.client import sha256_of

        model = Path(model)

        def call():
            if not model.is_file():
                return []
            return history_for(model, self._project_of(model)).entries(sha256_of(model))

        self._run(HISTORY_KEY, call, on_done=self.sig_history.emit)

    def follow_logs(self, target: str) -> None:
        """Stream ``target``'s log into ``sig_log_line`` until ``stop_logs``."""
        self._log_stream += 1
        stream = self._log_stream

        def call(cancel=None):
            link = self._open_link(LOGS_KEY, target)
            try:
                return link.follow_logs(lambda line: self._from_worker("_sig_streamed", stream, line),
                                        cancel=cancel)
            finally:
                self._close_link(LOGS_KEY, link)

        # No status bar line: the stream lasts until stopped, and the Log tab shows it runs.
        self._run(LOGS_KEY, call)

    def run_script(self, target: str, script: Path | str, text: str | None = None,
                   model: Path | str | None = None) -> None:
        """Run ``script`` (``text``: its unsaved text in the editor) on ``target``, its output
        streamed into ``sig_script_output``; ``cancel(SCRIPT_KEY)`` stops it on the device."""
        from workbench.device.scripts import run_script_on_device

        script = Path(script)

        def call(progress=None, cancel=None):
            link = self._open_link(SCRIPT_KEY, target)
            try:
                return run_script_on_device(
                    link, script, self.project_dir, model, text,
                    on_output=lambda stream, chunk: self._from_worker("sig_script_output",
                                                                      stream, chunk),
                    progress=progress, cancel=cancel)
            finally:
                self._close_link(SCRIPT_KEY, link)

        def finished(run) -> None:
            self._answered(target)
            self.sig_script_finished.emit(run)

        self._run(SCRIPT_KEY, self._reporting(call), on_done=finished,
                  on_failed=self.sig_script_failed.emit,
                  title=f"Running {script.name} on {self.device_name(target)}")

    def stop_script(self) -> None:
        """Stop the script running on a device (the device ends it with its connection)."""
        if self.is_busy(SCRIPT_KEY):
            self.cancel(SCRIPT_KEY)
            self.sig_script_failed.emit("Stopped")

    def stop_logs(self) -> None:
        self._log_stream += 1
        self.cancel(LOGS_KEY)

    def _streamed(self, stream: int, line: dict) -> None:
        # Lines still queued from a stream that was stopped, or replaced, are dropped.
        if stream == self._log_stream and self.is_busy(LOGS_KEY):
            self.sig_log_line.emit(line)

    def check_liveness(self) -> None:
        """Try each paired and local device's address (a TCP connect, off the GUI thread): one
        that stopped answering shows offline, one that answers again is listed anew. Skipped
        while the window is hidden, before the first listing, during a listing, and while the
        previous round still runs. The paired devices' file is looked at too: a change the
        file system did not report (a home folder on NFS, a busy machine's dropped event) still
        reaches the list within a round."""
        if self.closed:
            return
        self.paired_watch.check_now()
        if not self.listed or self.is_busy(LIST_KEY) or self.tasks.is_running(LIVENESS_KEY):
            return
        is_visible = getattr(self.window, "isVisible", None)
        if is_visible is not None and not is_visible():
            return
        targets = [(row["address"], row["host"], row["port"])
                   for row in self.overview.get("devices", [])
                   if (row.get("paired") or row.get("local")) and row.get("host") and row.get("port")]
        if not targets:
            return
        listing = self._listing

        def probe(cancel=None) -> dict[str, bool]:
            answers = {}
            for address, host, port in targets:
                if cancel is not None and cancel.cancelled:
                    break
                answers[address] = reachable(host, port)
            return answers

        def probed(answers: dict[str, bool]) -> None:
            if self.closed or listing != self._listing:
                return  # a newer listing knows better
            came_back = False
            for address, up in answers.items():
                was_up = self._reachable.get(address)
                self._reachable[address] = up
                if up == was_up:
                    continue
                if up:
                    came_back = True
                    continue
                for row in self.overview.get("devices", []):
                    if row["address"] == address and row.get("status") != "offline":
                        row["status"] = "offline"
                        self.sig_device_status_changed.emit(address, "offline")
            if came_back:
                self.refresh()

        def failed(exc: Exception) -> None:
            log.info("device liveness check failed", exc_info=exc)

        # Not through _run: a background check neither shows as busy nor puts up a banner.
        self.tasks.run(LIVENESS_KEY, probe, on_done=probed, on_error=failed)

    def device_name(self, target: str) -> str:
        """The name the list shows for ``target`` (HOST:PORT), or ``target`` when unlisted."""
        for row in self.overview.get("devices", []):
            if target in (row.get("address"), row.get("name")):
                return str(row.get("name") or target)
        return target

    # --- helpers -------------------------------------------------------------------------------

    def _answered(self, target: str) -> None:
        """A call on ``target`` succeeded: when the list still shows it offline (its agent came
        back since the list was made), list the devices again so it shows online."""
        for row in self.overview.get("devices", []):
            if target in (row.get("address"), row.get("name")) and row.get("status") != "online":
                if not self.is_busy(LIST_KEY):
                    self.refresh()
                return

    def _project_of(self, model: Path) -> Path | None:
        try:
            model.resolve().relative_to(self.project_dir.resolve())
        except ValueError:
            return None  # a model elsewhere: verify finds its own project, or none
        return self.project_dir

    def _reporting(self, call):
        """``call`` with its progress reports also shown as ``sig_progress`` lines (a signal
        emitted from a worker thread reaches the GUI thread queued); once the window has
        closed, the next report ends the call."""

        def reporting(progress=None, cancel=None):
            def say(report) -> None:
                self._from_worker("sig_progress", str(getattr(report, "message", report)))
                if progress is not None:
                    progress(report)

            return call(progress=say, cancel=cancel)

        return reporting
