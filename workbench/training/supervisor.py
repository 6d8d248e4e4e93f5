"""The detached parent of one run: ``python -m workbench.training.supervisor RUN_DIR``.

It detaches (a fork whose parent exits at once, in the session the runner gave it), starts the
trainer as the leader of its own process group with its output going straight into
``stdout.log`` and ``stderr.log``, and waits for it. Meanwhile it turns the metric lines of
``stdout.log`` into ``metrics.jsonl`` records when the trainer does not write that file itself,
and when the trainer ends it records how: completed, failed (with the error line), stopped
(``stop-requested`` was there) or terminated (``terminate-requested`` was there).

The trainer writes to the log files itself rather than through a pipe, so a supervisor that is
killed takes nothing with it: the trainer trains on, its output is kept, and the runs list
reconciles the run's state later.

Only the standard library, the platform layer and workbench.training modules are imported
here: this starts for every run, and a run should start in well under a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from workbench.platform.detach import detach
from workbench.training.log_text import error_line, tail_text
from workbench.training.log_patterns import GrowingLog, PrintedOutput, patterns_of_run
from workbench.training.metrics import PrintedMetrics, last_step
from workbench.training.metrics_writer import RunMetricsWriter
from workbench.platform.processes import process_start, signal_group, signal_name
from workbench.training.processes import kill_run, stop_run
from workbench.training.run_folder import RunFolder
from workbench.training.run_end import RunRecorder, requested_end
from workbench.training.run_info import COMPLETED, FAILED, RUNNING, STOPPING
from workbench.training.working_folder import WorkingFolderWatcher

RUN_VARIABLES = ("WORKBENCH_RUN_DIR", "WORKBENCH_RUN_ID", "WORKBENCH_RESUME_FROM")
# How often the stdout log is read for metric lines: a metric reaches metrics.jsonl within this.
PARSE_INTERVAL_S = 0.05
# How often a stop request is looked for when there is no log to parse.
IDLE_INTERVAL_S = 0.25


class StdoutMetrics:
    """Turns the metric lines a trainer prints into metrics.jsonl records, unless the trainer
    writes metrics.jsonl itself (the training helpers create it before their first step)."""

    def __init__(self, folder: RunFolder, source: str, log_offset: int, writer: RunMetricsWriter | None = None,
                 stderr_offset: int | None = None):
        self.folder = folder
        # Shared with the run's other metric sources (TensorBoard events); closed by its owner.
        self._writer = writer or RunMetricsWriter(folder)
        self.source = source  # "" until the first metric line decides, then "stdout" or "trainer"
        # Both logs: tqdm draws its bars on stderr.
        self._logs = {"stdout": GrowingLog(folder.stdout_log, log_offset)}
        if stderr_offset is not None:
            self._logs["stderr"] = GrowingLog(folder.stderr_log, stderr_offset)
        self._printed = PrintedMetrics(last_step(folder.metrics) if source == "stdout" else None)
        self._output = PrintedOutput(patterns_of_run(folder.read_info().project_dir), self._printed.previous_step)

    def poll(self, final: bool = False) -> bool:
        """Read what was printed since the last call; False once the trainer owns the file."""
        texts = {stream: log.read(final) for stream, log in self._logs.items()}
        # Only after reading: a trainer that writes metrics.jsonl creates it before it prints
        # any step, so a file seen now was there before the lines just read were printed.
        if self.source == "" and self._writer.written_by_others():
            self.source = "trainer"
        if self.source == "trainer":
            self.close()
            return False
        for stream, text in texts.items():
            for record in self._output.feed(text, stream, final):
                self._write(record)
        return True

    def _write(self, record: dict) -> None:
        if self._writer.write("stdout", self._printed.record(record)):
            self.source = "stdout"

    def close(self) -> None:
        for log in self._logs.values():
            log.close()


class Supervisor:
    def __init__(self, folder: RunFolder):
        self.folder = folder
        self.info = folder.read_info()
        self.record = RunRecorder(folder, "supervisor")
        self.process: subprocess.Popen | None = None
        self._exited = threading.Event()
        self._stop_seen = False

    def run(self) -> int:
        # (SIGINT and SIGHUP keep their defaults: in a session of its own, with no terminal,
        # nothing sends them, and an ignored signal would stay ignored in the trainer.)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self.info.supervisor_pid = os.getpid()
        self.info.supervisor_start = process_start(os.getpid())
        self._save()
        try:
            stdout_offset, stderr_offset = self._start_trainer()
        except OSError as exc:
            message = f"the trainer could not be started: {exc.strerror or exc}"
            with open(self.folder.stderr_log, "a", encoding="utf-8") as log:
                log.write(f"error: {message}\n")
            self._finish(FAILED, None, f"error: {message}")
            return 1
        writer = RunMetricsWriter(self.folder)
        metrics = None
        if self.info.metrics_source != "trainer":
            metrics = StdoutMetrics(self.folder, self.info.metrics_source, stdout_offset, writer, stderr_offset)
        watcher = WorkingFolderWatcher(self.folder, self.folder.read_command()["cwd"], self.info.segment_started_at,
                                       writer, say=self._say)
        watcher.start()
        while not self._exited.wait(PARSE_INTERVAL_S if metrics else IDLE_INTERVAL_S):
            if metrics is not None and not metrics.poll():
                metrics = None
            self._notice_stop()
        code = self.process.returncode
        # Whatever the trainer left running in its group (a stray worker) ends with it.
        signal_group(self.info.pgid, None, signal.SIGKILL)
        if metrics is not None:
            metrics.poll(final=True)
            metrics.close()
            self.info.metrics_source = metrics.source
        watcher.finish()
        self.info.event_files = [*self.info.event_files,
                                 *(name for name in watcher.event_files if name not in self.info.event_files)]
        if self.info.metrics_source == "" and writer.written_by_others():
            self.info.metrics_source = "trainer"
        writer.close()
        state, error = self._outcome(code, stderr_offset)
        self._finish(state, code, error)
        return 0

    def _start_trainer(self) -> tuple[int, int]:
        command = self.folder.read_command()
        env = dict(os.environ)
        for name in RUN_VARIABLES:  # from whoever started Workbench; only this run's count
            env.pop(name, None)
        env.update(command.get("env", {}))
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        out = os.open(self.folder.stdout_log, flags, 0o644)
        err = os.open(self.folder.stderr_log, flags, 0o644)
        try:
            # A segment of a resumed run starts on a line of its own, so its output never runs
            # on from the last line of the segment before (cut off by a crash or a full disk).
            offsets = (_start_on_a_new_line(out, self.folder.stdout_log),
                       _start_on_a_new_line(err, self.folder.stderr_log))
            self.process = subprocess.Popen(command["argv"], cwd=command["cwd"], env=env, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err, process_group=0, close_fds=True)
        finally:
            os.close(out)
            os.close(err)
        self.info.pid = self.info.pgid = self.process.pid
        # Read before anything can reap it: a trainer that fails at once is still a zombie here.
        self.info.pid_start = process_start(self.process.pid)
        threading.Thread(target=self._wait_for_trainer, daemon=True).start()
        now = time.time()
        if self.info.started_at is None:  # a resumed run keeps its first start
            self.info.started_at = now
        self.info.segment_started_at = now
        self.info.state = RUNNING
        self._save()
        # A stop or terminate asked for while the run was starting had no group to signal yet.
        if self.folder.terminate_requested.exists():
            kill_run(self.info.pgid, self.info.pid_start)
        elif self.folder.stop_requested.exists():
            self._stop_seen = True
            self.info.state = STOPPING
            self._save()
            stop_run(self.info.pgid, self.info.pid_start, self.info.nproc)
        return offsets

    def _wait_for_trainer(self) -> None:
        self.process.wait()
        self._exited.set()

    def _notice_stop(self) -> None:
        if not self._stop_seen and self.folder.stop_requested.exists():
            self._stop_seen = True
            self.info.state = STOPPING
            self._save()

    def _on_sigterm(self, signum, frame) -> None:
        # Being asked to end (a shutdown, a kill) is a stop of the run: checkpoint, then exit.
        try:
            self.folder.stop_requested.touch()
        except OSError:
            pass
        if self.info.pgid:
            stop_run(self.info.pgid, self.info.pid_start, self.info.nproc)

    def _outcome(self, code: int, stderr_offset: int) -> tuple[str, str]:
        requested = requested_end(self.folder, ended_by_itself=code == 0)
        if requested is not None:
            return requested
        if code == 0:
            return COMPLETED, ""
        error = error_line(tail_text(self.folder.stderr_log, stderr_offset))
        if not error:
            if code < 0:
                name = signal_name(-code)
                error = f"the trainer was killed by {name}" + (
                    " (out of memory?)" if -code == signal.SIGKILL else "")
            else:
                error = f"the trainer exited with status {code}"
        return FAILED, error

    def _say(self, text: str) -> None:
        # In the run's log, where the user reads about the run (as a resume is said there).
        with open(self.folder.stdout_log, "a", encoding="utf-8") as log:
            log.write(f"workbench: {text}\n")

    def _finish(self, state: str, code: int | None, error: str) -> None:
        self.record.end(self.info, state, error, code)

    def _save(self) -> None:
        self.record.save(self.info)


def _start_on_a_new_line(log: int, path: Path) -> int:
    """The size of the log ``path`` (open for appending at ``log``), after ending its last line
    if it had no end."""
    size = os.fstat(log).st_size
    if size:
        with open(path, "rb") as handle:
            handle.seek(size - 1)
            last = handle.read(1)
        if last != b"\n":
            size += os.write(log, b"\n")
    return size


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m workbench.training.supervisor RUN_DIR", file=sys.stderr)
        return 2
    folder = RunFolder(Path(args[0]).resolve())
    # The run's parent is the detached child, so no window or terminal ever has to reap it.
    detach()
    try:
        return Supervisor(folder).run()
    except Exception:
        traceback.print_exc()
        _record_own_failure(folder)
        return 1


def _record_own_failure(folder: RunFolder) -> None:
    try:
        info = folder.read_info()
        if info.state in (RUNNING, STOPPING) and info.pid:
            return  # the trainer goes on; the runs list reconciles its state later
        info.state, info.ended_at = FAILED, time.time()
        info.error = f"Workbench could not supervise the run; see {folder.supervisor_log}"
        RunRecorder(folder, "supervisor").save(info)
    except Exception:
        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
