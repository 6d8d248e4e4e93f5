"""How a run reads to a person, the same in the CLI, the Runs table and a run's details: its state
with what is going on ("running · reconnecting"), the note while its cluster cannot be reached,
its exit status, and the scheduler's word for its job.

Qt-free; takes RunInfo (or anything with its fields).
"""

from __future__ import annotations

import math
import time
from datetime import datetime

from workbench.platform.processes import signal_name
from workbench.training.run_info import STOPPED, TERMINATED

# RunInfo.outage["kind"]: the follower lost the link, or the cluster does not answer about the job.
CONNECTION = "connection"
SCHEDULER = "scheduler"
_DOING = {CONNECTION: "reconnecting", SCHEDULER: "no answer"}


def state_text(info) -> str:
    """The run's state, with what its follower is going through: "running · reconnecting"
    while it has lost the link to the cluster, "running · no answer" while the cluster does
    not answer about the job."""
    doing = _DOING.get(_outage(info).get("kind"))
    return f"{info.state} · {doing}" if doing else info.state


def outage_note(info, now: float | None = None) -> str:
    """What the run's follower is going through, for people: "Lost the connection to lab at
    12:15; reconnecting (last try 12:16, next in 8 s). The job keeps running on the cluster.";
    "" when it can follow the run."""
    outage = _outage(info)
    if not outage:
        return ""
    now = time.time() if now is None else now
    since = _clock(outage.get("since"), now)
    tries = []
    if outage.get("last_try"):
        tries.append(f"last try {_clock(outage['last_try'], now)}")
    if isinstance(outage.get("next_try"), (int, float)):
        wait = math.ceil(outage["next_try"] - now)
        tries.append(f"next in {wait} s" if wait > 0 else "trying again now")
    tried = f" ({', '.join(tries)})" if tries else ""
    if outage.get("kind") == CONNECTION:
        text = f"Lost the connection to {info.cluster} at {since}; reconnecting{tried}."
    else:
        who = f"Slurm on {info.cluster}" if info.backend == "slurm" else info.cluster
        text = f"{who} has not said how the job is doing since {since}; asking again{tried}."
    if info.state == "pending":
        return text + " The job keeps its place in the queue there."
    return text + " The job keeps running on the cluster."


def problem_text(info, now: float | None = None) -> str:
    """What to tell about the run beside its state: the outage note while there is one, else
    its error ("" when none)."""
    return outage_note(info, now) or info.error


def exit_code_text(info) -> str:
    """The run's exit status: "0", "1", "-9 (killed by SIGKILL)"; "-" when it has none (it
    was killed before it could end, or never ran)."""
    code = info.exit_code
    if code is None:
        return "-"
    if code < 0:
        return f"{code} (killed by {signal_name(-code)})"
    return str(code)


def scheduler_text(info) -> str:
    """The scheduler's state of a cluster run's job and its reason, as "pending (Resources)";
    a stop that Workbench asked for reads "completed (stopped on request)", not as a job that
    merely completed. "" for a local run."""
    if not getattr(info, "is_cluster", False):
        return ""
    word = (info.scheduler_state or info.state).lower()
    reason = info.scheduler_reason
    if info.state == STOPPED and word in ("completed", "exited"):
        reason = "stopped on request"
    elif info.state == TERMINATED and word == "gone":
        reason = "killed on request"
    elif not reason and word == "exited" and info.exit_code is not None:
        reason = f"status {info.exit_code}"  # a plain SSH host has no reasons: its exit status says it
    return f"{word} ({reason})" if reason else word


def _outage(info) -> dict:
    outage = getattr(info, "outage", None)
    return outage if outage and info.is_active and isinstance(outage, dict) else {}


def _clock(timestamp, now: float) -> str:
    """``12:15`` today, ``2026-05-09 12:15`` another day."""
    if not isinstance(timestamp, (int, float)):
        return "?"
    when = datetime.fromtimestamp(timestamp)
    return when.strftime("%H:%M") if when.date() == datetime.fromtimestamp(now).date() \
        else when.strftime("%Y-%m-%d %H:%M")
