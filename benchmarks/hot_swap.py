"""Swapping the model a deployment slot serves while an app on the device runs it, as one JSON
object.

A real agent (``python -m workbench_device.agent`` in a process of its own, a temporary data
folder, its inference endpoint on a free loopback port) gets two small ONNX models (the same
inputs and outputs, other weights: an MLP 64 -> 256 -> 256 -> 10 built with onnx.helper) and
slot ``classifier``. A client thread of this process, an ``InferenceClient`` on loopback as an
app on the device would use it, sends requests one after the other as fast as it can, while the
host (a paired ``DeviceClient``) deploys the other model ``--swaps`` times (default 20), with
``--gap`` seconds of steady stream between swaps.

- failed_requests: requests that raised, or whose outputs are not the outputs of the model
  the reply names (computed in this process with onnxruntime). Goal 0.
- p99_latency_steady_ms: the 99th percentile of the round trips of the requests that overlap
  no deploy (from the slot.deploy request to its reply).
- worst_latency_during_swap_ms: the longest round trip of a request that overlaps a deploy.
- swap_latency_ratio: the second over the first. Goal <= 3.

Beside them: requests, swaps, the deploys' load_ms and warm_ms (medians), and how many answers
each model gave.

Run: .venv/bin/python benchmarks/hot_swap.py [--swaps 20] [--gap 0.3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "device_sdk"))

import numpy as np  # noqa: E402

from workbench_device.client import DeviceClient, connect  # noqa: E402
from workbench_device.inference import InferenceClient  # noqa: E402
from workbench_device.tls import load_or_make_identity  # noqa: E402

GOALS = {"failed_requests": ("<=", 0), "swap_latency_ratio": ("<=", 3.0)}
HOST_ID = "hot-swap-benchmark"
SLOT = "classifier"
LAYERS = (64, 256, 256, 10)


def mlp_onnx(seed: int) -> bytes:
    """An MLP (LAYERS, relu between) as ONNX bytes; its weights drawn from ``seed``."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, initializers, previous = [], [], "x"
    for index, (fan_in, fan_out) in enumerate(zip(LAYERS, LAYERS[1:])):
        weight = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        initializers += [numpy_helper.from_array(weight, f"w{index}"),
                         numpy_helper.from_array(np.zeros(fan_out, np.float32), f"b{index}")]
        nodes += [helper.make_node("MatMul", [previous, f"w{index}"], [f"m{index}"]),
                  helper.make_node("Add", [f"m{index}", f"b{index}"], [f"a{index}"])]
        previous = f"a{index}"
        if index < len(LAYERS) - 2:
            nodes.append(helper.make_node("Relu", [previous], [f"r{index}"]))
            previous = f"r{index}"
    nodes.append(helper.make_node("Identity", [previous], ["logits"]))
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", LAYERS[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", LAYERS[-1]])],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AgentProcess:
    def __init__(self, folder: Path):
        self.data_dir = folder / "agent"
        self.log = open(folder / "agent-stderr.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workbench_device.agent", "--port", "0", "--data-dir",
             str(self.data_dir), "--no-mdns", "--json", "--inference-port", str(free_port())],
            stdout=subprocess.PIPE, stderr=self.log, cwd=str(ROOT / "device_sdk"))
        announced = json.loads(self.process.stdout.readline())
        self.port = int(announced["port"])
        self.inference_port = int(announced["inference_port"])
        self.code = announced["pairing_code"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class RequestStream:
    """Requests one after the other on one InferenceClient until ``stop``; each one's start and
    end (perf_counter seconds), and the failures."""

    def __init__(self, port: int, expected: Dict[str, np.ndarray], x: np.ndarray):
        self.port = port
        self.expected = expected
        self.x = x
        self.timings: List[Tuple[float, float]] = []
        self.failures: List[str] = []
        self.answers = {sha: 0 for sha in expected}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="hot-swap-stream", daemon=True)

    def _run(self) -> None:
        with InferenceClient(port=self.port) as app:
            while not self.stopped.is_set():
                started = time.perf_counter()
                try:
                    answer = app.run_detailed(SLOT, {"x": self.x})
                except Exception as exc:  # every failure is what this measures
                    self.failures.append(repr(exc))
                    continue
                ended = time.perf_counter()
                self.timings.append((started, ended))
                if not np.allclose(answer.outputs["logits"], self.expected.get(answer.model),
                                   rtol=1e-4, atol=1e-5):
                    self.failures.append(f"outputs not those of {answer.model[:12]}")
                else:
                    self.answers[answer.model] += 1


def reference_outputs(models: Dict[str, bytes], x: np.ndarray) -> Dict[str, np.ndarray]:
    import onnxruntime as ort

    return {sha: ort.InferenceSession(data, providers=["CPUExecutionProvider"])
            .run(["logits"], {"x": x})[0] for sha, data in models.items()}


def swap_figures(host: DeviceClient, inference_port: int, swaps: int, gap: float) -> dict:
    from workbench_device.client import sha256_of

    models = {sha256_of(data): data for data in (mlp_onnx(1), mlp_onnx(2))}
    for sha, data in models.items():
        host.push_model(data, name=f"mlp-{sha[:8]}.onnx")
    order = list(models)
    x = np.random.default_rng(0).standard_normal((1, LAYERS[0])).astype(np.float32)
    host.deploy_slot(SLOT, order[0])
    stream = RequestStream(inference_port, reference_outputs(models, x), x)
    stream.thread.start()
    windows: List[Tuple[float, float]] = []
    deploys = []
    time.sleep(gap)
    for swap in range(swaps):
        started = time.perf_counter()
        deploys.append(host.deploy_slot(SLOT, order[(swap + 1) % 2]))
        windows.append((started, time.perf_counter()))
        time.sleep(gap)
    stream.stopped.set()
    stream.thread.join(30)
    steady, during = [], []
    for started, ended in stream.timings:
        overlaps = any(started < w_end and ended > w_start for w_start, w_end in windows)
        (during if overlaps else steady).append((ended - started) * 1000.0)
    p99 = float(np.percentile(steady, 99)) if steady else float("nan")
    worst = max(during) if during else 0.0
    return {
        "failed_requests": len(stream.failures),
        "p99_latency_steady_ms": round(p99, 3),
        "worst_latency_during_swap_ms": round(worst, 3),
        "swap_latency_ratio": round(worst / p99, 3) if steady else None,
        "p50_latency_steady_ms": round(statistics.median(steady), 3) if steady else None,
        "requests": len(stream.timings) + len(stream.failures),
        "requests_during_swaps": len(during),
        "swaps": swaps,
        "deploy_load_ms_median": round(statistics.median(d["load_ms"] for d in deploys), 3)
        if deploys else None,
        "deploy_warm_ms_median": round(statistics.median(d["warm_ms"] for d in deploys), 3)
        if deploys else None,
        "deploy_round_trip_ms_median": round(statistics.median(
            (end - start) * 1000.0 for start, end in windows), 3) if windows else None,
        "answers_by_model": {sha[:12]: count for sha, count in stream.answers.items()},
        "failures": stream.failures[:5],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swaps", type=int, default=20, help="deploys of the other model")
    parser.add_argument("--gap", type=float, default=0.3,
                        help="seconds of steady stream before, between and after the swaps")
    args = parser.parse_args()
    if args.swaps < 1 or args.gap < 0:
        parser.error("--swaps must be at least 1 and --gap not negative")
    folder = Path(tempfile.mkdtemp(prefix="wb-bench-hot-swap-"))
    agent = None
    try:
        identity = load_or_make_identity(folder / "host", HOST_ID)
        agent = AgentProcess(folder)
        with DeviceClient.for_pairing("127.0.0.1", agent.port, identity) as pairing:
            pin = pairing.pair(HOST_ID, "benchmark", agent.code)
        with connect("127.0.0.1", agent.port, HOST_ID, identity, pin, timeout=120) as host:
            figures = swap_figures(host, agent.inference_port, args.swaps, args.gap)
    finally:
        if agent is not None:
            agent.stop()
        shutil.rmtree(folder, ignore_errors=True)
    goals, met = {}, {}
    for name, (relation, goal) in GOALS.items():
        value = figures[name]
        goals[name] = f"{relation} {goal:g}"
        met[name] = value is not None and value <= goal
    figures["goals"] = goals
    figures["met"] = met
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
