"""What a debug session runs: a script, the project's training run, or a program to attach to.

Each is turned into the arguments of a DAP ``launch`` or ``attach`` request for debugpy.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.debug.errors import DebugError
from workbench.project.project_file import STATE_DIR, ensure_state_dir

# The training run under the debugger writes its metrics, checkpoints and outputs here, not in
# runs/: it is not a run to keep, compare or resume.
DEBUG_RUN_DIR = "debug-run"
DEBUG_RUN_ID = "debug"


@dataclass
class LaunchConfig:
    """A program for debugpy to start: ``program`` (a script) run by ``python`` with ``args``,
    in ``cwd``, with ``env`` on top of Workbench's environment. ``name`` is what the Debug dock
    calls it."""

    program: str
    args: list[str] = field(default_factory=list)
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    name: str = ""
    just_my_code: bool = True
    stop_on_entry: bool = False

    def __post_init__(self) -> None:
        self.name = self.name or Path(self.program).name
        self.cwd = self.cwd or str(Path(self.program).parent)

    def dap_arguments(self) -> dict:
        """The arguments of the ``launch`` request. The program's output comes back as
        ``output`` events (``internalConsole``); child processes are not followed: a training
        run is debugged as one process."""
        return {
            "name": self.name,
            "type": "python",
            "request": "launch",
            "program": self.program,
            "args": list(self.args),
            "cwd": self.cwd,
            "env": dict(self.env),
            "python": [self.python],
            "console": "internalConsole",
            "redirectOutput": True,
            "justMyCode": self.just_my_code,
            "stopOnEntry": self.stop_on_entry,
            "subProcess": False,
            "showReturnValue": True,
        }


@dataclass
class AttachConfig:
    """A program already running under ``debugpy --listen`` (here, or on a device through a
    tunnel). ``connect()`` returns a connected byte stream to its adapter (see
    ``dap_client``); ``path_mappings`` pairs (path where the program runs, path here) so
    breakpoints and the stack use this computer's files."""

    connect: Callable[[], object]
    name: str = "attached program"
    path_mappings: list[tuple[str, str]] = field(default_factory=list)
    just_my_code: bool = True
    # The program outlives the session (a console's kernel): ending the session lets go of it
    # and never ends it.
    keeps_program: bool = False

    def dap_arguments(self) -> dict:
        arguments: dict = {"name": self.name, "type": "python", "request": "attach",
                           "justMyCode": self.just_my_code, "subProcess": False, "showReturnValue": True}
        if self.path_mappings:
            arguments["pathMappings"] = [{"remoteRoot": remote, "localRoot": local}
                                         for remote, local in self.path_mappings]
        return arguments


def attach_to_port(host: str, port: int, name: str = "", path_mappings: list[tuple[str, str]] | None = None,
                   keeps_program: bool = False) -> AttachConfig:
    """Attach to a program started with ``python -m debugpy --listen HOST:PORT``.

    Do not probe the port with a connection that closes at once to see whether it listens:
    debugpy takes that connection for its client and then waits for it for good. Retry the real
    connection instead."""
    from workbench.debug.streams import connect

    return AttachConfig(connect=lambda: connect(host, port), name=name or f"{host}:{port}",
                        path_mappings=list(path_mappings or []), keeps_program=keeps_program)


def script_launch(script: Path | str, args: list[str] | None = None, cwd: Path | str | None = None,
                  python: str | None = None) -> LaunchConfig:
    """Debug ``script`` (run in ``cwd``, its own folder by default); DebugError when it is not a
    Python file that exists."""
    path = Path(script).resolve()
    if not path.is_file():
        raise DebugError(f"{path} does not exist, so it cannot be debugged. Save it first.")
    if path.suffix.lower() not in (".py", ".pyw"):
        raise DebugError(f"{path.name} is not a Python script (.py): only Python can be debugged here.")
    return LaunchConfig(program=str(path), args=list(args or []), cwd=str(cwd or path.parent),
                        python=python or sys.executable)


def training_launch(project_dir: Path | str, hparams_file: Path | str | None = None, overrides=()) -> LaunchConfig:
    """Debug the project's training run as ``workbench train`` would start it (the same
    script, interpreter, arguments and environment) as one process, never under torchrun.
    Its run folder is ``.workbench/debug-run``, emptied first. DebugError when the run cannot
    be prepared (the training service's message)."""
    from workbench.training.errors import TrainingError
    from workbench.training.run_spec import prepare_run, trainer_environment

    project_dir = Path(project_dir).resolve()
    try:
        spec = prepare_run(project_dir, hparams_file, tuple(overrides), nproc=1)
    except TrainingError as exc:
        raise DebugError(str(exc)) from None
    run_dir = ensure_state_dir(project_dir) / DEBUG_RUN_DIR
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    (run_dir / spec.hparams_name).write_text(spec.hparams_text, encoding="utf-8")
    command = spec.command(str(Path(STATE_DIR) / DEBUG_RUN_DIR))
    python, script, args = command[0], command[1], command[2:]
    return LaunchConfig(program=str(project_dir / script), args=args, cwd=str(project_dir),
                        env=trainer_environment(run_dir, DEBUG_RUN_ID), python=python,
                        name=f"Training run ({Path(script).name})")
