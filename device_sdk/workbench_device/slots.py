"""Deployment slots (protocol version 4): a named slot serves the model last deployed to it.

A deploy loads the new model beside the one the slot serves, runs it a few times (the first runs
of a model are its slowest: allocations, kernel choices), and only then switches the slot to
it. The switch is one assignment under the slot registry's lock: a request takes the slot's
current deployment (and counts itself as one of its users) under that lock, so it runs on the
old model or the new one, never on a model being closed. The old model is closed when its last
user is done. One deploy per slot at a time: a second one is refused with ``busy`` (the host
knows what it wants deployed and can ask again; a queue would deploy models the host may no
longer want).

The slots are recorded in ``<data>/slots.json`` (written atomically, before the switch); an
agent that starts loads each slot's model again. A slot whose model cannot be loaded then is
kept, serves nothing, and says why in ``slot.list`` until a deploy replaces its model.

An old model is closed on a thread of its own: never by the request that was its last user,
whose reply would otherwise wait for the runtime to free it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from workbench_device.atomic import replace_file
from workbench_device.bench import random_inputs
from workbench_device.protocol import Err, ProtocolError, check_sha256
from workbench_device.runtimes import ONNXRUNTIME, LoadedModel, check_runtime, load_model

log = logging.getLogger(__name__)

SLOTS_FILE = "slots.json"
MAX_SLOTS = 32
DEFAULT_WARM_RUNS = 3
MAX_WARM_RUNS = 100000
MAX_THREADS = 256
_SLOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_slot_name(value: Any) -> str:
    """``value`` when it can name a slot; ProtocolError(bad_request) otherwise."""
    if not isinstance(value, str) or not _SLOT_NAME.fullmatch(value):
        raise ProtocolError(Err.BAD_REQUEST, "'slot' must be a slot name: 1 to 64 letters, "
                                             "digits, '.', '_' or '-', starting with a letter "
                                             "or digit (e.g. \"classifier\")")
    return value


class Deployment:
    """One model loaded into a slot, and the requests it served since it was switched in."""

    def __init__(self, model: LoadedModel, since: float):
        self.model = model
        self.since = since
        self.users = 0
        self.retired = False
        self.closed = False
        self.served = 0
        self.errors = 0


class Slot:
    def __init__(self, name: str, runtime: str, threads: int):
        self.name = name
        self.runtime = runtime
        self.threads = threads
        self.current: Optional[Deployment] = None
        # The recorded model and why it could not be loaded at start (the slot serves nothing).
        self.recorded: Optional[Dict[str, Any]] = None
        self.problem: Optional[str] = None
        # The sha256 of the model being deployed, None when no deploy is under way.
        self.deploying: Optional[str] = None

    def describe(self) -> Dict[str, Any]:
        current = self.current
        fields: Dict[str, Any] = {"slot": self.name, "runtime": self.runtime,
                                  "threads": self.threads, "deploying": self.deploying}
        if current is not None:
            fields.update(model=current.model.sha256, name=current.model.name,
                          since=current.since, served=current.served, errors=current.errors,
                          inputs=current.model.inputs, outputs=current.model.outputs)
        else:
            recorded = self.recorded or {}
            fields.update(model=recorded.get("model"), name=recorded.get("name", ""),
                          since=recorded.get("since"), served=0, errors=0,
                          error=self.problem)
        return fields


class SlotRegistry:
    """The agent's slots, recorded in ``data_dir/slots.json``."""

    def __init__(self, data_dir: Path, store: Any):
        self.path = Path(data_dir) / SLOTS_FILE
        self.store = store
        # Guards the slots and their deployments; held only for bookkeeping, never for a load
        # or a run.
        self._lock = threading.Lock()
        # Orders the writes of slots.json with the switches they record.
        self._record_lock = threading.Lock()
        self._slots: Dict[str, Slot] = {}

    # --- start and stop ---

    def restore(self) -> None:
        """Load every recorded slot's model again (a slot whose model cannot be loaded is kept,
        serving nothing, with the reason)."""
        for name, record in self._read().items():
            slot = Slot(name, record["runtime"], record["threads"])
            slot.recorded = record
            try:
                path = self.store.model_file(record["model"])
                model = load_model(slot.runtime, path, record["model"], record.get("name", ""),
                                   slot.threads)
                slot.current = Deployment(model, record.get("since") or time.time())
                log.info("slot %s serves %s… again (%.1f ms to load)", name,
                         record["model"][:12], model.init_ms)
            except ProtocolError as exc:
                slot.problem = f"its model {record['model'][:12]}… could not be loaded when the " \
                               f"agent started: {exc.message}; deploy a model to it again"
                log.warning("slot %s serves nothing: %s", name, slot.problem)
            self._slots[name] = slot

    def _read(self) -> Dict[str, Dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.error("cannot read %s (%s); starting without slots", self.path, exc)
            return {}
        records = {}
        for name, record in (data.get("slots") or {}).items() if isinstance(data, dict) else ():
            try:
                check_slot_name(name)
                check_sha256(record.get("model"))
                records[name] = {"model": record["model"], "name": str(record.get("name") or ""),
                                 "runtime": str(record.get("runtime") or ONNXRUNTIME),
                                 "threads": int(record.get("threads") or 1),
                                 "since": float(record.get("since") or 0.0)}
            except (ProtocolError, AttributeError, TypeError, ValueError):
                log.error("%s: slot %r is not a slot record; it is left out", self.path, name)
        return records

    def close(self) -> None:
        """Unload every slot's model (the agent is stopping)."""
        with self._lock:
            deployments = [s.current for s in self._slots.values() if s.current is not None]
            self._slots.clear()
        for deployment in deployments:
            self._retire(deployment)

    # --- deploying ---

    def deploy(self, name: Any, sha256: Any, warm_runs: Any = None, runtime: Any = None,
               threads: Any = None, model_name: Any = None) -> Dict[str, Any]:
        """Load ``sha256`` from the store, run it ``warm_runs`` times, switch the slot to it;
        the reply's fields. The slot keeps serving its model when anything fails.
        ``model_name`` (a file name, for people) is kept with it."""
        name = check_slot_name(name)
        model_name = str(model_name or "")[:200]
        sha256 = check_sha256(sha256)
        warm_runs = _count(warm_runs, "warm_runs", DEFAULT_WARM_RUNS, 0, MAX_WARM_RUNS)
        with self._lock:
            slot = self._slots.get(name)
            created = slot is None
            if created:
                if len(self._slots) >= MAX_SLOTS:
                    raise ProtocolError(Err.BUSY, f"the device has {MAX_SLOTS} slots already; "
                                                  "remove one (slot.remove) first")
                slot = Slot(name, ONNXRUNTIME, 1)
                self._slots[name] = slot
            if slot.deploying is not None:
                raise ProtocolError(Err.BUSY, f"slot {name} is being deployed "
                                              f"({slot.deploying[:12]}…) already; send this "
                                              "deploy again once that one answered")
            slot.deploying = sha256
            use_runtime = slot.runtime if runtime is None else runtime
            use_threads = slot.threads if threads is None else threads
        try:
            use_runtime = check_runtime(use_runtime)
            use_threads = _count(use_threads, "threads", 1, 1, MAX_THREADS)
            return self._deploy(slot, sha256, model_name, warm_runs, use_runtime, use_threads)
        finally:
            with self._lock:
                slot.deploying = None
                if created and slot.current is None and slot.recorded is None:
                    self._slots.pop(name, None)  # its first deploy failed: no slot

    def _deploy(self, slot: Slot, sha256: str, model_name: str, warm_runs: int, runtime: str,
                threads: int) -> Dict[str, Any]:
        path = self.store.model_file(sha256)
        model, warm_ms = self._load_and_warm(slot, path, sha256, model_name, warm_runs, runtime,
                                             threads)
        try:
            with self._record_lock:
                switched_at = time.time()
                records = self._records()
                records[slot.name] = {"model": sha256, "name": model_name, "runtime": runtime,
                                      "threads": threads, "since": switched_at}
                self._write(records)
                with self._lock:
                    previous = slot.current
                    slot.current = Deployment(model, switched_at)
                    slot.runtime, slot.threads = runtime, threads
                    slot.recorded, slot.problem = None, None
        except BaseException:
            model.close()
            raise
        if previous is not None:
            self._retire(previous)
        before = previous.model.sha256 if previous is not None else None
        log.info("slot %s switched to %s… (was %s; load %.1f ms, warm-up %.1f ms)", slot.name,
                 sha256[:12], before[:12] + "…" if before else "empty", model.init_ms, warm_ms)
        return {"slot": slot.name, "model": sha256, "previous": before,
                "load_ms": round(model.init_ms, 3), "warm_ms": round(warm_ms, 3),
                "warm_runs": warm_runs, "switched_at": switched_at, "runtime": runtime,
                "inputs": model.inputs, "outputs": model.outputs}

    @staticmethod
    def _load_and_warm(slot: Slot, path: Path, sha256: str, model_name: str, warm_runs: int,
                       runtime: str, threads: int) -> Tuple[LoadedModel, float]:
        """The model loaded and run ``warm_runs`` times, and the warm-up's milliseconds."""
        try:
            model = load_model(runtime, path, sha256, model_name, threads)
        except ProtocolError as exc:
            raise ProtocolError(exc.code, f"{exc.message}; slot {slot.name} keeps its model") \
                from None
        try:
            warm_start = time.perf_counter()
            for run in range(warm_runs):
                try:
                    model.run(random_inputs(model, seed=run))
                except ProtocolError as exc:
                    raise ProtocolError(Err.RUNTIME, f"the model {sha256[:12]}… loaded but its "
                                        f"warm-up run failed ({exc.message}); slot {slot.name} "
                                        "keeps its model") from None
            return model, (time.perf_counter() - warm_start) * 1000.0
        except BaseException:
            model.close()
            raise

    def _retire(self, deployment: Deployment) -> None:
        """Close ``deployment``'s model once no request uses it: now when none does, else when
        the last one is done (on a thread of its own either way)."""
        with self._lock:
            deployment.retired = True
            close = deployment.users == 0 and not deployment.closed
            deployment.closed = deployment.closed or close
        if close:
            _close_aside(deployment.model)

    def remove(self, name: Any) -> Dict[str, Any]:
        name = check_slot_name(name)
        with self._record_lock:
            with self._lock:
                slot = self._find(name)
                if slot.deploying is not None:
                    raise ProtocolError(Err.BUSY, f"slot {name} is being deployed; remove it "
                                                  "once that deploy answered")
            records = self._records()
            records.pop(name, None)
            self._write(records)
            with self._lock:
                self._slots.pop(name, None)
                current = slot.current
        if current is not None:
            self._retire(current)
        log.info("slot %s removed", name)
        return {"slot": name, "model": current.model.sha256 if current else None}

    # --- serving ---

    def run(self, name: Any, feeds: Dict[str, Any]) -> Tuple[List[Tuple[str, Any]], str, float]:
        """The outputs of the slot's current model for ``feeds``, its sha256 and the run's
        milliseconds."""
        name = check_slot_name(name)
        with self._lock:
            slot = self._find(name)
            deployment = slot.current
            if deployment is None:
                why = slot.problem or "its first model is being deployed"
                raise ProtocolError(Err.RUNTIME, f"slot {name} serves no model yet: {why}")
            deployment.users += 1
        done = False
        try:
            start = time.perf_counter()
            outputs = deployment.model.run(feeds)
            run_ms = (time.perf_counter() - start) * 1000.0
            done = True
            return outputs, deployment.model.sha256, run_ms
        finally:
            with self._lock:
                deployment.users -= 1
                if done:
                    deployment.served += 1
                else:
                    deployment.errors += 1
                close = deployment.retired and deployment.users == 0 and not deployment.closed
                deployment.closed = deployment.closed or close
            if close:
                _close_aside(deployment.model)

    def list(self) -> List[Dict[str, Any]]:
        with self._lock:
            return [self._slots[name].describe() for name in sorted(self._slots)]

    def _find(self, name: str) -> Slot:
        slot = self._slots.get(name)
        if slot is None:
            known = ", ".join(sorted(self._slots)) or "none"
            raise ProtocolError(Err.NOT_FOUND, f"no slot {name!r} on this device (slots: "
                                               f"{known}); deploy a model to it first")
        return slot

    # --- the record ---

    def _records(self) -> Dict[str, Dict[str, Any]]:
        records = {}
        with self._lock:
            for name, slot in self._slots.items():
                if slot.current is not None:
                    model = slot.current.model
                    records[name] = {"model": model.sha256, "name": model.name,
                                     "runtime": slot.runtime, "threads": slot.threads,
                                     "since": slot.current.since}
                elif slot.recorded is not None:
                    records[name] = dict(slot.recorded)
        return records

    def _write(self, records: Dict[str, Dict[str, Any]]) -> None:
        text = json.dumps({"version": 1, "slots": records}, indent=1, sort_keys=True).encode()
        try:
            replace_file(self.path, lambda out: out.write(text), durable=True)
        except OSError as exc:
            raise ProtocolError(Err.INTERNAL, f"cannot record the slots in {self.path} "
                                              f"({exc.strerror or exc}); nothing was changed") \
                from None


def _close_aside(model: LoadedModel) -> None:
    """Close ``model`` on a thread of its own: freeing a runtime's session takes a while, which
    neither a request's reply nor a deploy's should wait for."""
    threading.Thread(target=model.close, name="wb-slot-release", daemon=True).start()


def _count(value: Any, name: str, default: int, minimum: int, maximum: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise ProtocolError(Err.BAD_REQUEST, f"'{name}' must be an integer from {minimum} to "
                                             f"{maximum}")
    return value
