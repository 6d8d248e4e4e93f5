"""Processes that outlive whoever started them: a run's supervisor, a cluster run's follower.

``start_detached`` (in the starting process) runs ``python -m MODULE ARGS…`` in a session of its
own, with no terminal and its output in a log file; the started module calls ``detach`` first
thing, so the process that goes on is a child that init adopts. Nothing that started it (a
window, a command in a terminal) ever has to wait for it or reap it, and closing that terminal
sends it nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path


def start_detached(module: str, args: list[str], log: Path, cwd: Path | str | None = None,
                   wait: bool = True) -> int | None:
    """Run ``python -m module *args`` detached from this process, with its output appended to
    ``log``; returns once its first process has exited (it calls ``detach``), with that exit
    status: 0 when the detached process is on its own. ``wait=False`` returns None at once, while
    Python is still starting there (a tenth of a second or more), and reaps the first process on
    a thread of its own."""
    env = dict(os.environ)
    # The started module must import this very Workbench, however this process found it.
    workbench_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [workbench_root, env.get("PYTHONPATH", "")]))
    with open(log, "ab") as output:
        launcher = subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                                    stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                                    start_new_session=True)
    if not wait:
        threading.Thread(target=launcher.wait, name=f"reaping {module}", daemon=True).start()
        return None
    # Its first process forks and exits at once: reaping it here leaves no zombie.
    return launcher.wait()


def detach() -> None:
    """Go on in a child whose parent exits at once (called first thing by a module started with
    ``start_detached``): the starter waits only for the first process, and init adopts the child."""
    if os.fork() > 0:
        os._exit(0)
