"""The device debug link's figures, through a real agent process on loopback, as one JSON object.

Every connection of the link is TLS 1.3 (protocol 2). The legs below run in the same run,
interleaved (the order turns around every run), each with a new 50 MB model so that every push
sends everything; the figures are medians over the runs, and ``*_best`` the same from each
leg's fastest run (``statistic`` says so in the output). Raw MB/s are printed for every leg.

- push_throughput_ratio: ``DeviceClient.push_model`` of a 50 MB ONNX model to the agent over
  TLS (from ``push.begin`` to the ``push.end`` reply, which comes once every byte is on the
  device, in memory the agent keeps for pushes, which it then writes to the model's file while
  it checks the sha256), against the same bytes sent over a bare TLS socket (the same TLS 1.3
  contexts, ``tls.server_context`` / ``tls.client_context``, with the same agent and host
  identities) to a receiver thread in another process that writes them to a file and answers
  one byte at the end: throughput of the push over throughput of the socket. Goal >= 0.8.
  The host knows the model's sha256 before it pushes (hashing it is timed on its own:
  ``client_sha256_ms``). Beside it, ``push_until_stored_ms``: until ``model.has`` says the
  device checked and stored the model.
- tls_overhead_ratio: the same push over TLS, against the same push without TLS: throughput
  with TLS over throughput without (1 means TLS costs nothing). The agent refuses clear text,
  so the clear-text side is served by this script (``--clear-agent``): an ``Agent`` of
  ``workbench_device`` in a process of its own whose accepted sockets go to a subclass of
  ``AgentConnection`` that skips the TLS handshake and takes the benchmark's host as
  authenticated, pushed to by a subclass of ``DeviceClient`` on a bare TCP socket (in a process
  of its own as the real agent is, so that neither side shares this process's GIL). On a
  2-CPU VM it was 0.23-0.31: receiving 50 MB over TLS took about 60 ms of CPU at best against
  about 25 ms without (AES-256-GCM, which Python's ``ssl`` offers no way to change for TLS 1.3;
  two reads per 16 KiB record; the copy out of OpenSSL's record buffer), and the bare TLS
  socket is no faster than the push: the Python around the records (``TLSStream``) was within
  the noise.
- second_push_ms: ``push_model(path)`` of a model the device has, hashing included (the client
  remembers a file's sha256 by its size, time stamps and inode). Goal < 50 ms.
- remote_run_overhead_ms: a batch-1 ``model.run`` of the digits model (DigitsNet of the digits
  template, random weights, exported with torch) through the agent over TLS, round trip, minus
  the same run in onnxruntime in this process with the agent's session options; medians.
  Goal <= 1 ms. Beside it, ``clear_text_run_overhead_ms``: the same through the clear-text
  connection, interleaved with it.

The agent is ``python -m workbench_device.agent`` in a process of its own with a temporary data
folder; this script pairs with the code it prints, with a host identity made in a temporary
folder. Everything runs on 127.0.0.1.

Run: .venv/bin/python benchmarks/device_link.py [--runs 9] [--calls 2000]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "device_sdk"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from goals import print_with_goals  # noqa: E402
from tests.services.device_agent import AgentProcess  # noqa: E402
from workbench_device.client import DeviceClient, connect, sha256_of  # noqa: E402
from workbench_device.connection import AgentConnection  # noqa: E402
from workbench_device.protocol import FIRST_VERSION  # noqa: E402
from workbench_device.tls import (  # noqa: E402
    CERT_FILE,
    Identity,
    KEY_FILE,
    client_context,
    fingerprint,
    load_identity,
    load_or_make_identity,
    server_context,
)
from workbench_device.wire import FrameSocket, tune  # noqa: E402

MODEL_BYTES = 50 * 1000 * 1000
GOALS = {
    "push_throughput_ratio": (">=", 0.8),
    "second_push_ms": ("<", 50.0),
    "remote_run_overhead_ms": ("<=", 1.0),
}
HOST_ID = "device-link-benchmark"
RECEIVE_BUFFER = 1024 * 1024
LENGTH = struct.Struct(">Q")


# --- the bare TLS socket ---

def tls_sink_main(agent_dir: str, host_cert: str, folder: str) -> None:
    """The bare TLS receiver: the agent's identity, the benchmark host's certificate as the one
    pinned host. Each connection is received by a thread of its own: an 8-byte length, then
    that many bytes, written to a new file in ``folder`` a filled buffer at a time; one byte back
    when they are all in the file."""
    agent = load_identity(Path(agent_dir) / CERT_FILE, Path(agent_dir) / KEY_FILE)
    host_der = ssl.PEM_cert_to_DER_cert(Path(host_cert).read_text(encoding="ascii"))
    context = server_context(agent, [host_der])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(listener.getsockname()[1], flush=True)
    files = iter(range(1, 1 << 30))
    while True:
        sock, _ = listener.accept()
        tune(sock)
        path = os.path.join(folder, f"tls-socket{next(files)}.bin")
        threading.Thread(target=_receive_to_file, args=(context, sock, path),
                         daemon=True).start()


def _receive_to_file(context: ssl.SSLContext, sock: socket.socket, path: str) -> None:
    with context.wrap_socket(sock, server_side=True) as tls:
        buffer = bytearray(RECEIVE_BUFFER)
        view = memoryview(buffer)
        head = bytearray(LENGTH.size)
        _recv_exact(tls, memoryview(head))
        left = LENGTH.unpack(head)[0]
        with open(path, "wb", buffering=0) as out:
            while left:
                want = min(left, len(view))
                _recv_exact(tls, view[:want])
                out.write(view[:want])
                left -= want
        tls.sendall(b"k")


def _recv_exact(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("the sender closed before the end")
        got += n


class TLSSocketSender:
    """The host's side of the bare TLS socket: the same client context and identity as the
    push, the agent's certificate checked against the same pin."""

    def __init__(self, port: int, identity: Identity, pin: str):
        self.port = port
        self.context = client_context(identity)
        self.pin = pin

    def send(self, data: bytes) -> float:
        """Seconds from the first byte out to the receiver's answer (after the handshake)."""
        sock = socket.create_connection(("127.0.0.1", self.port))
        tune(sock)
        with self.context.wrap_socket(sock) as tls:
            if fingerprint(tls.getpeercert(binary_form=True)) != self.pin:
                raise RuntimeError("the TLS receiver does not present the agent's certificate")
            started = time.perf_counter()
            tls.sendall(LENGTH.pack(len(data)))
            tls.sendall(data)
            if tls.recv(1) != b"k":
                raise RuntimeError("the TLS receiver did not answer")
            return time.perf_counter() - started


# --- the same push without TLS ---

class ClearTextConnection(AgentConnection):
    """An agent connection without TLS, taken as the benchmark host's from the first frame:
    what the agent does for a push, less the cryptography. Only this script makes one; the
    agent itself has no way to serve clear text."""

    def _start_tls(self) -> bool:
        self.host_id = HOST_ID
        return True


def clear_agent_main(data_dir: str) -> None:
    """An ``Agent`` (logging as the command line's does) whose connections on the port printed
    first are ``ClearTextConnection``s."""
    from workbench_device.agent import Agent
    from workbench_device.logs import setup_logging

    setup_logging(Path(data_dir))
    agent = Agent(Path(data_dir), port=0).start()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(listener.getsockname()[1], flush=True)
    while True:
        sock, address = listener.accept()
        connection = ClearTextConnection(agent, sock, f"{address[0]}:{address[1]}")
        threading.Thread(target=connection.serve, daemon=True).start()


class ClearTextClient(DeviceClient):
    """A ``DeviceClient`` on a bare TCP socket, for ``ClearTextConnection``."""

    def __init__(self, port: int, tls_client: DeviceClient):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10.0)
        tune(sock)
        sock.settimeout(tls_client.timeout)
        # What DeviceClient.__init__ sets once its handshake is done.
        self.host, self.port, self.timeout = "127.0.0.1", port, tls_client.timeout
        self.identity = tls_client.identity
        self.peer_fingerprint = tls_client.peer_fingerprint
        self.fs = FrameSocket(sock)
        self._presented = True
        self._frames_read = 0
        self.on_log = None
        self.logs = collections.deque()
        self.hello_reply = {}
        self.protocol = FIRST_VERSION
        self.session_id = None
        self.on_event = {}
        self.skipped_events = 0
        self._tunnel = None
        self._next_id = 1
        self._waiting = set()
        self._closed = False
        missing = set(vars(tls_client)) - set(vars(self))
        if missing:
            raise RuntimeError(f"DeviceClient has new attributes {sorted(missing)}: set them in "
                               "ClearTextClient too")


# --- the agent's neighbours ---

def start_helper(folder: Path, *args: str) -> subprocess.Popen:
    """This script in another process (``--tls-sink`` or ``--clear-agent``); its port is the
    first line it prints."""
    log = open(folder / f"{args[0].strip('-')}-stderr.log", "wb")
    process = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE,
                               stderr=log)
    log.close()
    process.port = int(process.stdout.readline())
    return process


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

def _median_and_best(times: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(times), "best": min(times)}


def push_figures(client: DeviceClient, clear: DeviceClient, sender: TLSSocketSender,
                 folder: Path, runs: int) -> dict:
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
    clear.open_session("onnxruntime")

    def push(device: DeviceClient, index: int) -> tuple:
        began = time.perf_counter()
        result = device.push_model(models[index], sha256=shas[index], wait_until_stored=False)
        pushed = time.perf_counter() - began
        assert result.sent == size, result
        assert device.has_model(shas[index]) == size  # answers once the device has checked it
        return pushed, time.perf_counter() - began

    def tls_socket(index: int) -> float:
        seconds = sender.send(models[index].read_bytes())
        # Its 50 MB of dirty pages would be written back during the next measurement (the
        # agent syncs its own before has_model answers); then they can go.
        os.sync()
        for received in folder.glob("tls-socket*.bin"):
            received.unlink()
        return seconds

    tls_socket(0)  # warm-up of every side
    push(client, 0)
    push(clear, 0)
    times: Dict[str, List[float]] = {"push": [], "stored": [], "clear": [], "socket": []}
    for run in range(1, runs + 1):
        order = ("push", "clear", "socket") if run % 2 else ("socket", "clear", "push")
        for side in order:
            if side == "push":
                pushed, stored = push(client, run)
                times["push"].append(pushed)
                times["stored"].append(stored)
            elif side == "clear":
                times["clear"].append(push(clear, run)[0])
            else:
                times["socket"].append(tls_socket(run))
    # The same model again (the first one, made a while ago): the client knows the file's
    # sha256 from the first push unless the file changed, and the device has the model.
    second = []
    for _ in range(max(3, runs)):
        began = time.perf_counter()
        result = client.push_model(models[0])
        second.append(time.perf_counter() - began)
        assert result.skipped, result
    for path in models:
        path.unlink()
    push_s, socket_s, clear_s = (_median_and_best(times[side])
                                 for side in ("push", "socket", "clear"))
    stored_s = statistics.median(times["stored"])

    def mb_per_s(seconds: float) -> float:
        return round(size / seconds / 1e6, 1)

    return {
        "statistic": f"median of {runs} interleaved runs per leg (*_best: each leg's fastest)",
        "push_throughput_ratio": round(socket_s["median"] / push_s["median"], 3),
        "push_throughput_ratio_best": round(socket_s["best"] / push_s["best"], 3),
        "tls_overhead_ratio": round(clear_s["median"] / push_s["median"], 3),
        "tls_overhead_ratio_best": round(clear_s["best"] / push_s["best"], 3),
        "push_mb_per_s": mb_per_s(push_s["median"]),
        "tls_socket_to_file_mb_per_s": mb_per_s(socket_s["median"]),
        "clear_text_push_mb_per_s": mb_per_s(clear_s["median"]),
        "push_ms": round(push_s["median"] * 1000, 2),
        "tls_socket_to_file_ms": round(socket_s["median"] * 1000, 2),
        "clear_text_push_ms": round(clear_s["median"] * 1000, 2),
        "push_until_stored_ms": round(stored_s * 1000, 2),
        "client_sha256_ms": round(client_sha_ms, 2),
        "second_push_ms": round(statistics.median(second) * 1000, 2),
        "model_mb": round(size / 1e6, 1),
        "push_runs_ms": [round(t * 1000, 1) for t in times["push"]],
        "tls_socket_runs_ms": [round(t * 1000, 1) for t in times["socket"]],
        "clear_text_push_runs_ms": [round(t * 1000, 1) for t in times["clear"]],
    }


def run_figures(client: DeviceClient, clear: DeviceClient, folder: Path, calls: int) -> dict:
    import numpy as np
    import onnxruntime as ort

    path = folder / "digits.onnx"
    digits_onnx(path)
    handle = client.load_model(client.push_model(path).sha256)["model"]
    clear_handle = clear.load_model(clear.push_model(path).sha256)["model"]
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
    sides = {
        "remote": lambda: client.run(handle, {"images": x}),
        "clear": lambda: clear.run(clear_handle, {"images": x}),
        "local": lambda: local.run(None, {"images": x}),
    }
    times: Dict[str, List[float]] = {name: [] for name in sides}
    for run in sides.values():  # warm-up
        for _ in range(50):
            run()
    blocks = 10
    for _ in range(blocks):
        for name, run in sides.items():
            for _ in range(calls // blocks):
                began = clock()
                run()
                times[name].append(clock() - began)
    remote_ms, clear_ms, local_ms = (statistics.median(times[name]) * 1000
                                     for name in ("remote", "clear", "local"))
    return {
        "remote_run_overhead_ms": round(remote_ms - local_ms, 4),
        "remote_run_ms": round(remote_ms, 4),
        "in_process_run_ms": round(local_ms, 4),
        # The same run through the clear-text connection: what TLS adds to a round trip.
        "clear_text_run_overhead_ms": round(clear_ms - local_ms, 4),
        "remote_vs_local_max_abs_diff": max_diff,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--tls-sink":
        tls_sink_main(*sys.argv[2:5])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--clear-agent":
        clear_agent_main(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="50 MB pushes (and sends) per leg")
    parser.add_argument("--calls", type=int, default=2000, help="runs of the digits model")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="wb-bench-device-"))
    processes: List[subprocess.Popen] = []
    agent = None
    try:
        identity = load_or_make_identity(folder / "host", "device-link-benchmark")
        agent = AgentProcess(folder / "agent", "Device Link Benchmark")
        with DeviceClient.for_pairing("127.0.0.1", agent.port, identity) as pairing:
            pin = pairing.pair(HOST_ID, "benchmark", agent.code)
        assert pin == agent.fingerprint
        sink = start_helper(folder, "--tls-sink", str(agent.data_dir), str(identity.cert_file),
                      str(folder))
        processes.append(sink)
        clear_agent = start_helper(folder, "--clear-agent", str(folder / "clear-agent"))
        processes.append(clear_agent)
        with connect("127.0.0.1", agent.port, HOST_ID, identity, pin, timeout=120) as client:
            with ClearTextClient(clear_agent.port, client) as clear:
                clear.hello(HOST_ID)
                sender = TLSSocketSender(sink.port, identity, pin)
                figures = push_figures(client, clear, sender, folder, args.runs)
                figures.update(run_figures(client, clear, folder, args.calls))
    finally:
        if agent is not None:
            agent.stop()
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)
    print_with_goals(figures, GOALS)


if __name__ == "__main__":
    main()
