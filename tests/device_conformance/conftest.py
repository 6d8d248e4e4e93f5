"""The agent under test, started as a process of its own from a command line.

``WORKBENCH_DEVICE_AGENT_COMMAND`` names the agent: a command line with the placeholders
``{port}`` and ``{data_dir}`` (for example ``./my-agent --listen 127.0.0.1:{port} --state
{data_dir}``). The default is the Python agent. The agent must listen on 127.0.0.1 at that port
(or print ``Listening on HOST:PORT``) and print ``Pairing code: NNNNNN`` on its standard output
whenever its code changes (docs/device-protocol.md, section 12).
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
from typing import Callable, List, Optional

import pytest

from .frames import Link

DEFAULT_COMMAND = (f"{shlex.quote(sys.executable)} -m workbench_device.agent --port {{port}} "
                   "--data-dir {data_dir} --no-mdns")
CODE_LINE = re.compile(r"Pairing code: (\d{6})\s*$")
LISTEN_LINE = re.compile(r"Listening on (\S+):(\d+)\s*$")
START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class AgentProcess:
    """An agent process, its port and the pairing codes it printed."""

    def __init__(self, folder: Path):
        self.data_dir = folder / "data"
        self.data_dir.mkdir(parents=True)
        self.port = _free_port()
        template = os.environ.get("WORKBENCH_DEVICE_AGENT_COMMAND") or DEFAULT_COMMAND
        argv = [part.format(port=self.port, data_dir=str(self.data_dir))
                for part in shlex.split(template)]
        self._stderr = open(folder / "agent-stderr.txt", "wb")
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._stderr,
                                        stdin=subprocess.DEVNULL, text=True)
        self.codes: List[str] = []
        self._new_code = threading.Condition()
        self._listening: "queue.Queue[int]" = queue.Queue()
        threading.Thread(target=self._read_output, daemon=True).start()
        self._wait_until_serving()

    def _read_output(self) -> None:
        for line in self.process.stdout:
            listening = LISTEN_LINE.search(line)
            if listening and listening.group(1) in ("127.0.0.1", "localhost"):
                self._listening.put(int(listening.group(2)))
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

    def link(self, timeout: float = 20.0, source: Optional[str] = None) -> Link:
        """A new connection; ``source`` is the local address it comes from."""
        return Link(self.port, timeout=timeout, source=source)

    def pair(self, host_id: str) -> str:
        """Pair ``host_id`` with the code the agent printed; the secret."""
        link = self.link()
        try:
            link.hello(host_id)
            old = self.code
            secret = link.ok("pair", host_id=host_id, host_name="conformance", code=old)["secret"]
            self.wait_for_new_code(old)
            return secret
        finally:
            link.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()


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
def agent(start_agent) -> AgentProcess:
    """The agent most tests share (each test uses its own connections and data)."""
    return start_agent()


@pytest.fixture(scope="session")
def host(agent):
    """(host_id, secret) of a host paired with ``agent``."""
    host_id = "conformance-" + secrets.token_hex(4)
    return host_id, agent.pair(host_id)


@pytest.fixture
def connect(agent, host) -> Callable[..., Link]:
    """``connect(session=True) -> Link``: an authenticated connection (with a session), closed
    after the test."""
    links: List[Link] = []

    def open_link(session: bool = True, runtime: Optional[str] = None) -> Link:
        link = agent.link()
        links.append(link)
        link.hello(host[0])
        link.authenticate(*host)
        if session:
            fields = {"runtime": runtime} if runtime else {}
            link.ok("session.open", **fields)
        return link

    yield open_link
    for link in links:
        link.close()
