"""The device agent's wheel on its own: installed into a venv holding only what it declares
(NumPy, onnxruntime, cryptography, SPAKE2 and what they need), where it starts, answers --help
and never imports Workbench, torch or Qt."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from .conftest import (PROJECTS, REPO, build, fresh_venv, link_distributions, outside_env, pip_install, run,
                       source_version, wheel_metadata)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FORBIDDEN = ("workbench", "workbench_trainkit", "workbench_mnn", "torch", "PySide6", "shiboken6")


@pytest.fixture(scope="module")
def agent_venv(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's python, the wheel)."""
    root = tmp_path_factory.mktemp("agent")
    [wheel] = build(PROJECTS["workbench-device-agent"], root / "dist", "--wheel")
    declared = {Requirement(line.split(":", 1)[1].strip()) for line in wheel_metadata(wheel, "METADATA").splitlines()
                if line.startswith("Requires-Dist:")}
    required = {r.name for r in declared if r.marker is None}
    assert required == {"numpy", "onnxruntime", "cryptography", "spake2"}
    python = fresh_venv(root / "venv", link_distributions(root / "dependencies", required))
    pip_install(python, wheel)
    return python, wheel


# Run in the agent's venv: records every module the process imported and every import of a
# forbidden package it tried (one that failed, caught by the code, counts too), written as JSON
# to argv[1] when the process exits; argv[2] is "--import-all" or the agent's arguments.
WATCHED_RUN = r"""
import atexit, importlib, json, runpy, sys
out, args = sys.argv[1], sys.argv[2:]
forbidden = set(%r)
attempted = []

class RecordForbidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in forbidden:
            attempted.append(name)
        return None

sys.meta_path.insert(0, RecordForbidden())
atexit.register(lambda: open(out, "w").write(json.dumps({"modules": sorted(sys.modules), "attempted": attempted})))
if args == ["--import-all"]:
    import pkgutil, workbench_device
    for module in pkgutil.walk_packages(workbench_device.__path__, "workbench_device."):
        importlib.import_module(module.name)
else:
    sys.argv = ["workbench_device", *args]
    runpy.run_module("workbench_device", run_name="__main__", alter_sys=True)
""" % (FORBIDDEN,)


def forbidden_among(modules: list[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in FORBIDDEN}


def test_the_agent_venv_cannot_even_find_workbench_torch_or_qt(agent_venv):
    python, _ = agent_venv
    findable = run([python, "-c", "import importlib.util as u; print([n for n in %r if u.find_spec(n)])" % (FORBIDDEN,)],
                   cwd=python.parent, env=outside_env()).stdout.strip()
    assert findable == "[]"


def test_the_agent_wheel_answers_help_and_its_version(agent_venv):
    python, wheel = agent_venv
    assert "--port" in run([python, "-m", "workbench_device", "--help"], cwd=python.parent, env=outside_env()).stdout
    assert "--data-dir" in run([python.parent / "workbench-device-agent", "--help"], cwd=python.parent,
                               env=outside_env()).stdout
    version = source_version(REPO / "device_sdk" / "workbench_device" / "__init__.py")
    assert wheel.name == f"workbench_device_agent-{version}-py3-none-any.whl"
    assert "\nRequires-Python: >=3.9\n" in wheel_metadata(wheel, "METADATA")


def test_importing_every_agent_module_imports_nothing_of_workbench_torch_or_qt(agent_venv, tmp_path):
    python, _ = agent_venv
    record = tmp_path / "imports.json"
    run([python, "-c", WATCHED_RUN, record, "--import-all"], cwd=tmp_path, env=outside_env())
    seen = json.loads(record.read_text())
    assert {"workbench_device.agent", "workbench_device.client", "workbench_device.runtimes"} <= set(seen["modules"])
    assert forbidden_among(seen["modules"]) == set()
    assert seen["attempted"] == []


def test_a_started_and_stopped_agent_imported_nothing_of_workbench_torch_or_qt(agent_venv, tmp_path):
    python, _ = agent_venv
    record = tmp_path / "imports.json"
    agent = subprocess.Popen([python, "-c", WATCHED_RUN, record, "--port", "0", "--inference-port", "0",
                              "--no-mdns", "--json", "--data-dir", tmp_path / "data"],
                             cwd=tmp_path, env=outside_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in agent.stdout], daemon=True).start()
    try:
        while True:
            line = lines.get(timeout=60)
            if line.startswith("{") and json.loads(line).get("event") == "listening":
                assert json.loads(line)["port"] > 0
                break
    finally:
        agent.send_signal(signal.SIGTERM)
        code = agent.wait(timeout=30)
    assert code == 0
    seen = json.loads(record.read_text())
    assert {"workbench_device.agent", "ssl"} <= set(seen["modules"])
    assert forbidden_among(seen["modules"]) == set()
    assert seen["attempted"] == []
