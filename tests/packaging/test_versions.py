"""One version per project, each written once in its package's ``__init__.py``: the app's,
the plugin's and the device agent's. The agent keeps a version of its own (it ships to phones and
boards by itself), and the app declares the range of agent versions it speaks to."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from .conftest import PROJECTS, REPO, source_version

PACKAGES = {"workbench": "workbench", "workbench-mnn": "workbench_mnn", "workbench-device-agent": "workbench_device"}


def pyproject(project: str) -> dict:
    return tomllib.loads((PROJECTS[project] / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_project_reads_its_version_from_its_package_init():
    for project, package in PACKAGES.items():
        settings = pyproject(project)
        assert settings["project"]["dynamic"] == ["version"] and "version" not in settings["project"]
        assert settings["tool"]["hatch"]["version"]["path"] == f"{package}/__init__.py"
        Version(source_version(PROJECTS[project] / package / "__init__.py"))  # a valid version


def test_the_agent_in_this_checkout_is_one_the_app_declares_it_speaks_to():
    [requirement] = [Requirement(r) for r in pyproject("workbench")["project"]["dependencies"]
                     if Requirement(r).name == "workbench-device-agent"]
    agent = source_version(REPO / "device_sdk" / "workbench_device" / "__init__.py")
    assert requirement.specifier.contains(agent), (
        f"workbench requires {requirement} but device_sdk is {agent}: change one of them")


def test_the_app_version_is_the_one_cli_version():
    from click.testing import CliRunner

    from workbench.cli import cli

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"workbench {source_version(REPO / 'workbench' / '__init__.py')}"
