"""A deploy to a fleet of agents on loopback while each one's slot serves a steady stream of
requests, as one JSON object.

``--agents`` agents (default 20), each ``python -m workbench_device.agent`` in a process of its
own with its own port, inference port and data folder, are paired with a Workbench host whose
config and data folders are temporary (the codes are read from the agents' output: none is
typed). A temporary project's registry gets two versions, A and B (MLPs 64 -> 256 -> 256 -> 10
of ``hot_swap.py``, other weights). ``deploy_to_devices`` deploys A to slot ``classifier`` of
every agent; then one client thread per agent, an ``InferenceClient`` on the agent's inference
port as an app on the device would use it, sends a request every ``--interval`` seconds. Under
that load B is deployed to the first agent alone (``single_deploy_s``), then to every agent
(``fleet_deploy_s``: until the last device answered that its slot serves B).

- fleet_failed_requests: requests that raised, or whose outputs are not those of the model the
  reply names (computed here with onnxruntime), over the whole run. Goal 0.
- fleet_deploy_ratio: fleet_deploy_s over single_deploy_s. Goal <= 4 (the pushes go out in
  parallel). The first agent has B already when the fleet deploy starts, so 1 of the N pushes
  sends nothing; every agent loads and warms B again.
- devices_not_switched: the devices the fleet deploy reports as failed or unreachable.

Beside them: requests, the slowest device's seconds, how many answers came from B after the
fleet deploy, the CPU seconds this process (the host and the request streams) used during each
deploy, and the machine's CPUs: on a machine with fewer CPUs than agents the deploys' CPU work
(TLS handshakes, loading and warming the model on every agent) adds up, and the ratio shows it.

Run: .venv/bin/python benchmarks/fleet.py [--agents 20] [--interval 0.05]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "device_sdk"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402

from goals import print_with_goals  # noqa: E402
from hot_swap import SLOT, app_input, mlp_onnx, reference_outputs  # noqa: E402
from tests.services.device_agent import AgentProcess  # noqa: E402

GOALS = {"fleet_failed_requests": ("<=", 0), "fleet_deploy_ratio": ("<=", 4.0)}


class RequestStream:
    """A request every ``interval`` seconds on one InferenceClient until ``stop``."""

    def __init__(self, agent: AgentProcess, expected: Dict[str, np.ndarray], x: np.ndarray,
                 interval: float):
        self.agent, self.expected, self.x, self.interval = agent, expected, x, interval
        self.requests = 0
        self.failures: List[str] = []
        self.answers: List[tuple] = []   # (perf_counter at the reply, model)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from workbench_device.inference import InferenceClient

        with InferenceClient(port=self.agent.inference_port, timeout=60) as app:
            while not self.stopped.wait(self.interval):
                self.requests += 1
                try:
                    answer = app.run_detailed(SLOT, {"x": self.x})
                except Exception as exc:  # every failure is what this measures
                    self.failures.append(f"{self.agent.name}: {exc!r}")
                    continue
                expected = self.expected.get(answer.model)
                if expected is None or not np.allclose(answer.outputs["logits"], expected,
                                                       rtol=1e-4, atol=1e-5):
                    self.failures.append(f"{self.agent.name}: outputs not those of "
                                         f"{answer.model[:12]}")
                self.answers.append((time.perf_counter(), answer.model))


def make_project(folder: Path) -> Path:
    """A project whose registry holds version 0000 (model A) and 0001 (model B)."""
    from workbench.registry import open_versions

    project = folder / "project"
    project.mkdir()
    (project / "workbench.toml").write_text('[registry]\nfolder = "registry"\n', encoding="utf-8")
    registry = open_versions(project, python=sys.executable).models
    for seed, name in ((1, "a"), (2, "b")):
        model = folder / f"model-{name}.onnx"
        model.write_bytes(mlp_onnx(seed))
        registry.register([(model, "onnx")], {"hyper_parameters": {"seed": seed}})
    return project


def figures(agents: int, interval: float, folder: Path) -> dict:
    from workbench.device.deploy import deploy_to_devices
    from workbench.device.link import pair_device
    from workbench.device.paired import PairedDevices
    from workbench_device.client import sha256_of

    project = make_project(folder)
    # Started all at once, then waited for: each takes a while to import and listen.
    fleet = [AgentProcess(folder / f"agent{index:02d}" / "data", f"Fleet Device {index:02d}",
                          wait=False, inference_port=True)
             for index in range(agents)]
    try:
        for agent in fleet:
            agent.wait_listening()
        paired = PairedDevices()
        for agent in fleet:
            pair_device(agent.address, agent.code, paired)
        addresses = [agent.address for agent in fleet]
        first = deploy_to_devices(project, "0", addresses, SLOT, paired=paired)
        if not first.ok:
            raise SystemExit(f"the first deploy failed: {first.to_text()}")
        models = {sha256_of(mlp_onnx(seed)): mlp_onnx(seed) for seed in (1, 2)}
        x = app_input()
        expected = reference_outputs(models, x)
        streams = [RequestStream(agent, expected, x, interval) for agent in fleet]
        for stream in streams:
            stream.thread.start()
        time.sleep(1.0)
        cpu = time.process_time()
        single = deploy_to_devices(project, "1", addresses[:1], SLOT, paired=paired)
        single_cpu = time.process_time() - cpu
        time.sleep(1.0)
        started, cpu = time.perf_counter(), time.process_time()
        fleet_report = deploy_to_devices(project, "1", addresses, SLOT, paired=paired)
        fleet_done, fleet_cpu = time.perf_counter(), time.process_time() - cpu
        time.sleep(1.0)
        for stream in streams:
            stream.stopped.set()
        for stream in streams:
            stream.thread.join(60)
    finally:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(AgentProcess.stop, fleet))
    failures = [failure for stream in streams for failure in stream.failures]
    new_answers = sum(1 for stream in streams for at, model in stream.answers
                      if at > fleet_done and model == fleet_report.sha256)
    single_s = single.seconds
    return {
        "agents": agents,
        "fleet_failed_requests": len(failures),
        "fleet_deploy_s": round(fleet_done - started, 3),
        "single_deploy_s": round(single_s, 3),
        "fleet_deploy_ratio": round((fleet_done - started) / single_s, 3) if single_s else None,
        "devices_not_switched": [o.device for o in fleet_report.not_switched],
        "single_switched": single.ok,
        "host_cpu_single_deploy_s": round(single_cpu, 3),
        "host_cpu_fleet_deploy_s": round(fleet_cpu, 3),
        "cpus": os.cpu_count(),
        "slowest_device_s": max(o.seconds for o in fleet_report.outcomes),
        "requests": sum(stream.requests for stream in streams),
        "answers_from_new_model_after_deploy": new_answers,
        "request_interval_s": interval,
        "failures": failures[:5],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=20, help="agent processes to deploy to")
    parser.add_argument("--interval", type=float, default=0.05,
                        help="seconds between one client's requests")
    args = parser.parse_args()
    if args.agents < 1 or args.interval < 0:
        parser.error("--agents must be at least 1 and --interval not negative")
    folder = Path(tempfile.mkdtemp(prefix="wb-bench-fleet-"))
    # This run's own Workbench folders and keys: nothing of the user's is read or changed.
    os.environ["WORKBENCH_CONFIG_DIR"] = str(folder / "config")
    os.environ["WORKBENCH_DATA_DIR"] = str(folder / "data")
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    try:
        result = figures(args.agents, args.interval, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print_with_goals(result, GOALS)


if __name__ == "__main__":
    main()
