"""The device debug link's figures, through a real agent process on loopback, as one JSON object.

- push_throughput_ratio: a 50 MB ONNX model pushed to the agent (``DeviceClient.push_model``,
  from ``push.begin`` to the ``push.end`` reply, which comes once every byte is on the device:
  in the memory the agent keeps for receiving pushes, which it then writes to the model's file
  while it checks the sha256) against the same bytes sent over a plain Python socket to a process that only reads
  them (``sendall`` of the bytes, a one-byte answer at the end): the same run, alternating, a
  new model each time (so every push sends everything), the ratio of the medians (plain /
  push). Goal >= 0.8. The host knows the model's sha256 before it pushes (hashing it is timed
  on its own: ``client_sha256_ms``). Beside it:
  ``push_until_stored_ms`` (until ``model.has`` says the device checked and stored the model,
  so that ``model.load`` can use it) and ``plain_socket_to_file_ms`` (the plain receiver also
  writing the bytes to a file: what storing them costs without any protocol).
- second_push_ms: ``push_model(path)`` of a model the device has, hashing included (the client
  remembers a file's sha256 by its size, time stamps and inode). Goal < 50 ms.
- remote_run_overhead_ms: a batch-1 ``model.run`` of the digits model (DigitsNet of the digits
  template, random weights, exported with torch) through the agent, round trip, minus the same
  run in onnxruntime in this process with the agent's session options; medians. Goal <= 1 ms.

The agent is ``python -m workbench_device.agent`` in a process of its own with a temporary data
folder, paired with the code it prints. Everything runs on 127.0.0.1.

Run: .venv/bin/python benchmarks/device_link.py [--runs 9] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "device_sdk"))

from workbench_device.client import DeviceClient, sha256_of  # noqa: E402

MODEL_BYTES = 50 * 1000 * 1000
GOALS = {
    "push_throughput_ratio": (">=", 0.8),
    "second_push_ms": ("<", 50.0),
    "remote_run_overhead_ms": ("<=", 1.0),
}
HOST_ID = "device-link-benchmark"
SINK_BUFFER = 1024 * 1024


# --- the plain socket ---

def sink_main(folder: str) -> None:
    """The plain receiver: for each connection, a 1-byte mode and an 8-byte length, then that
    many bytes read into a reused buffer and dropped (mode 0) or also written to a new file in
    ``folder`` (mode 1); one byte back when they are all in."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(listener.getsockname()[1], flush=True)
    buffer = bytearray(SINK_BUFFER)
    view = memoryview(buffer)
    files = 0
    while True:
        sock, _ = listener.accept()
        with sock:
            head = b""
            while len(head) < 9:
                part = sock.recv(9 - len(head))
                if not part:
                    break
                head += part
            if len(head) < 9:
                continue
            left = struct.unpack(">Q", head[1:])[0]
            out = None
            if head[0] == 1:
                files += 1
                out = open(os.path.join(folder, f"plain{files}.bin"), "wb", buffering=0)
            while left:
                n = sock.recv_into(view[:min(left, len(view))])
                if not n:
                    break
                if out is not None:
                    out.write(view[:n])
                left -= n
            sock.sendall(b"k")
            if out is not None:
                out.close()


def plain_send(port: int, data: bytes, to_file: bool = False) -> float:
    """Seconds to send ``data`` over a new plain socket and get the receiver's answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        started = time.perf_counter()
        sock.sendall(struct.pack(">BQ", int(to_file), len(data)))
        sock.sendall(data)
        if sock.recv(1) != b"k":
            raise RuntimeError("the plain receiver did not answer")
        return time.perf_counter() - started
    finally:
        sock.close()


# --- the agent ---

class AgentProcess:
    def __init__(self, folder: Path):
        self.log = open(folder / "agent-stderr.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workbench_device.agent", "--port", "0", "--data-dir",
             str(folder / "agent"), "--no-mdns", "--json"],
            stdout=subprocess.PIPE, stderr=self.log, cwd=str(ROOT / "device_sdk"))
        announced = json.loads(self.process.stdout.readline())
        self.port = int(announced["port"])
        self.code = announced["pairing_code"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def paired_client(agent: AgentProcess) -> DeviceClient:
    client = DeviceClient("127.0.0.1", agent.port, timeout=120)
    client.hello(HOST_ID)
    client.pair(HOST_ID, "benchmark", agent.code)
    return client


# --- models ---

def big_onnx(path: Path, seed: int) -> None:
    """A valid ONNX model of MODEL_BYTES of float32 weights: y = x @ W."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rows = MODEL_BYTES // (4 * 1000)
    weights = np.random.default_rng(seed).standard_normal((rows, 1000), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])],
        initializer=[numpy_helper.from_array(weights, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


def digits_onnx(path: Path) -> None:
    """DigitsNet of the digits template, random weights, exported to ONNX with torch."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(
        "digits_template_model", ROOT / "resources" / "templates" / "digits" / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    net = module.DigitsNet().eval()
    torch.onnx.export(net, (torch.zeros(1, 1, 8, 8),), str(path), input_names=["images"],
                      output_names=["logits"], dynamic_axes={"images": {0: "batch"}},
                      opset_version=17, dynamo=False)


# --- the figures ---

def push_figures(client: DeviceClient, sink_port: int, folder: Path, runs: int) -> dict:
    models = []
    for index in range(runs + 1):
        path = folder / f"big{index}.onnx"
        big_onnx(path, seed=index)
        models.append(path)
    started = time.perf_counter()
    shas = [sha256_of(path) for path in models]
    client_sha_ms = (time.perf_counter() - started) * 1000.0 / len(models)
    size = models[0].stat().st_size
    client.open_session("onnxruntime")

    def push(index: int) -> tuple:
        began = time.perf_counter()
        result = client.push_model(models[index], sha256=shas[index], wait_until_stored=False)
        pushed = time.perf_counter() - began
        assert result.sent == size, result
        assert client.has_model(shas[index]) == size  # answers once the device has checked it
        return pushed, time.perf_counter() - began

    datas = [models[i].read_bytes() for i in range(len(models))]
    plain_send(sink_port, datas[0])  # warm-up of both sides
    push(0)
    push_times, stored_times, plain_times, to_file_times = [], [], [], []
    for run in range(1, runs + 1):
        order = ("push", "plain", "to_file") if run % 2 else ("to_file", "plain", "push")
        for side in order:
            if side == "push":
                pushed, stored = push(run)
                push_times.append(pushed)
                stored_times.append(stored)
            elif side == "plain":
                plain_times.append(plain_send(sink_port, datas[run]))
            else:
                to_file_times.append(plain_send(sink_port, datas[run], to_file=True))
                # Its 50 MB of dirty pages would be written back during the next measurement
                # (the agent syncs its own before has_model answers).
                os.sync()
    # The same model again (the first one, made a while ago): the client knows the file's
    # sha256 from the first push unless the file changed, and the device has the model.
    second = []
    for _ in range(max(3, runs)):
        began = time.perf_counter()
        result = client.push_model(models[0])
        second.append(time.perf_counter() - began)
        assert result.skipped, result
    push_s, plain_s = statistics.median(push_times), statistics.median(plain_times)
    return {
        "push_throughput_ratio": round(plain_s / push_s, 3),
        "push_ms": round(push_s * 1000, 2),
        "plain_socket_ms": round(plain_s * 1000, 2),
        "push_mb_per_s": round(size / push_s / 1e6, 1),
        "plain_socket_mb_per_s": round(size / plain_s / 1e6, 1),
        "plain_socket_to_file_ms": round(statistics.median(to_file_times) * 1000, 2),
        "push_until_stored_ms": round(statistics.median(stored_times) * 1000, 2),
        "push_until_stored_ratio": round(plain_s / statistics.median(stored_times), 3),
        "client_sha256_ms": round(client_sha_ms, 2),
        "second_push_ms": round(statistics.median(second) * 1000, 2),
        "model_mb": round(size / 1e6, 1),
        "push_runs_ms": [round(t * 1000, 1) for t in push_times],
        "plain_socket_runs_ms": [round(t * 1000, 1) for t in plain_times],
    }


def run_figures(client: DeviceClient, folder: Path, calls: int) -> dict:
    import numpy as np
    import onnxruntime as ort

    path = folder / "digits.onnx"
    digits_onnx(path)
    handle = client.load_model(client.push_model(path).sha256)["model"]
    options = ort.SessionOptions()  # the agent's options for a session of one thread
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    local = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 1, 8, 8), dtype=np.float32)
    remote_out, _ = client.run(handle, {"images": x})
    local_out = local.run(None, {"images": x})[0]
    max_diff = float(np.max(np.abs(remote_out["logits"] - local_out)))
    clock = time.perf_counter
    remote, in_process = [], []
    for _ in range(50):  # warm-up
        client.run(handle, {"images": x})
        local.run(None, {"images": x})
    blocks = 10
    for _ in range(blocks):
        for _ in range(calls // blocks):
            began = clock()
            client.run(handle, {"images": x})
            remote.append(clock() - began)
        for _ in range(calls // blocks):
            began = clock()
            local.run(None, {"images": x})
            in_process.append(clock() - began)
    remote_ms = statistics.median(remote) * 1000
    local_ms = statistics.median(in_process) * 1000
    return {
        "remote_run_overhead_ms": round(remote_ms - local_ms, 4),
        "remote_run_ms": round(remote_ms, 4),
        "in_process_run_ms": round(local_ms, 4),
        "remote_vs_local_max_abs_diff": max_diff,
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--sink":
        sink_main(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="50 MB pushes (and plain sends)")
    parser.add_argument("--calls", type=int, default=2000, help="runs of the digits model")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="wb-bench-device-"))
    sink = subprocess.Popen([sys.executable, __file__, "--sink", str(folder)],
                            stdout=subprocess.PIPE)
    agent = None
    try:
        sink_port = int(sink.stdout.readline())
        agent = AgentProcess(folder)
        with paired_client(agent) as client:
            figures = push_figures(client, sink_port, folder, args.runs)
            figures.update(run_figures(client, folder, args.calls))
    finally:
        if agent is not None:
            agent.stop()
        sink.kill()
        sink.wait()
        shutil.rmtree(folder, ignore_errors=True)
    goals, met = {}, {}
    for name, (relation, goal) in GOALS.items():
        value = figures[name]
        goals[name] = f"{relation} {goal:g}"
        met[name] = {">=": value >= goal, "<": value < goal, "<=": value <= goal}[relation]
    figures["goals"] = goals
    figures["met"] = met
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
