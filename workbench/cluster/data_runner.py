"""Landing uploads on the cluster while the next ones are still on their way.

Unpacking a bundle of small files and checking a resumed large file (``data_transfer``) happen on
the cluster, in shell. A remote command through a login shell costs from a few hundred
milliseconds to seconds (the shell's start-up files: conda, modules, pyenv), so instead of one
command per job, ``RemoteApplier`` keeps one **runner** command going for a whole sync and feeds
it jobs through small files in the staging folder.
"""

from __future__ import annotations

import shlex
import threading
import time
from dataclasses import dataclass

from workbench.cluster.data_selection import STAGING_NAME
from workbench.cluster.data_transfer import STALE_STAGING_MINUTES, BundleJob, VerifyJob, is_missing, last_line

_RUNNER = r"""
wb_bundle() {
  s="$STAGING/$2"
  if out=$( { rm -rf -- "$s" && mkdir -p -- "$s" && tar -xf "$s.tar" -C "$s" --no-same-owner &&
              cd -- "$s" && R="$R" sh ./apply.sh; } 2>&1 ); then
    echo "WB-OK $1"
  else
    echo "WB-BAD $1 $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
  fi
  rm -rf -- "$s" "$s.tar"
}
wb_verify() {
  h=$(sha256sum < "$2" 2>/dev/null) || h=""
  if [ "${h%% *}" = "$4" ]; then
    if out=$(mv -f -- "$2" "$3" 2>&1); then
      echo "WB-OK $1"
    else
      echo "WB-BAD $1 $(printf '%s' "$out" | tr '\n' ' ')"
    fi
  else
    rm -f -- "$2"; echo "WB-MISMATCH $1"
  fi
}
find "$STAGING" -mindepth 1 -maxdepth 1 -mmin +STALE_MINUTES -exec rm -rf -- {} + 2>/dev/null
idle=0
while :; do
  if [ -f "$JOBS/$n" ]; then
    out=$(. "$JOBS/$n")
    printf '%s\n' "$out"
    printf '%s\n' "$out" >> "$JOBS/results"
    rm -f -- "$JOBS/$n"
    n=$((n + 1)); idle=0
  elif [ -e "$JOBS/end" ]; then
    rm -rf -- "$JOBS"; echo "WB-END $n"; exit 0
  else
    sleep 0.05; idle=$((idle + 1))
    if [ "$idle" -ge IDLE_POLLS ]; then echo "WB-IDLE $n"; exit 0; fi
  fi
done
"""


@dataclass
class Landed:
    """The outcome of one job: ``ok``; ``mismatch`` for a resumed file whose check failed (it is
    sent again from the start); ``problem`` says what went wrong otherwise."""

    job: BundleJob | VerifyJob
    ok: bool
    mismatch: bool = False
    problem: str = ""


class RemoteApplier:
    """Unpacks bundles and checks resumed files on the cluster while the caller keeps uploading.

    A remote command through a login shell costs from a few hundred milliseconds to seconds (the
    shell's start-up files), so one **runner** command is started on a worker thread at the first
    job and kept going: each job is a small file ``<n>`` in ``.wb-staging/<session>.jobs/``, put
    there over SFTP (written aside, then renamed, so the runner never reads half of one), and
    the runner takes them in order, polling every 50 ms, until an ``end`` file says there are
    no more (or a minute passes without a job: the next job starts a new runner). Outcomes are
    printed, and appended to a ``results`` file that ``collect()`` reads now and then.

    Bundles are not hashed again on the cluster: SSH already checks every byte in transit, and a
    bundle is only handed over after the cluster acknowledged all of its writes.
    """

    RESULTS_EVERY_S = 2.0
    IDLE_S = 60

    def __init__(self, conn, sftp, root: str, session: str):
        self.conn = conn
        self.sftp = sftp
        self.root = root
        self.jobs_dir = f"{STAGING_NAME}/{session}.jobs"
        self._jobs: list[BundleJob | VerifyJob] = []
        self._landed: dict[int, Landed] = {}
        self._handed: set[int] = set()
        self._results_offset = 0
        self._results_read = time.monotonic()
        self._failure: BaseException | None = None
        self._closing = False
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the runner now, so the login shell's start-up overlaps the first uploads."""
        if self._thread is None:
            # Only this user may put jobs there: the runner executes them.
            self.sftp.mkdir(f"{self.root}/{self.jobs_dir}", 0o700)
            self._thread = threading.Thread(target=self._work, name="data-sync-runner", daemon=True)
            self._thread.start()

    def submit(self, job: BundleJob | VerifyJob) -> None:
        """Hand ``job`` to the runner (from the thread that uses the SFTP client)."""
        self.raise_failure()
        self.start()
        number = len(self._jobs)
        self._write(str(number), _job_line(number, job) + "\n")
        with self._condition:
            self._jobs.append(job)
            self._condition.notify()

    def collect(self) -> list[Landed]:
        """Outcomes not handed out yet, as far as known (read from the cluster every few seconds)."""
        if self._jobs and time.monotonic() - self._results_read >= self.RESULTS_EVERY_S:
            self._results_read = time.monotonic()
            self._read_results()
        return self._hand_out()

    def finish(self) -> list[Landed]:
        """Tell the runner there are no more jobs, wait for it, and return the outcomes left;
        then ``raise_failure()`` says whether the runner was cut off."""
        if self._thread is not None and self._failure is None:
            self._write("end", "")
        with self._condition:
            self._closing = True
            self._condition.notify()
        if self._thread is not None:
            self._thread.join()
        return self._hand_out()

    def raise_failure(self) -> None:
        """Raise what stopped the runner (a lost connection), if anything did."""
        with self._condition:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _write(self, name: str, text: str) -> None:
        final = f"{self.root}/{self.jobs_dir}/{name}"
        with self.sftp.open(final + ".tmp", "wb") as out:
            out.write(text.encode("utf-8"))
        self.sftp.posix_rename(final + ".tmp", final)

    def _read_results(self) -> None:
        try:
            with self.sftp.open(f"{self.root}/{self.jobs_dir}/results", "rb") as results:
                results.seek(self._results_offset)
                data = results.read()
        except OSError as exc:
            if is_missing(exc):
                return
            raise
        complete = data[: data.rfind(b"\n") + 1]
        self._results_offset += len(complete)
        self._parse(complete.decode("utf-8", "replace"))

    def _hand_out(self) -> list[Landed]:
        with self._condition:
            numbers = sorted(n for n in self._landed if n not in self._handed)
            self._handed.update(numbers)
            return [self._landed[n] for n in numbers]

    def _parse(self, text: str) -> int | None:
        """Record the outcomes in ``text``; returns where the runner stopped, if it said so."""
        stopped = None
        for line in text.splitlines():
            word, _, rest = line.partition(" ")
            number, _, problem = rest.partition(" ")
            if not number.isdigit():
                continue
            n = int(number)
            if word in ("WB-END", "WB-IDLE"):
                stopped = n
            elif word in ("WB-OK", "WB-BAD", "WB-MISMATCH") and n < len(self._jobs):
                with self._condition:
                    self._landed.setdefault(n, Landed(self._jobs[n], ok=word == "WB-OK",
                                                      mismatch=word == "WB-MISMATCH", problem=problem.strip()))
        return stopped

    def _work(self) -> None:
        start = 0
        while True:
            try:
                result = self.conn.run(self._script(start), check=False)
            except BaseException as exc:  # reported on the caller's thread by raise_failure()
                with self._condition:
                    self._failure = exc
                return
            stopped = self._parse(result.stdout)
            with self._condition:
                if stopped is None:
                    problem = last_line(result.stderr) or f"the command ended with exit status {result.code}"
                    for n in range(start, len(self._jobs)):
                        self._landed.setdefault(n, Landed(self._jobs[n], ok=False, problem=problem))
                    stopped = len(self._jobs)
                start = stopped
                if "WB-END" in result.stdout:
                    return
                # The runner went idle: start another when a job comes, unless all is done.
                while start >= len(self._jobs) and not self._closing:
                    self._condition.wait()
                if start >= len(self._jobs):
                    return

    def _script(self, start: int) -> str:
        body = (_RUNNER.replace("STALE_MINUTES", str(STALE_STAGING_MINUTES))
                .replace("IDLE_POLLS", str(int(self.IDLE_S / 0.05))))
        return "\n".join([f"R={shlex.quote(self.root)}", 'cd -- "$R" || exit 3', f"STAGING={STAGING_NAME}",
                          f"JOBS={shlex.quote(self.jobs_dir)}", f"n={start}", body])


def _job_line(number: int, job: BundleJob | VerifyJob) -> str:
    if isinstance(job, BundleJob):
        return f"wb_bundle {number} {shlex.quote(job.name)}"
    return f"wb_verify {number} {shlex.quote(job.temporary)} {shlex.quote(job.item.path)} {job.sha256}"
