"""The agent under test, started as a process of its own from a command line.

``WORKBENCH_DEVICE_AGENT_COMMAND`` names the agent: a command line with the placeholders
``{port}`` and ``{data_dir}`` (for example ``./my-agent --listen 127.0.0.1:{port} --state
{data_dir}``). The default is the Python agent. The agent must listen on 127.0.0.1 at that port
(or print ``Listening on HOST:PORT``), print ``Certificate: SHA256:...`` and print ``Pairing
code: NNNNNN`` on its standard output whenever its code changes (docs/device-protocol.md,
section 12). It is restarted on the same data folder to check that its certificate and its
pins last.
"""

from __future__ import annotations

import os
import queue
import re
import secrets
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import pytest

from .frames import Link
from .pairing import Identity, make_identity

DEFAULT_COMMAND = (f"{shlex.quote(sys.executable)} -m workbench_device.agent --port {{port}} "
                   "--data-dir {data_dir} --no-mdns")
CODE_LINE = re.compile(r"Pairing code: (\d{6})\s*$")
LISTEN_LINE = re.compile(r"Listening on (\S+):(\d+)\s*$")
CERTIFICATE_LINE = re.compile(r"Certificate: (SHA256:[0-9a-f]{4}(?::[0-9a-f]{4}){7})\s*$")
START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AgentProcess:
    """An agent process, its port, the certificate line and the pairing codes it printed."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.data_dir = folder / "data"
        self.data_dir.mkdir(parents=True)
        self.process: Optional[subprocess.Popen] = None
        self._launch()

    def _launch(self) -> None:
        # Another process may take the free port between the probe and the agent's bind: an
        # agent that ends before it serves is started again on another port.
        for attempt in range(3):
            self.port = _free_port()
            template = os.environ.get("WORKBENCH_DEVICE_AGENT_COMMAND") or DEFAULT_COMMAND
            argv = [part.format(port=self.port, data_dir=str(self.data_dir))
                    for part in shlex.split(template)]
            self._stderr = open(self.folder / "agent-stderr.txt", "ab")
            self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._stderr,
                                            stdin=subprocess.DEVNULL, text=True)
            self.codes: List[str] = []
            self.certificate_line: Optional[str] = None
            self._new_code = threading.Condition()
            self._listening: "queue.Queue[int]" = queue.Queue()
            threading.Thread(target=self._read_output, args=(self.process,), daemon=True).start()
            try:
                self._wait_until_serving()
                return
            except (RuntimeError, OSError):
                if attempt == 2 or self.process.poll() is None:
                    raise
                self._stderr.close()

    def _read_output(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            listening = LISTEN_LINE.search(line)
            if listening and listening.group(1) in ("127.0.0.1", "localhost"):
                self._listening.put(int(listening.group(2)))
            certificate = CERTIFICATE_LINE.search(line)
            if certificate:
                self.certificate_line = certificate.group(1)
            code = CODE_LINE.search(line)
            if code:
                with self._new_code:
                    self.codes.append(code.group(1))
                    self._new_code.notify_all()

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        with self._new_code:
            while not self.codes:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the agent did not print a pairing code (exit code "
                                       f"{self.process.poll()}); see {self._stderr.name}")
                self._new_code.wait(0.1)
        try:
            self.port = self._listening.get(timeout=1.0)
        except queue.Empty:
            pass  # it does not say: the port it was given
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @property
    def code(self) -> str:
        with self._new_code:
            return self.codes[-1]

    def wait_for_new_code(self, old: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        with self._new_code:
            while self.codes[-1] == old:
                left = deadline - time.monotonic()
                assert left > 0, "the agent printed no new pairing code after a pairing"
                self._new_code.wait(left)
            return self.codes[-1]

    def link(self, identity: Optional[Identity] = None, timeout: float = 20.0,
             source: Optional[str] = None, pin: Optional[str] = None) -> Link:
        """A new TLS connection, with ``identity``'s certificate (none when None); ``source`` is
        the local address it comes from."""
        return Link(self.port, identity, timeout=timeout, source=source, pin=pin)

    def pair(self, identity: Identity, host_id: str) -> str:
        """Pair ``identity`` as ``host_id`` with the code the agent printed; the agent's
        certificate fingerprint, the host's pin."""
        link = self.link(identity=None)
        try:
            old = self.code
            link.pair(identity, host_id, old)
            self.wait_for_new_code(old)
            return link.agent_fingerprint
        finally:
            link.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()

    def restart(self) -> None:
        """Stop the agent and start it again on the same data folder (on a new port)."""
        self.stop()
        self._launch()


@pytest.fixture(scope="session")
def start_agent(tmp_path_factory):
    """``start_agent() -> AgentProcess``: a new agent with an empty data folder (its standard
    error is kept beside it, in pytest's temporary folder)."""
    folder = tmp_path_factory.mktemp("conformance")
    agents: List[AgentProcess] = []

    def start() -> AgentProcess:
        agent = AgentProcess(folder / f"agent{len(agents)}")
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.stop()


@pytest.fixture(scope="session")
def make_host(tmp_path_factory) -> Callable[..., Identity]:
    """``make_host(name) -> Identity``: a new host key pair and self-signed certificate."""
    folder = tmp_path_factory.mktemp("hosts")
    return lambda name="host", **dates: make_identity(
        folder / secrets.token_hex(4), name, **dates)


@pytest.fixture(scope="session")
def agent(start_agent) -> AgentProcess:
    """The agent most tests share (each test uses its own connections and data)."""
    return start_agent()


@pytest.fixture(scope="session")
def host(agent, make_host) -> Tuple[str, Identity, str]:
    """(host_id, identity, pin) of a host paired with ``agent``."""
    host_id = "conformance-" + secrets.token_hex(4)
    identity = make_host("conformance")
    return host_id, identity, agent.pair(identity, host_id)


@pytest.fixture
def connect(agent, host) -> Callable[..., Link]:
    """``connect(session=True, versions=[2]) -> Link``: a connection with the paired host's
    certificate, which is authenticated from its first frame (with a session), said hello to
    offering ``versions``, closed after the test."""
    links: List[Link] = []

    def open_link(session: bool = True, runtime: Optional[str] = None,
                  versions: Optional[List[int]] = None) -> Link:
        link = agent.link(identity=host[1], pin=host[2])
        links.append(link)
        hello = link.hello(versions)
        assert hello["paired"] is True and hello["auth"] == "certificate", hello
        if session:
            fields = {"runtime": runtime} if runtime else {}
            link.ok("session.open", **fields)
        return link

    yield open_link
    for link in links:
        link.close()
