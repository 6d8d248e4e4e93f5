"""PipelineService: start, stop, resume and read the iterations of one project.

An iteration runs in the process that starts (or resumes) it, step after step, holding the
project's pipeline lock; its file is written after every change, so ``status`` from another
process sees each step as it goes. ``stop`` from another process leaves a stop request beside
the iteration's file, which the running step honours (a training run is stopped through
RunService.stop, a model tool's job is cancelled)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable

from workbench.pipeline.declaration import PipelineDeclaration, read_declaration
from workbench.pipeline.errors import PipelineError
from workbench.pipeline.iterations import (DONE, FAILED, MANUAL, PENDING, RUNNING, SKIPPED, STOPPED, Iteration,
                                           IterationStore, PipelineLock, StepState, trigger_record)
from workbench.pipeline.steps import GateFailed, StepContext, StepStopped, run_step


class PipelineService:
    """The pipeline of the project at ``project_dir``; ``say`` gets one line per event."""

    def __init__(self, project_dir: Path | str, say: Callable[[str], None] = lambda line: None):
        from workbench.registry import open_versions

        self.project_dir = Path(project_dir).expanduser().resolve()
        if not (self.project_dir / "workbench.toml").is_file():
            raise PipelineError(f"{self.project_dir} is not a Workbench project (it has no workbench.toml).")
        self.versions = open_versions(self.project_dir)
        self.store = IterationStore(self.versions.settings.folder)
        self.lock = PipelineLock(self.store)
        self.say = say

    # --- reading -------------------------------------------------------------------------

    def list(self) -> list[Iteration]:
        """Every iteration, oldest first, as it stands (one whose process died shows failed)."""
        return [self.get(version) for version in self.store.versions()]

    def get(self, version: str | None = None) -> Iteration:
        """Iteration ``version`` (the newest when None)."""
        if version is None:
            known = self.store.versions()
            if not known:
                raise PipelineError(f"no pipeline iteration has run in {self.project_dir} yet: "
                                    "`workbench pipeline start` runs one.")
            version = known[-1]
        return self._reconciled(self.store.read(_number(version)))

    # --- acting --------------------------------------------------------------------------

    def start(self, declaration: PipelineDeclaration | None = None, trigger: dict | None = None) -> Iteration:
        """Run a new iteration of the declared steps to its end (done, failed or stopped).
        ``trigger`` (``trigger_record``) says what started it; a start by hand when None."""
        declaration = declaration or read_declaration(self.project_dir)
        trigger = trigger or trigger_record(MANUAL, "started through PipelineService")
        version = self._next_number()
        self.lock.acquire(version)
        try:
            steps = [StepState(index, step.tool, dict(step.params)) for index, step in enumerate(declaration.steps)]
            production = self.versions.models.aliases.all().get("production")
            iteration = Iteration(version, steps, production_at_start=f"{production:04d}" if production is not None else "",
                                  trigger=trigger)
            return self._run(iteration)
        finally:
            self.lock.release()

    def resume(self, version: str, declaration: PipelineDeclaration | None = None,
               trigger: dict | None = None) -> Iteration:
        """Go on with iteration ``version`` from its first step not done, with the parameters
        the project declares now (a gate made less strict, say) when it declares the same
        steps. The iteration keeps the trigger that started it; ``trigger`` (who resumes it and
        why; by hand when None) joins its ``resumes``."""
        version = _number(version)
        self.lock.acquire(version)
        try:
            iteration = self._reconciled(self.store.read(version))
            if iteration.state == DONE:
                raise PipelineError(f"iteration {version} is done; `workbench pipeline start` runs a new one.")
            self._take_declared_params(iteration, declaration or read_declaration(self.project_dir))
            for step in iteration.steps:
                if step.state != DONE:
                    step.state, step.error, step.started_at, step.ended_at = PENDING, "", None, None
            iteration.error, iteration.failed_step, iteration.ended_at = "", None, None
            iteration.resumes.append(trigger or trigger_record(MANUAL, "resumed through PipelineService"))
            self.say(f"resuming iteration {version} at step {self._first_pending(iteration) + 1}")
            return self._run(iteration)
        finally:
            self.lock.release()

    def stop(self, version: str | None = None) -> Iteration:
        """Ask the running iteration (``version``, else the newest) to stop; returns at once."""
        iteration = self.get(version)
        if iteration.state != RUNNING:
            raise PipelineError(f"iteration {iteration.version} is not running (it is {iteration.state}).")
        self.store.stop_request(iteration.version).write_text(f"{os.getpid()} {time.time()}\n", encoding="utf-8")
        return iteration

    # --- inside --------------------------------------------------------------------------

    def _run(self, iteration: Iteration) -> Iteration:
        self.store.stop_request(iteration.version).unlink(missing_ok=True)
        iteration.state, iteration.pid, iteration.host = RUNNING, os.getpid(), socket.gethostname()
        iteration.started_at = iteration.started_at or time.time()
        self.store.write(iteration)
        self.say(f"iteration {iteration.version}: " + " → ".join(step.tool for step in iteration.steps))
        for step in iteration.steps:
            if step.state == DONE:
                continue
            if self._stop_requested(iteration):
                return self._end(iteration, STOPPED, step, "stopped on request before it started")
            self._run_step(iteration, step)
            if step.state != DONE:
                return self._end(iteration, STOPPED if step.error.startswith("stopped") else FAILED, step, step.error)
        return self._end(iteration, DONE)

    def _run_step(self, iteration: Iteration, step: StepState) -> None:
        earlier = step.outputs
        step.state, step.started_at, step.ended_at, step.outputs = RUNNING, time.time(), None, {}
        self.store.write(iteration)
        self.say(f"[{step.index + 1}/{len(iteration.steps)}] {step.tool} …")

        def note(outputs: dict) -> None:
            step.outputs.update(outputs)
            self.store.write(iteration)

        context = StepContext(self.project_dir, self.versions, iteration, lambda line: self.say(f"    {line}"),
                              lambda: self._stop_requested(iteration), note, earlier)
        try:
            step.outputs.update(run_step(step.tool, step.params, context))
            step.state = DONE
        except StepStopped as exc:
            step.state, step.error = FAILED, f"stopped: {exc}"
        except GateFailed as exc:  # which gates failed, and by how much, stay in the record
            step.state, step.error, step.outputs["results"] = FAILED, str(exc), exc.results
        except PipelineError as exc:
            step.state, step.error = FAILED, str(exc)
        except KeyboardInterrupt:
            step.state, step.error = FAILED, "stopped: interrupted (Ctrl+C)"
        except Exception as exc:  # a bug in a step must still leave the iteration resumable
            step.state, step.error = FAILED, f"{type(exc).__name__}: {exc}"
        step.ended_at = time.time()
        self.store.write(iteration)
        self.say(f"    {step.state} in {step.seconds:.1f} s" + (f": {step.error}" if step.error else ""))

    def _end(self, iteration: Iteration, state: str, step: StepState | None = None, why: str = "") -> Iteration:
        iteration.state, iteration.ended_at = state, time.time()
        if step is not None:
            iteration.failed_step = step.index
            iteration.error = f"step {step.index + 1} ({step.tool}) {'stopped' if state == STOPPED else 'failed'}: {why}"
            for later in iteration.steps[step.index + 1:]:
                later.state = SKIPPED if later.state == PENDING else later.state
        self.store.write(iteration)
        self.store.stop_request(iteration.version).unlink(missing_ok=True)
        self.say(f"iteration {iteration.version} {state}" + (f": {iteration.error}" if iteration.error else ""))
        return iteration

    def _take_declared_params(self, iteration: Iteration, declaration: PipelineDeclaration) -> None:
        if [step.tool for step in declaration.steps] != [step.tool for step in iteration.steps]:
            self.say(f"the declared steps changed since iteration {iteration.version} started: it goes on with "
                     "the steps it started with")
            return
        for step, declared in zip(iteration.steps, declaration.steps):
            if step.state != DONE:
                step.params = dict(declared.params)

    def _stop_requested(self, iteration: Iteration) -> bool:
        return self.store.stop_request(iteration.version).exists()

    def _first_pending(self, iteration: Iteration) -> int:
        return next((step.index for step in iteration.steps if step.state != DONE), len(iteration.steps))

    def _reconciled(self, iteration: Iteration) -> Iteration:
        """A running iteration whose process is gone shows as failed (resume goes on with it)."""
        if iteration.state != RUNNING or iteration.host != socket.gethostname() or iteration.pid == os.getpid():
            return iteration
        holder = self.lock.holder()
        if holder is not None and holder.version == iteration.version and holder.is_alive():
            return iteration
        for step in iteration.steps:
            if step.state == RUNNING:
                step.state, step.error = FAILED, f"the process running it (pid {iteration.pid}) ended"
                iteration.failed_step = step.index
        iteration.state = FAILED
        iteration.error = (f"the process running the iteration (pid {iteration.pid}) ended; "
                           f"`workbench pipeline resume --version {iteration.version}` goes on")
        return iteration

    def _next_number(self) -> str:
        """The suffix the iteration's dataset and model versions will most likely get: the next
        number neither the registry nor an earlier iteration has given."""
        state = self.versions.models.store.read_state()
        taken = [int(number) + 1 for number in self.store.versions()]
        taken += [version.number + 1 for version in self.versions.datasets.list()]
        taken += [version.number + 1 for version in self.versions.models.list()]
        return f"{max([*state['next'].values(), *taken, 0]):04d}"


def _number(version: str | int) -> str:
    text = str(version).strip()
    if not text.isdigit():
        raise PipelineError(f"{version!r} is not an iteration number (NNNN, e.g. 0003).")
    return f"{int(text):04d}"
