"""The cluster side of one project window: profiles, checks, sync plans, cluster runs and pulls,
each called off the GUI thread.

Widgets talk to this adapter, never to the services directly. Every call runs through the
window's task runner; its answer, its progress reports and the result of each profile check come
back on the GUI thread. A newer call with the same key drops the answer of an older one (the
"what will be synced" list of a profile the user has already left, say).
"""

from __future__ import annotations

import itertools
import logging
import threading
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal

from workbench.cluster.errors import AuthenticationFailed, HostKeyChanged, UnknownHostKey
from workbench.tasks import Cancelled, Progress

log = logging.getLogger(__name__)

Callback = Callable[[Any], None]
_CANCELLED = object()


class ClusterSession(QObject):
    """Cluster calls for one window."""

    sig_profiles_changed = Signal(list)
    """The profiles as last loaded or saved (``list[ClusterProfile]``, sorted by name)."""

    _sig_report = Signal(str, object)
    """A worker's report (progress, a finished check) for the call it belongs to; carried to
    the GUI thread because ``_deliver`` belongs to this object."""

    def __init__(self, window, run_service: Callable[[], Any] | None = None, parent: QObject | None = None):
        super().__init__(parent if parent is not None else window)
        self.window = window
        self.project_dir = Path(window.project.root)
        self.tasks = window.tasks
        self.profiles: list = []
        self.commands = None
        """The window's ClusterCommands, once installed."""
        self._run_service = run_service
        self._own_service = None
        self._service_lock = threading.Lock()
        self._listeners: dict[str, Callback] = {}
        self._ids = itertools.count(1)
        self._sig_report.connect(self._deliver)

    # --- plumbing -----------------------------------------------------------------------------

    def call(self, key: str, work: Callable[..., Any], on_done: Callback | None = None,
             on_error: Callback | None = None, on_report: Callback | None = None, title: str = "",
             on_cancelled: Callable[[], None] | None = None):
        """Run ``work(report, cancel)`` on a worker; ``report(x)`` from there reaches
        ``on_report(x)`` on the GUI thread, while this call is the newest of ``key``. Returns the
        cancel token; once the work has stopped for it, ``on_cancelled()``."""
        token_of_call = f"{key}#{next(self._ids)}"
        self._listeners = {k: v for k, v in self._listeners.items() if not k.startswith(f"{key}#")}
        if on_report is not None:
            self._listeners[token_of_call] = on_report

        def run(cancel, progress):
            def report(value: Any) -> None:
                self._sig_report.emit(token_of_call, value)
                if isinstance(value, Progress):
                    progress(value)  # the status bar's line too
            try:
                return work(report, cancel)
            except Cancelled:
                return _CANCELLED  # answered like a result, so the widget hears that it stopped

        def finished(callback: Callback | None):
            def handle(value: Any) -> None:
                self._listeners.pop(token_of_call, None)
                if value is _CANCELLED:
                    if on_cancelled is not None:
                        on_cancelled()
                elif callback is not None:
                    callback(value)
            return handle

        def failed(error: Exception) -> None:
            log.info("%s failed: %s", key, error)
            finished(on_error)(error)

        return self.tasks.run(key, run, on_done=finished(on_done), on_error=failed, title=title)

    def _deliver(self, token_of_call: str, value: Any) -> None:
        listener = self._listeners.get(token_of_call)
        if listener is not None:
            listener(value)

    def run_service(self):
        """The project's RunService: the training panel's own when it offers one, else one of ours
        (created on first use, on a worker thread)."""
        if self._run_service is not None:
            return self._run_service()
        with self._service_lock:
            if self._own_service is None:
                # Leave this import here: the run service (and SQLite) load when a run needs them.
                from workbench.training import RunService

                self._own_service = RunService(self.project_dir)
            return self._own_service

    # --- profiles -----------------------------------------------------------------------------

    def load_profiles(self, on_done: Callback | None = None, on_error: Callback | None = None) -> None:
        """Read the profiles; ``sig_profiles_changed`` and ``on_done(profiles)`` follow."""
        def work(_report, _cancel):
            from workbench.cluster.profiles import load_profiles

            return load_profiles()

        self.call("cluster.loadProfiles", work, on_done=self._loaded(on_done), on_error=on_error)

    def save_profile(self, profile, previous_name: str = "", on_done: Callback | None = None,
                     on_error: Callback | None = None) -> None:
        """Save ``profile`` (replacing ``previous_name`` when it was renamed); the profiles are
        loaded again."""
        def work(_report, _cancel):
            from workbench.cluster.profiles import load_profiles, remove_profile, save_profile

            save_profile(profile)
            if previous_name and previous_name != profile.name:
                remove_profile(previous_name)
            return load_profiles()

        self.call("cluster.saveProfile", work, on_done=self._loaded(on_done), on_error=on_error,
                  title=f"Saving the cluster profile {profile.name}")

    def remove_profile(self, name: str, on_done: Callback | None = None, on_error: Callback | None = None) -> None:
        def work(_report, _cancel):
            from workbench.cluster.profiles import load_profiles, remove_profile

            remove_profile(name)
            return load_profiles()

        self.call("cluster.removeProfile", work, on_done=self._loaded(on_done), on_error=on_error)

    def _loaded(self, on_done: Callback | None) -> Callback:
        def done(profiles: list) -> None:
            self.profiles = list(profiles)
            self.sig_profiles_changed.emit(self.profiles)
            if on_done is not None:
                on_done(self.profiles)
        return done

    # --- checks -------------------------------------------------------------------------------

    def test_profile(self, profile, on_check: Callback, on_done: Callback, on_error: Callback,
                     trust=None, passphrase: str | None = None, remember_passphrase: bool = False) -> None:
        """Run every check of ``profile``: ``on_check(ProfileCheck)`` as each ends, then
        ``on_done(TestOutcome)``. ``trust``: the UnknownHostKey the user agreed to, recorded
        (exactly that key) before connecting. ``passphrase`` unlocks the key file for this test;
        ``remember_passphrase`` also keeps it in the OS keyring, once it unlocks the key."""
        def work(report, _cancel):
            from workbench.cluster.checks import check_profile
            from workbench.cluster.host_keys import remember_host_key

            if trust is not None:
                remember_host_key(trust)
            if passphrase is not None:
                problem = passphrase_problem(profile.key_file, passphrase)
                if problem:
                    return TestOutcome([], needs_passphrase=True, passphrase_problem=problem)
                if remember_passphrase:
                    from workbench.cluster.connection import store_passphrase

                    store_passphrase(profile.key_file, passphrase)
            checks = check_profile(profile, passphrase=passphrase, on_check=report)
            locked = (passphrase is None and bool(checks) and isinstance(checks[0].error, AuthenticationFailed)
                      and key_is_locked(profile.key_file))
            return TestOutcome(checks, needs_passphrase=locked)

        self.call("cluster.testProfile", work, on_done=on_done, on_error=on_error, on_report=on_check,
                  title=f"Testing the cluster profile {profile.name}")

    # --- runs ---------------------------------------------------------------------------------

    def plan_sync(self, profile_name: str, on_done: Callback, on_error: Callback,
                  on_progress: Callback | None = None, trust=None) -> None:
        """What a run on ``profile_name`` would sync (``SyncPlan``), found on a worker: it
        connects to the cluster and compares the project's data with what is there. ``trust``:
        an UnknownHostKey the user agreed to."""
        def work(report, cancel):
            from workbench.cluster.connection import ClusterConnection
            from workbench.cluster.host_keys import remember_host_key

            if trust is not None:
                remember_host_key(trust)
            from workbench.cluster.data_sync import plan_sync, read_settings
            from workbench.cluster.profiles import get_profile
            from workbench.project import load_project

            settings = load_project(self.project_dir).settings
            profile = get_profile(profile_name)
            if read_settings(self.project_dir, settings).empty:
                return plan_sync(None, self.project_dir, profile, settings)  # nothing to compare: no connection
            with ClusterConnection(profile) as conn:
                return plan_sync(conn, self.project_dir, profile, settings, progress=report, cancel=cancel)

        self.call("cluster.planSync", work, on_done=on_done, on_error=on_error, on_report=on_progress)

    def read_run_choices(self, on_done: Callback, on_error: Callback) -> None:
        """What the Run on Cluster dialog offers, read on a worker: ``on_done(RunChoices)``."""
        def work(_report, _cancel):
            from workbench.cluster.profiles import load_profiles
            from workbench.cluster.last_choice import read_choice
            from workbench.project import load_project
            from workbench.training.hparams_files import find_hparams_files
            from workbench_trainkit.hparams import project_schema

            try:
                schema = project_schema(self.project_dir)
            except Exception:  # noqa: BLE001 — the start reports a broken schema with its reason
                schema = None
            settings = load_project(self.project_dir).settings
            default = str((settings.get("training") or {}).get("hparams", "") or "")
            return RunChoices(load_profiles(), find_hparams_files(self.project_dir), default, schema,
                              read_choice(self.project_dir))

        self.call("cluster.readRunChoices", work, on_done=on_done, on_error=on_error)

    def start_run(self, profile_name: str, resources: dict, hparams_file: str | None, overrides: list[str],
                  on_progress: Callback, on_done: Callback, on_error: Callback,
                  on_cancelled: Callable[[], None] | None = None, trust=None):
        """Start a run on the cluster (code, data, submit…): ``on_progress(RunProgress)`` for each
        stage, ``on_done(RunInfo)`` once the job is submitted. Returns the cancel token (honoured
        until the job is submitted). ``trust``: an UnknownHostKey the user agreed to."""
        def work(report, cancel):
            if trust is not None:
                from workbench.cluster.host_keys import remember_host_key

                remember_host_key(trust)
            # The backend remembers the choice for the next start, as for `workbench train --cluster`.
            path = hparams_file
            if path is not None and not Path(path).is_absolute():
                path = str(self.project_dir / path)
            return self.run_service().start(hparams_file=path, overrides=tuple(overrides),
                                            cluster=profile_name, resources=dict(resources),
                                            progress=report, cancel=cancel)

        return self.call("cluster.startRun", work, on_done=on_done, on_error=on_error, on_report=on_progress,
                         on_cancelled=on_cancelled, title=f"Starting a run on {profile_name}")

    def pull(self, run_id: str, on_done: Callback, on_error: Callback) -> None:
        """Fetch a cluster run's checkpoints and outputs now; ``on_done(PullReport)``."""
        def work(report, cancel):
            return self.run_service().pull(run_id, progress=report, cancel=cancel)

        self.call(f"cluster.pull.{run_id}", work, on_done=on_done, on_error=on_error,
                  title=f"Pulling the products of {run_id}")


class RunChoices:
    """What Run on Cluster offers: the profiles, the project's hyper-parameter files (and its
    default one, and its schema: None when the keys cannot be read), and what was last chosen."""

    def __init__(self, profiles: list, hparams_files: list[str], default_hparams: str, schema, last):
        self.profiles = profiles
        self.hparams_files = hparams_files
        self.default_hparams = default_hparams
        self.schema = schema
        self.last = last


class TestOutcome:
    """What a profile test found: the checks, and whether the key file wants a passphrase
    (``passphrase_problem``: why the one given did not do)."""

    __test__ = False  # not a pytest test class, whatever its name says

    def __init__(self, checks: list, needs_passphrase: bool = False, passphrase_problem: str = ""):
        self.checks = checks
        self.needs_passphrase = needs_passphrase
        self.passphrase_problem = passphrase_problem

    @property
    def unknown_host(self) -> UnknownHostKey | None:
        """The UnknownHostKey that stopped the connection, if that is what did."""
        return self._connect_error(UnknownHostKey)

    @property
    def changed_host(self) -> HostKeyChanged | None:
        """The HostKeyChanged that stopped the connection, if that is what did."""
        return self._connect_error(HostKeyChanged)

    def _connect_error(self, kind: type):
        first = self.checks[0] if self.checks else None
        error = first.error if first is not None and not first.ok else None
        return error if isinstance(error, kind) else None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)


def key_is_locked(key_file: str) -> bool:
    """Whether the private key ``key_file`` needs a passphrase to be read."""
    if not key_file:
        return False
    # Leave this import here: paramiko loads only when a key is looked at.
    import paramiko

    try:
        paramiko.PKey.from_path(Path(key_file).expanduser())
    except (paramiko.PasswordRequiredException, TypeError):
        return True  # paramiko 5 says "locked" with a TypeError ("password was not provided")
    except Exception:  # noqa: BLE001 — unreadable or not a key: the connection says so better
        return False
    return False


def passphrase_problem(key_file: str, passphrase: str) -> str:
    """Why ``passphrase`` does not unlock ``key_file`` ("" when it does)."""
    import paramiko

    try:
        paramiko.PKey.from_path(Path(key_file).expanduser(), passphrase.encode("utf-8"))
    except Exception:  # noqa: BLE001 — paramiko raises several kinds for a wrong passphrase
        return f"That passphrase does not unlock {key_file}."
    return ""
