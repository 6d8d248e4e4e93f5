"""The trigger watcher: a small process per project that starts an iteration when a trigger of
``[pipeline.triggers]`` fires, and resumes one that a dead process left running.

- One per project: it holds ``registry/pipeline/.watcher.lock`` (a FileLock, so a killed
  watcher's lock is free again) for its whole life; a second one is refused, naming the holder.
- An iteration runs in a child process of its own session (``python -m workbench pipeline start``
  or ``resume``), so the watcher stays responsive, a crash of the iteration leaves the watcher
  running, and stopping the watcher (SIGTERM, Ctrl+C) or killing it leaves the iteration going.
- A trigger that fires while an iteration runs waits for it to end (data growth is not even
  looked at then: the running iteration cuts the data it finds).
- On start it looks for an iteration recorded as running whose process is gone (the watcher and
  its iteration killed, the machine restarted) and resumes it.
- What it does goes to ``registry/pipeline/watcher.log`` (the iterations' own output too);
  ``registry/pipeline/watcher.json`` says who runs, since when, the triggers, when each is next
  due and what the last trigger started, which ``pipeline watch --status`` reads.

``python -m workbench.pipeline.watcher PROJECT [--started-by TEXT] [--on-open]`` is the
detached form (``pipeline watch --detach``, and the hub when a window of the project opens, with
``--on-open``): it detaches first, then watches. With ``--on-open`` a project that opted out
(``start_with_workbench = false``) or declares no trigger is left alone, and a watcher already
running is no error: the one that holds the lock goes on, this one ends.

Each iteration the watcher starts records why (``--trigger-kind``/``--trigger-reason`` of
``pipeline start`` and ``resume``): the schedule, the period, the data growth with its numbers,
or the resume of an iteration whose process died.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from workbench.pipeline.declaration import read_declaration
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.iterations import DONE, FAILED, RESUMED, RUNNING, IterationStore
from workbench.pipeline.service import PipelineService
from workbench.pipeline.triggers import (DATA_GROWTH, ON_OPEN_LOG, SCHEDULE, DataGrowthCheck, TriggerClock,
                                         format_duration, read_triggers)
from workbench.platform.atomic_files import write_text_atomically
from workbench.platform.locks import FileLock, is_locked

WATCHER_LOCK = ".watcher.lock"
WATCHER_STATE = "watcher.json"
WATCHER_LOG = "watcher.log"
_NAP_S = 0.2
_TICK_S = 1.0
_IDENTIFY_S = 5.0
_ON_OPEN_TAIL_BYTES = 8192


class WatcherRunning(PipelineError):
    """Another watcher holds the project's watcher lock."""

    def __init__(self, message: str, pid: int | None):
        super().__init__(message)
        self.pid = pid


def watcher_paths(project_dir: Path | str) -> tuple[Path, Path, Path]:
    """(lock, state, log) of the project's watcher."""
    folder = PipelineService(project_dir).store.folder
    return folder / WATCHER_LOCK, folder / WATCHER_STATE, folder / WATCHER_LOG


def watcher_status(project_dir: Path | str) -> dict:
    """Whether a watcher runs on the project, with what its state file says: pid, since,
    triggers, next due times, the last trigger and what it started (for a watcher that ended:
    ``running`` False, and what the last one left)."""
    lock, state_path, log = watcher_paths(project_dir)
    state = _read_json(state_path)
    last = state.get("last_trigger")
    if isinstance(last, dict) and last.get("iteration") and last.get("state") != RUNNING:
        # What became of it since (a failed iteration resumed by hand and done): its record says.
        try:
            last["state"] = IterationStore(state_path.parent.parent).read(last["iteration"]).state
        except PipelineError:
            pass
    running = is_locked(lock)
    pid = FileLock(lock).holder_pid() if running else state.get("pid")
    status = {**state, "running": running, "pid": pid, "log": str(log)}
    if not running:
        failure = _failure_on_open(Path(project_dir).expanduser(), state)
        if failure:
            status["failed_on_open"] = failure
    return status


def _failure_on_open(project_dir: Path, state: dict) -> str:
    """Why the watcher started on opening the project ended before it watched, when its last
    word there is an error newer than the last watcher that ran ("" otherwise): it ran
    detached, so its log is the only place that says it."""
    path = project_dir / ON_OPEN_LOG
    try:
        with open(path, "rb") as log:
            info = os.fstat(log.fileno())
            written = info.st_mtime
            # Every opening of the project appends to it, and the panel asks at each refresh:
            # only its end is read.
            log.seek(max(0, info.st_size - _ON_OPEN_TAIL_BYTES))
            tail = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    last_ran = max((moment for moment in (state.get("since"), state.get("ended_at"))
                    if isinstance(moment, (int, float))), default=0)
    if not lines or written < last_ran:
        return ""
    _, said, error = lines[-1].partition(" watcher: Error: ")
    if said:
        return error
    # Not the watcher's own words: it died on something unforeseen (a traceback's last line).
    return lines[-1] if any(line.startswith("Traceback") for line in lines) else ""


def stop_watcher(project_dir: Path | str, timeout_s: float = 15.0) -> dict | None:
    """SIGTERM to the project's watcher, and wait until it has let its lock go. The status it
    had (None when none runs)."""
    status = watcher_status(project_dir)
    if not status["running"] or not status["pid"]:
        return None
    lock = watcher_paths(project_dir)[0]
    try:
        os.kill(status["pid"], signal.SIGTERM)
    except ProcessLookupError:
        return status
    deadline = time.monotonic() + timeout_s
    while is_locked(lock):
        if time.monotonic() > deadline:
            raise PipelineError(f"the trigger watcher (pid {status['pid']}) did not end within {timeout_s:.0f} s of "
                                f"SIGTERM; end it with `kill -9 {status['pid']}` (its lock is freed with it).")
        time.sleep(0.05)
    return status


def start_watcher_detached(project_dir: Path | str, timeout_s: float = 20.0,
                           started_by: str = "`workbench pipeline watch --detach`") -> tuple[int, bool]:
    """Start the project's watcher in a session of its own (it survives the terminal or window
    that started it). (pid, True) once it holds its lock, or (pid, False) when one already runs.
    A broken declaration is raised here, before anything starts. ``started_by`` goes to its
    status."""
    from workbench.platform.detach import start_detached

    project_dir = Path(project_dir).expanduser().resolve()
    lock, _, log = watcher_paths(project_dir)
    if is_locked(lock):
        return FileLock(lock).holder_pid() or 0, False
    TriggerWatcher(project_dir)  # the declaration's faults, here rather than in the log
    log.parent.mkdir(parents=True, exist_ok=True)
    start_offset = log.stat().st_size if log.exists() else 0
    start_detached("workbench.pipeline.watcher", [str(project_dir), "--started-by", started_by], log, cwd=project_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid = FileLock(lock).holder_pid()
        if is_locked(lock) and pid:
            return pid, True
        time.sleep(0.05)
    with open(log, encoding="utf-8", errors="replace") as stream:
        stream.seek(start_offset)
        said = [line.strip() for line in stream if line.strip()]
    raise PipelineError(f"the trigger watcher did not start within {timeout_s:.0f} s"
                        + (f": {said[-1]}" if said else "") + f" (its log: {log}).")


class TriggerWatcher:
    """The watcher of the project at ``project_dir``; ``say`` gets each line it logs."""

    def __init__(self, project_dir: Path | str, say: Callable[[str], None] = lambda line: None,
                 started_by: str = ""):
        self.service = PipelineService(project_dir)
        self.started_by = started_by
        self.project_dir = self.service.project_dir
        read_declaration(self.project_dir)
        self.triggers = read_triggers(self.project_dir)
        if not self.triggers.any:
            raise PipelineError(f"{self.project_dir / 'workbench.toml'} declares no trigger: add [pipeline.triggers] "
                                "with schedule = \"02:00\", every = \"6h\" or on_data_growth = { samples = 100 }.")
        folder = self.service.store.folder
        self.lock = FileLock(folder / WATCHER_LOCK)
        self.state_path, self.log_path = folder / WATCHER_STATE, folder / WATCHER_LOG
        self.say = say
        self.child: subprocess.Popen | None = None
        self.waiting: list[tuple[str, str]] = []  # (kind, reason) of triggers that fired, not yet acted on
        self._waiting_logged = False
        self._stop = False
        self.state: dict = {}
        self._written = ""

    # --- the process ---------------------------------------------------------------------

    def run(self) -> None:
        """Watch until SIGTERM, Ctrl+C or ``request_stop``. WatcherRunning when another
        watcher has the project."""
        self.service.store.folder.mkdir(parents=True, exist_ok=True)
        if not self.lock.try_acquire(tries=5):
            pid = self.lock.holder_pid()
            since = _read_json(self.state_path).get("since")
            when = f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}" if since else ""
            raise WatcherRunning(f"a trigger watcher already runs for {self.project_dir} (pid {pid}{when}); "
                                 "`workbench pipeline watch --status` shows it, `--stop` ends it.", pid)
        previous = _read_json(self.state_path)
        now = time.time()
        clock = TriggerClock(self.triggers, now, previous.get("last_fired", {}))
        growth = DataGrowthCheck(self.service.versions.datasets, self.triggers)
        self.state = {"pid": os.getpid(), "host": socket.gethostname(), "since": now,
                      "project": str(self.project_dir), "triggers": self.triggers.describe(),
                      "started_by": self.started_by,
                      "last_fired": previous.get("last_fired", {}), "last_trigger": previous.get("last_trigger"),
                      "resumed": None, "iteration": None, "ended_at": None}
        self.log(f"watching {self.project_dir} (pid {os.getpid()}): " + "; ".join(self.triggers.describe()))
        self.state["next_due"] = dict(clock.due)
        self._write_state()  # so that a status asked right after the start sees since and triggers
        try:
            self._resume_interrupted()
            while not self._stop:
                self._tick(clock, growth, time.time())
                self._nap(clock)
        except KeyboardInterrupt:
            pass
        finally:
            self._leave()

    def request_stop(self, *_signal_args) -> None:
        self._stop = True

    # --- each tick -----------------------------------------------------------------------

    def _tick(self, clock: TriggerClock, growth: DataGrowthCheck, now: float) -> None:
        self._follow_child()
        running = self._running_iteration()
        for name in clock.due_now(now):
            if name == DATA_GROWTH:
                if running is not None:
                    continue  # the running iteration cuts what the data holds now
                clock.passed(name, now)
                try:
                    reason = growth.check()
                except Exception as exc:  # a data folder gone for a moment must not end the watcher
                    self.log(f"could not look at the data: {exc}")
                    reason = None
            else:
                clock.passed(name, now)
                reason = next(line for line in self.triggers.describe()
                              if line.startswith("daily" if name == SCHEDULE else "every"))
            if reason:
                self.state["last_fired"][name] = now
                self.waiting.append((name, reason))
                self.log(f"trigger fired: {reason}")
        if self.waiting:
            if running is None:
                # Triggers that fired together start one iteration: the first names its kind.
                kind = self.waiting[0][0]
                reason = "; ".join(why.removeprefix(f"{DATA_GROWTH}: ") for _, why in self.waiting)
                data_grew = any(name == DATA_GROWTH for name, _ in self.waiting)
                nothing_new = "" if data_grew or self.child is not None else self._nothing_new()
                if nothing_new:
                    self._skip(kind, reason, nothing_new)
                else:
                    self._start_iteration(["start", str(self.project_dir)], kind, reason)
                self.waiting, self._waiting_logged = [], False
            elif not self._waiting_logged:
                self.log(f"the trigger waits: {running} runs")
                self._waiting_logged = True
        self.state["next_due"] = dict(clock.due)
        self._write_state()

    def _nap(self, clock: TriggerClock) -> None:
        until = time.monotonic() + max(0.05, min(_TICK_S, clock.seconds_to_next(time.time()) or _TICK_S))
        while not self._stop and time.monotonic() < until:
            time.sleep(min(_NAP_S, max(0.0, until - time.monotonic())))

    # --- iterations ----------------------------------------------------------------------

    def _resume_interrupted(self) -> None:
        """Resume the newest iteration recorded as running whose process is gone."""
        for version in reversed(self.service.store.versions()):
            try:
                recorded = self.service.store.read(version)
            except PipelineError as exc:
                self.log(str(exc))
                continue
            if recorded.state != RUNNING:
                continue
            if recorded.host and recorded.host != socket.gethostname():
                self.log(f"iteration {version} runs on {recorded.host} (pid {recorded.pid}); not resumed here")
                return
            now = self.service.get(version)
            if now.state != FAILED:
                self.log(f"iteration {version} goes on in process {recorded.pid}; triggers wait for it")
                return
            self.log(f"iteration {version} was running in process {recorded.pid}, which is gone (its process or the "
                     "machine stopped mid-iteration): resuming it")
            self.state["resumed"] = {"version": version, "at": time.time(), "dead_pid": recorded.pid}
            self._start_iteration(["resume", str(self.project_dir), "--version", version], RESUMED,
                                  f"the process running it (pid {recorded.pid}) was gone when the trigger watcher "
                                  f"(pid {os.getpid()}) started", version)
            return

    def _nothing_new(self) -> str:
        """Why a schedule or a period that came due starts no iteration ("" when it starts
        one): the last iteration is done and the data is as the newest dataset version has it,
        unless the triggers say ``retrain_unchanged = true`` or no step cuts a dataset version."""
        if self.triggers.retrain_unchanged:
            return ""
        try:
            if not any(step.tool == "dataset" for step in read_declaration(self.project_dir).steps):
                return ""
            iterations = self.service.store.versions()
            newest = self.service.store.read(iterations[-1]) if iterations else None
            datasets = self.service.versions.datasets
            latest = datasets.latest()
            if newest is None or newest.state != DONE or latest is None:
                return ""
            changes = datasets.pending()
        except Exception as exc:  # the watcher must go on; the iteration says what is wrong
            self.log(f"could not tell whether the data changed ({exc}); the iteration starts all the same")
            return ""
        if changes.added or changes.removed or changes.changed:
            return ""
        return (f"the data has not changed since dataset version {latest.name} and iteration {newest.version} "
                "is done")

    def _skip(self, kind: str, reason: str, why: str) -> None:
        self.state["last_trigger"] = {"kind": kind, "reason": reason, "at": time.time(), "pid": None,
                                      "command": None, "iteration": None, "state": "skipped", "skipped": why}
        self.log(f"no iteration started ({reason}): {why}; retrain_unchanged = true in [pipeline.triggers] "
                 "retrains all the same")
        self._write_state()

    def _start_iteration(self, args: list[str], kind: str, reason: str, version: str | None = None) -> None:
        env = dict(os.environ)
        workbench_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [workbench_root, env.get("PYTHONPATH", "")]))
        with open(self.log_path, "ab") as output:
            # A session of its own: Ctrl+C in the watcher's terminal and the watcher's end leave it running.
            self.child = subprocess.Popen([sys.executable, "-m", "workbench", "pipeline", *args,
                                           "--trigger-kind", kind, "--trigger-reason", reason],
                                          cwd=self.project_dir, env=env, stdin=subprocess.DEVNULL,
                                          stdout=output, stderr=output, start_new_session=True)
        self.state["last_trigger"] = {"kind": kind, "reason": reason, "at": time.time(), "pid": self.child.pid,
                                      "command": args[0], "iteration": version, "state": RUNNING}
        # Which iteration it runs is known once it holds the pipeline lock (or has ended): a
        # moment's wait, so that the status names it even when the next trigger comes soon.
        deadline = time.monotonic() + _IDENTIFY_S
        while not self._identify_child_iteration() and self.child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        version = self.state["last_trigger"].get("iteration") or "(not known yet)"
        self.log(f"started `workbench pipeline {' '.join(args[:1] + args[2:])}` in process {self.child.pid}: "
                 f"iteration {version} ({reason})")
        self._write_state()

    def _identify_child_iteration(self) -> str | None:
        last = self.state["last_trigger"]
        if not last.get("iteration"):
            holder = self.service.lock.holder()
            if holder is not None and holder.pid == self.child.pid:
                last["iteration"] = holder.version
            elif self.child.poll() is not None:
                newest = self.service.store.versions()
                if newest and self.service.store.read(newest[-1]).pid == self.child.pid:
                    last["iteration"] = newest[-1]
        return last.get("iteration")

    def _follow_child(self) -> None:
        """Which iteration the child runs (once it has taken the lock), and its end."""
        if self.child is None:
            return
        last = self.state["last_trigger"]
        self._identify_child_iteration()
        exit_status = self.child.poll()
        if exit_status is None:
            return
        self._identify_child_iteration()
        state = self.service.get(last["iteration"]).state if last.get("iteration") else "not started"
        last["state"], last["exit_status"], last["ended_at"] = state, exit_status, time.time()
        self.log(f"iteration {last.get('iteration') or '(none)'} ended {state} (process {self.child.pid}, "
                 f"exit status {exit_status}); it was started by: {last['reason']}")
        self.child = None

    def _running_iteration(self) -> str | None:
        """What runs now ("iteration NNNN (process P)"), or None."""
        if self.child is not None and self.child.poll() is None:
            version = self.state["last_trigger"].get("iteration")
            return f"iteration {version or '(starting)'} (process {self.child.pid})"
        holder = self.service.lock.holder()
        if holder is not None and holder.is_alive():
            return holder.describe()
        return None

    # --- record --------------------------------------------------------------------------

    def log(self, line: str) -> None:
        stamped = f"{time.strftime('%Y-%m-%d %H:%M:%S')} watcher: {line}"
        with open(self.log_path, "a", encoding="utf-8") as stream:
            stream.write(stamped + "\n")
        self.say(line)

    def _write_state(self) -> None:
        if self.child is not None:
            self.state["iteration"] = {"pid": self.child.pid, "version": self.state["last_trigger"].get("iteration")}
        else:
            self.state["iteration"] = None
        text = json.dumps(self.state, indent=2)
        # Written only when it changed: a window follows this folder, and a write every tick
        # would make it read every iteration again once a second.
        if text != self._written:
            write_text_atomically(self.state_path, text)
            self._written = text

    def _leave(self) -> None:
        self._follow_child()
        if self.child is not None:
            version = self.state["last_trigger"].get("iteration") or "(starting)"
            self.log(f"stopping; iteration {version} goes on in process {self.child.pid}")
        self.state["ended_at"] = time.time()
        try:
            self._write_state()
        finally:
            self.log("stopped")
            self.lock.release()


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def watch(project_dir: Path | str, say: Callable[[str], None] = lambda line: None, started_by: str = "") -> None:
    """Watch in this process until SIGTERM or Ctrl+C."""
    watcher = TriggerWatcher(project_dir, say, started_by)
    signal.signal(signal.SIGTERM, watcher.request_stop)
    watcher.run()


def wanted_on_open(project_dir: Path | str) -> str | None:
    """Why opening the project does not start its watcher (no trigger declared, or
    ``start_with_workbench = false``), or None when it does."""
    triggers = read_triggers(project_dir)
    if not triggers.any:
        return "it declares no trigger"
    if not triggers.start_with_workbench:
        return "[pipeline.triggers] says start_with_workbench = false"
    return None


def status_line(state: dict) -> str:
    """The watcher's state in one line, as the Pipeline panel shows it."""
    if not state.get("running"):
        if state.get("failed_on_open"):
            return ("Trigger watcher: not running; it could not start when the project opened: "
                    f"{state['failed_on_open']}")
        ended = state.get("ended_at")
        return "Trigger watcher: not running" + (
            f" (the last one, pid {state['pid']}, ended {time.strftime('%Y-%m-%d %H:%M', time.localtime(ended))})"
            if state.get("pid") and ended else "")
    since = state.get("since")
    parts = [f"Trigger watcher: running since {time.strftime('%Y-%m-%d %H:%M', time.localtime(since))}"
             if since else "Trigger watcher: running", f"pid {state.get('pid')}"]
    due = {name: moment for name, moment in (state.get("next_due") or {}).items() if isinstance(moment, (int, float))}
    if due:
        name, moment = min(due.items(), key=lambda item: item[1])
        wait = moment - time.time()
        what = "data check" if name == DATA_GROWTH else name
        parts.append(f"next {what} in {format_duration(max(1, round(wait)))}" if wait < 86400 else
                     f"next {what} {time.strftime('%Y-%m-%d %H:%M', time.localtime(moment))}")
    if state.get("iteration"):
        parts.append(f"iteration {state['iteration'].get('version') or '(starting)'} running")
    if state.get("started_by"):
        parts.append(f"started by {state['started_by']}")
    return " · ".join(parts)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from workbench.platform.detach import detach

    parser = argparse.ArgumentParser(prog="python -m workbench.pipeline.watcher")
    parser.add_argument("project")
    parser.add_argument("--started-by", default="", help="who started it, for its status")
    parser.add_argument("--on-open", action="store_true",
                        help="started because a window of the project opened: leave a project that opted out alone, "
                             "and a watcher already running is no error")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    detach()
    stamp = time.strftime('%Y-%m-%d %H:%M:%S')
    try:
        if args.on_open:
            not_wanted = wanted_on_open(args.project)
            if not_wanted:
                print(f"{stamp} watcher: not started on opening the project: {not_wanted}", flush=True)
                return 0
        watch(args.project, started_by=args.started_by)
    except WatcherRunning as exc:
        if args.on_open:  # the lock decides, however many windows opened at once
            print(f"{stamp} watcher: a trigger watcher already runs (pid {exc.pid}); it goes on", flush=True)
            return 0
        print(f"{stamp} watcher: Error: {exc}", flush=True)
        return 1
    except PipelineError as exc:
        print(f"{stamp} watcher: Error: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
