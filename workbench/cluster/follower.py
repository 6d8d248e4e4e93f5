"""The detached follower of one cluster run: ``python -m workbench.cluster.follower RUN_DIR``.

The cluster twin of the training supervisor. It detaches (a fork whose parent exits at once),
takes the run folder's ``follower.lock`` (one follower a run: a second one exits at once), keeps
an SSH connection to the run's cluster, and every second or so:

- sends a stop or terminate that was asked for (``stop-requested``, ``terminate-requested`` in
  the run folder, written by RunService);
- reads the job's state and records it in ``run.json`` and the run store (pending with the
  scheduler's reason, running);
- appends what the job wrote to ``stdout.log``, ``stderr.log`` and ``metrics.jsonl`` to the local
  files (``mirror.LogMirror``), so the Runs panel, its curves and ``runs logs -f`` need nothing
  else.

When the connection drops it reconnects with back-off; meanwhile the run keeps its state,
``RunInfo.outage`` says since when and when it tries next, and ``RunInfo.error`` says so in words
for people (the library's own message goes to follower.log). When the job has ended it copies
the rest of the logs, pulls ``checkpoints/`` and ``outputs/`` into the run folder, records the
end (completed, failed with the error line and exit code, stopped, cancelled) and exits. The
run's start and end are the job's as the scheduler (or, on a plain SSH host, the job itself)
recorded them, not the moments they were seen here: a job that ended while the cluster could not
be reached has its own duration.

Only the standard library, workbench.training and workbench.cluster modules (and, through the
connection, paramiko) are imported here.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from workbench.cluster.errors import ClusterError
from workbench.cluster.jobs import (
    CANCELLED as JOB_CANCELLED,
    COMPLETED as JOB_COMPLETED,
    FAILED as JOB_FAILED,
    PENDING as JOB_PENDING,
    RUNNING as JOB_RUNNING,
    UNKNOWN as JOB_UNKNOWN,
    WINDING_UP,
    JobState,
    Resources,
    get_backend,
)
from workbench.cluster.mirror import LogMirror, local_outputs, pull_products, read_mirror_state
from workbench.platform.detach import detach, start_detached
from workbench.platform.locks import FileLock, is_locked
from workbench.training.errors import TrainingError
from workbench.training.log_text import error_line, tail_text
from workbench.platform.processes import process_start
from workbench.training.run_end import RunRecorder, recorded_outcome, requested_end
from workbench.training.run_folder import RunFolder
from workbench.training.run_info import (
    CANCELLED,
    COMPLETED,
    FAILED,
    LOST,
    PENDING,
    RUNNING,
    STOPPING,
    TERMINATED,
    RunInfo,
)
from workbench.training.run_text import CONNECTION, SCHEDULER, outage_note

LOCK_FILE = "follower.lock"
ACQUIRE_TRIES = 20
ACQUIRE_PAUSE_S = 0.05
LOG_FILE = "follower.log"
PROFILE_FILE = "cluster.json"        # the profile as it was at the start, for when it is gone
POLL_S = 1.0
REQUEST_POLL_S = 0.1                 # stop and terminate requests are looked for this often
REQUEST_FOLLOW_S = 15.0              # after one is sent, the scheduler is asked at every poll this long
BACKOFF_S = (1, 2, 4, 8, 10)
COMMAND_TIMEOUT_S = 60
# A follower that cannot reach the cluster for this long gives up; the runs list starts a new
# one the next time someone looks.
GIVE_UP_S = 6 * 3600
# The notes a follower leaves in RunInfo.error while it cannot follow (cleared once it can);
# the first two are the words of earlier versions.
LOST_NOTE = "Lost the connection to "
NO_ANSWER_NOTE = "Cannot follow the job on "
GAVE_UP_NOTE = "Not followed since "
_NOTES = (LOST_NOTE, NO_ANSWER_NOTE, GAVE_UP_NOTE)
FETCHING = "the job has ended; fetching its checkpoints and outputs"
_SCHEDULER_LINES = ("srun: ", "slurmstepd: ", "slurmstepd-")


class Follower:
    def __init__(self, folder: RunFolder, connect=None):
        self.folder = folder
        self.record = RunRecorder(folder, "follower")
        self.info = folder.read_info()
        self.backend = get_backend(self.info.backend)
        self._connect_with = connect or connect_to_cluster
        self.conn = None
        self._sftp = None
        self._stop_sent = False
        self._terminate_sent = False
        self._unreachable_since: float | None = None
        self._failures = 0
        self._last_state: JobState | None = None
        self._last_asked = 0.0
        self._ask_until = 0.0   # the scheduler is asked at every poll until then (after a request)
        self._resend_stop_at: float | None = None

    # -----------------------------------------------------------------------------------------

    def run(self) -> int:
        self.info.supervisor_pid = os.getpid()
        self.info.supervisor_start = process_start(os.getpid())
        self._save()
        mirror = LogMirror(self.folder, self.info.remote_run_dir, self.info.metrics_source)
        while True:
            try:
                conn = self._connection()
                self._send_requests(conn)
                job = self._job_state(conn)
                self._reachable()
                if not job.ended:
                    # The state first: what the logs say never runs ahead of it.
                    self._update(job)
                mirror.stop_requested = self.folder.stop_requested.exists() and \
                    not self.folder.terminate_requested.exists()
                mirror.poll(self._sftp_of(conn), final=job.ended)
                self.info.metrics_source = mirror.metrics_source
                if job.ended:
                    self._finish(conn, job)
                    return 0
            except Exception as exc:  # noqa: BLE001 - any failure of the connection or the cluster
                if not _is_connection_problem(exc):
                    raise
                if self._unreachable(exc):
                    return 1
                continue
            self._sleep(POLL_S)

    # -----------------------------------------------------------------------------------------
    # the connection

    def _connection(self):
        if self.conn is None:
            self.conn = self._connect_with(self.info, self.folder)
            self._sftp = None
            _log(f"connected to {self.info.cluster}")
        return self.conn

    def _sftp_of(self, conn):
        if self._sftp is None:
            self._sftp = conn.sftp()
            try:
                self._sftp.get_channel().settimeout(COMMAND_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a connection without a channel to tune
                pass
        return self._sftp

    def _drop_connection(self) -> None:
        conn, self.conn, self._sftp = self.conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - it is broken already
                pass

    def _unreachable(self, exc: BaseException) -> bool:
        """Note in the run that it cannot be followed for now, and wait before the next
        attempt (longer each time); True when it is time to give up."""
        from workbench.cluster.errors import ConnectionLost

        lost = not isinstance(exc, ClusterError) or isinstance(exc, ConnectionLost) or self.conn is None
        if lost:
            self._drop_connection()
        now = time.time()
        if self._unreachable_since is None:
            self._unreachable_since = now
        self._failures += 1
        delay = BACKOFF_S[min(self._failures - 1, len(BACKOFF_S) - 1)]
        reason = _one_line(exc)
        # The log says what happened; the advice in an error's later sentences is for people
        # retrying by hand, and this process retries by itself. The run's note says it in
        # words for people.
        what = reason.split(". ")[0].rstrip(".")
        _log(f"{what}; {'reconnecting' if lost else 'trying again'} in {delay} s")
        self._refresh_info()
        if now - self._unreachable_since > GIVE_UP_S:
            since = time.strftime("%Y-%m-%d %H:%M", time.localtime(self._unreachable_since))
            hours = round((now - self._unreachable_since) / 3600)
            self.info.outage = {}
            self.info.error = (f"{GAVE_UP_NOTE}{since}: {self.info.cluster} could not be reached for {hours} hours. "
                               "The job may go on there; listing the runs follows it again.")
            self._save()
            return True
        self.info.outage = {"kind": CONNECTION if lost else SCHEDULER, "since": round(self._unreachable_since, 3),
                            "last_try": round(now, 3), "next_try": round(now + delay, 3)}
        self.info.error = outage_note(self.info, now)
        self._save()
        self._sleep(delay)
        return False

    def _reachable(self) -> None:
        if self._unreachable_since is not None or self.info.outage or self.info.error.startswith(_NOTES):
            self._unreachable_since, self._failures = None, 0
            if self.info.outage or self.info.error.startswith(_NOTES):
                self.info.outage, self.info.error = {}, ""
                self._save()

    # -----------------------------------------------------------------------------------------
    # requests, state, end

    def _job_state(self, conn) -> JobState:
        """The job's state: from its files (no process on the cluster) between the scheduler's
        answers, which are asked for every ``backend.state_interval`` seconds, after a request
        was sent, and whenever the files cannot tell or say the job has ended."""
        now = time.monotonic()
        if self._last_state is not None and now - self._last_asked < self.backend.state_interval \
                and now > self._ask_until:
            quick = self.backend.quick_state(self._sftp_of(conn), self.info.job_id, self.info.remote_run_dir)
            if quick is None:
                return self._last_state
            if not quick.ended:
                if quick.state != self._last_state.state:
                    self._last_state = JobState(quick.state, "", None, 0, quick.scheduler_state)
                return self._last_state
        job = self.backend.state(conn, self.info.job_id, self.info.remote_run_dir)
        if self._last_state is None or (job.scheduler_state, job.reason) != (self._last_state.scheduler_state,
                                                                           self._last_state.reason):
            _log(f"job {self.info.job_id}: {job.scheduler_state or job.state}"
                 + (f" ({job.reason})" if job.reason else ""))
        self._last_state, self._last_asked = job, time.monotonic()
        return job

    def _send_requests(self, conn) -> None:
        job = (conn, self.info.job_id, self.info.remote_run_dir)
        stop = functools.partial(self.backend.stop, processes=Resources.from_json(self.info.resources).world_size)
        if not self._terminate_sent and self.folder.terminate_requested.exists():
            self._request("terminate", self.backend.cancel, *job)
            self._terminate_sent, self._ask_until = True, time.monotonic() + REQUEST_FOLLOW_S
        elif self._stop_sent and self._resend_stop_at is not None and time.monotonic() >= self._resend_stop_at \
                and self.info.state == STOPPING and not self.folder.terminate_requested.exists():
            self._request("stop", stop, *job)
            self._resend_stop_at = time.monotonic() + self.backend.stop_resend_s
        elif not self._stop_sent and self.folder.stop_requested.exists():
            if self.info.state == PENDING:
                # A job that has not started has nothing to save: it leaves the queue.
                self._request("stop", self.backend.cancel, *job)
            else:
                self._request("stop", stop, *job)
            self._stop_sent, self._ask_until = True, time.monotonic() + REQUEST_FOLLOW_S
            resend = getattr(self.backend, "stop_resend_s", None)
            self._resend_stop_at = None if resend is None else time.monotonic() + resend
            if self.info.state != STOPPING:
                self.info.state = STOPPING
                self._save()

    @staticmethod
    def _request(what: str, action, *args) -> None:
        """Send a stop or terminate. The cluster refusing it (the job has just ended) is
        logged, not retried; a dropped connection is, after reconnecting."""
        from workbench.cluster.errors import ConnectionLost

        try:
            action(*args)
        except ConnectionLost:
            raise
        except ClusterError as exc:
            _log(f"{what}: {_one_line(exc)}")

    def _update(self, job: JobState) -> None:
        before = self.info.to_json()
        self.info.scheduler_state, self.info.scheduler_reason = job.scheduler_state, job.reason
        if self.info.state != STOPPING:
            if job.state == JOB_PENDING:
                self.info.state = PENDING
            elif job.state == JOB_RUNNING:
                self.info.state = RUNNING
        if job.state == JOB_RUNNING and job.scheduler_state not in WINDING_UP:
            self._started(job.started_at or time.time(), known=job.started_at is not None)
        if self.info.to_json() != before:
            self._save()

    def _started(self, when: float, known: bool) -> None:
        """Record that the job (this segment of the run) began at ``when``: a time the scheduler
        or the job recorded (``known``) replaces the moment it was first seen here."""
        if self.info.segment_started_at is None or known:
            self.info.segment_started_at = when
        # A run resumed in the same run keeps its first segment's start.
        if self.info.started_at is None or (known and not self.info.resumes):
            self.info.started_at = when

    def _finish(self, conn, job: JobState) -> None:
        """Pull the products, then record how the run ended (the run stays active meanwhile,
        so that whoever waits for its end finds its checkpoints and outputs here)."""
        if self.info.scheduler_state != job.scheduler_state or self.info.scheduler_reason != FETCHING:
            self.info.scheduler_state, self.info.scheduler_reason = job.scheduler_state, FETCHING
            self._save()
        report = pull_products(conn, self.info.remote_run_dir, self.folder)
        self._refresh_info()
        info = self.info
        info.scheduler_state, info.scheduler_reason = job.scheduler_state, job.reason
        state, error = self._outcome(job)
        if job.signal:
            exit_code = -job.signal
        elif job.state == JOB_CANCELLED and job.exit_code == 0:
            # Slurm's "0:0" for a job it cancelled says nothing of how the trainer ended.
            exit_code = None
        else:
            exit_code = job.exit_code
        # When the job ended, not when that was seen here (the cluster may have been out of
        # reach then).
        info.ended_at = job.ended_at or time.time()
        if job.state in (JOB_COMPLETED, JOB_FAILED) or info.segment_started_at is not None:
            # It ran: it has an exit status, or it was seen running. A job never seen running
            # that was cancelled, or whose end is unknown, never trained.
            if job.started_at is not None:
                self._started(min(job.started_at, info.ended_at), known=True)
            elif info.started_at is None or info.segment_started_at is None:
                # It ran between two looks, and nothing says when it began.
                self._started(info.ended_at, known=False)
        info.products = local_outputs(self.folder)
        info.pulled_at = time.time()
        _log(f"run {state}; fetched {len(report.fetched)} files ({report.bytes_fetched} bytes)")
        self.record.end(info, state, error, exit_code, ended_at=info.ended_at)

    def _outcome(self, job: JobState) -> tuple[str, str]:
        # A job that ended by itself with status 0 before the terminate reached it (a stop asked
        # for first had done its work) ended as it says, not terminated.
        requested = requested_end(self.folder, ended_by_itself=(
            job.state == JOB_COMPLETED and job.exit_code == 0 and not job.signal))
        if requested is not None and requested[0] == TERMINATED:
            return (CANCELLED if self.info.backend == "slurm" else TERMINATED), ""
        if requested is not None:
            if job.state in (JOB_CANCELLED, JOB_UNKNOWN) and self.info.started_at is None:
                return CANCELLED, "stopped before it started: the job left the queue"
            return requested
        if job.state == JOB_COMPLETED:
            return COMPLETED, ""
        if job.state == JOB_CANCELLED:
            return CANCELLED, "cancelled on the cluster" + (f" ({job.reason})" if job.reason else "")
        if job.state == JOB_FAILED:
            return FAILED, self._error(job)
        segment = self.info.segment_started_at or self.info.started_at or self.info.created_at
        outcome = recorded_outcome(self.folder, segment, slack=60)
        if outcome is not None:
            return outcome[0], ""
        return LOST, (f"The job's end was not seen: {job.reason or 'the cluster no longer knows it'}. Its logs, "
                      "metrics, checkpoints and outputs are kept.")

    def _error(self, job: JobState) -> str:
        start = int(read_mirror_state(self.folder).get("stderr_segment", 0))
        text = tail_text(self.folder.stderr_log, start)
        trainer_lines = "\n".join(line for line in text.splitlines() if not line.startswith(_SCHEDULER_LINES))
        line = error_line(trainer_lines) or error_line(text)
        special = job.scheduler_state not in ("FAILED", "EXITED", "") and job.reason
        if special:
            return f"{job.reason}" + (f": {line}" if line else "")
        if line:
            return line
        if job.signal:
            name = signal.Signals(job.signal).name if job.signal in signal.Signals._value2member_map_ else \
                f"signal {job.signal}"
            return f"the job was killed by {name}"
        if job.exit_code is not None:
            return f"the job exited with status {job.exit_code}"
        return job.reason or "the job failed"

    # -----------------------------------------------------------------------------------------

    def _refresh_info(self) -> None:
        """Take what others wrote meanwhile (a resume's fields) without losing ours."""
        try:
            current = self.folder.read_info()
        except TrainingError:
            return
        current.supervisor_pid, current.supervisor_start = self.info.supervisor_pid, self.info.supervisor_start
        current.metrics_source = self.info.metrics_source or current.metrics_source
        self.info = current

    def _save(self) -> None:
        self.record.save(self.info)

    def _unsent_requests(self) -> set[str]:
        """The requests asked for here (stop, terminate) that have not reached the cluster."""
        unsent = set()
        if not self._terminate_sent and self.folder.terminate_requested.exists():
            unsent.add("terminate")
        if not self._stop_sent and self.folder.stop_requested.exists():
            unsent.add("stop")
        return unsent

    def _sleep(self, seconds: float) -> None:
        """Sleep, waking early for a stop or terminate asked for meanwhile. One that was waiting
        already (the cluster could not be reached to send it) waits for the next attempt like
        the rest: waking for it would turn an outage's back-off into a busy loop."""
        waiting = self._unsent_requests()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._unsent_requests() - waiting:
                return
            time.sleep(min(REQUEST_POLL_S, max(0.0, deadline - time.monotonic())))


# ---------------------------------------------------------------------------------------------
# connecting


def run_profile(info: RunInfo, folder: RunFolder):
    """The profile of the run's cluster: the user's current one (they may have fixed a host or
    a key since), else the copy kept in the run folder when the profile is gone."""
    from workbench.cluster.profiles import ClusterProfile, get_profile

    try:
        return get_profile(info.cluster)
    except ClusterError:
        try:
            data = json.loads((folder.path / PROFILE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise ClusterError(f"The cluster profile {info.cluster!r} of run {info.id} is gone. Add it again "
                               f"with `workbench cluster add {info.cluster} …` to follow the run.") from None
        return ClusterProfile.from_json(data)


def connect_to_cluster(info: RunInfo, folder: RunFolder):
    from workbench.cluster.connection import ClusterConnection

    conn = ClusterConnection(run_profile(info, folder))
    conn.connect()
    return conn


def _is_connection_problem(exc: BaseException) -> bool:
    """Whether ``exc`` says the cluster could not be reached or talked to (worth retrying)."""
    if isinstance(exc, (ClusterError, OSError, EOFError, TimeoutError)):
        return True
    paramiko = sys.modules.get("paramiko")
    return paramiko is not None and isinstance(exc, paramiko.SSHException)


def _log(message: str) -> None:
    """A line in follower.log (the follower's stderr)."""
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


# ---------------------------------------------------------------------------------------------
# one follower a run


class FollowerLock:
    """``follower.lock`` in the run folder, held by the run's follower while it lives (the
    system lets it go when the follower ends, however it ends)."""

    def __init__(self, folder: RunFolder):
        self._lock = FileLock(folder.path / LOCK_FILE, mode=0o644)
        self.path = self._lock.path

    def acquire(self) -> bool:
        """Take the lock; False when another follower holds it."""
        # is_followed() probes with a shared lock held for an instant, so one failed try may be
        # a probe, not a follower: only a lock still held after a while belongs to a follower.
        return self._lock.try_acquire(tries=ACQUIRE_TRIES, pause_s=ACQUIRE_PAUSE_S)

    def release(self) -> None:
        self._lock.release()


def is_followed(run_dir: Path | str) -> bool:
    """Whether a follower holds the run's lock now."""
    return is_locked(Path(run_dir) / LOCK_FILE)


def start_follower(run_dir: Path | str) -> None:
    """Start the follower of the run at ``run_dir``, detached from this process (it outlives
    the window or command that started it). Returns at once, while the follower's Python starts
    (that is a good part of a submission's time, and the job needs nothing of it); a follower
    already following the run makes the new one exit at once."""
    folder = RunFolder(Path(run_dir))
    start_detached("workbench.cluster.follower", [str(folder.path)], folder.path / LOG_FILE, cwd=folder.path,
                   wait=False)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m workbench.cluster.follower RUN_DIR", file=sys.stderr)
        return 2
    folder = RunFolder(Path(args[0]).resolve())
    detach()
    try:
        # A watcher in the background: the window, the command line and the job come first.
        os.nice(5)
    except OSError:
        pass
    import faulthandler

    # `kill -USR1 PID` writes where it is to follower.log: a follower that seems stuck says why.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    lock = FollowerLock(folder)
    if not lock.acquire():
        return 0  # another follower has the run
    try:
        info = folder.read_info()
        if not info.is_active or not info.job_id:
            return 0
        return Follower(folder).run()
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
