"""Rolling production back on the devices: after deploys of 0000 then 0001 to two real agents,
a rollback moves production back and both slots serve 0000 again; `workbench registry rollback --no-push`
names the devices that still serve 0001 and `workbench device redeploy` pushes to them; a slot
serving another version is left alone; a device that is down is named and a redeploy reaches it
once it is back."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.device.conftest import AgentProcess, cli_env, run_cli
from tests.device.test_deploy import project, served, slot_agents, start_slot_agents  # noqa: F401
from workbench.device.deploy import SWITCHED, UNREACHABLE, deploy_to_devices
from workbench.device.rollback import redeploy_alias, rollback_alias
from workbench.registry import open_versions
from workbench.registry.deployments import slots_serving


def production_of(project) -> int | None:  # noqa: F811
    return open_versions(project).models.aliases.all().get("production")


def deploy_production(project, version: int, addresses: list[str]) -> str:  # noqa: F811
    """Move production to ``version`` and deploy it, as the pipeline's deploy does; its sha256."""
    open_versions(project).models.set_alias("production", version)
    report = deploy_to_devices(project, "production", addresses)
    assert report.ok, report.to_text()
    return report.sha256


def test_rollback_moves_production_back_and_both_slots_serve_the_older_model(project, slot_agents):  # noqa: F811
    addresses = [a.address for a in slot_agents]
    older = deploy_production(project, 0, addresses)
    newer = deploy_production(project, 1, addresses)
    assert older != newer and all(served(a)[0] == newer for a in slot_agents)
    # A slot that serves the same version deployed as another alias is not production's.
    open_versions(project).models.set_alias("staging", 1)
    staging = deploy_to_devices(project, "staging", [addresses[0]], slot="staging")
    assert staging.sha256 == newer

    push = rollback_alias(project, "production", "the new model misreads 7s")
    assert push.ok and (push.left, push.version) == ("0001", "0000")
    assert push.move["action"] == "rollback" and push.move["reason"] == "the new model misreads 7s"
    [report] = push.reports
    assert {o.address for o in report.outcomes} == set(addresses)
    assert {o.previous for o in report.outcomes} == {newer}
    assert production_of(project) == 0
    for agent in slot_agents:
        assert served(agent)[0] == older
    assert served(slot_agents[0], "staging")[0] == staging.sha256
    # Nothing serves 0001 any more, so a second push has nothing to do.
    assert redeploy_alias(project, "production", "0001").reports == []


def test_a_device_that_is_down_is_named_and_redeploy_reaches_it_once_it_is_back(
        project, slot_agents, request):  # noqa: F811
    up, down = slot_agents
    addresses = [up.address, down.address]
    older = deploy_production(project, 0, addresses)
    deploy_production(project, 1, addresses)
    down.stop()
    push = rollback_alias(project, "production", timeout=20)
    assert not push.ok
    states = {o.address: o.state for o in push.reports[0].outcomes}
    assert states == {up.address: SWITCHED, down.address: UNREACHABLE}
    assert production_of(project) == 0
    assert [s.address for s in slots_serving(project / "registry", 1)] == [down.address]

    back = AgentProcess(down.data_dir, down.name, False, "--port", str(down.port),
                        "--inference-port", str(down.inference_port))
    back.inference_port = down.inference_port
    request.addfinalizer(back.stop)
    again = redeploy_alias(project, "production")  # from the version production's last move left
    assert again.ok and [o.address for o in again.reports[0].outcomes] == [down.address]
    assert served(back)[0] == served(up)[0] == older
    assert production_of(project) == 0


def test_registry_rollback_pushes_to_the_devices_and_with_no_push_names_them_for_a_redeploy(
        project, start_agent):  # noqa: F811
    one, two = start_slot_agents(start_agent)
    for agent in (one, two):  # paired by the commands' own keyring
        assert run_cli("pair", agent.address, "--code", agent.code).returncode == 0
    devices = ["--device", one.address, "--device", two.address]
    assert run_cli("deploy", str(project), "0", *devices).returncode == 0
    open_versions(project).models.set_alias("production", 1)
    newer = run_cli("deploy", str(project), "production", *devices, "--json")
    assert newer.returncode == 0, newer.stderr

    rolled = subprocess.run([sys.executable, "-m", "workbench", "registry", "rollback", str(project),
                             "production", "--no-push", "--json"], capture_output=True, text=True, env=cli_env(),
                            timeout=120)
    assert rolled.returncode == 0, rolled.stderr
    assert json.loads(rolled.stdout)["to"] == "0000"
    assert "devices still serve 0001: Deploy Phone 1 (classifier), Deploy Phone 2 (classifier)" in rolled.stderr
    assert f"workbench device redeploy {project} production" in rolled.stderr
    assert all(served(agent)[0] == json.loads(newer.stdout)["sha256"] for agent in (one, two))

    pushed = run_cli("redeploy", str(project), "production", "--json")
    assert pushed.returncode == 0, pushed.stderr
    data = json.loads(pushed.stdout)
    assert data["ok"] and data["version"] == "0000" and data["from"] == "0001"
    for agent in (one, two):
        assert served(agent)[0] == data["deploys"][0]["sha256"]

    # registry rollback (and device rollback, the same command) does both: production moves
    # back and the slots follow.
    for command in (["registry", "rollback"], ["device", "rollback"]):
        open_versions(project).models.set_alias("production", 1)
        assert run_cli("deploy", str(project), "production", *devices).returncode == 0
        both = subprocess.run([sys.executable, "-m", "workbench", *command, str(project), "production", "--json"],
                              capture_output=True, text=True, env=cli_env(), timeout=120)
        assert both.returncode == 0, both.stderr
        data = json.loads(both.stdout)
        assert data["ok"] and data["move"]["to"] == "0000" and production_of(project) == 0
        for agent in (one, two):
            assert served(agent)[0] == data["deploys"][0]["sha256"]
    nothing = run_cli("rollback", str(project), "nosuchalias")
    assert nothing.returncode == 1 and "there is no alias 'nosuchalias'" in nothing.stderr
