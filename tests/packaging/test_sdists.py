"""Each project's sdist, built with ``python -m build``, builds a wheel in turn (the front end
builds the wheel from the sdist), and that wheel has every file of the project's packages."""

from __future__ import annotations

import tarfile

import pytest

from .conftest import PROJECTS, REPO, build, run, wheel_names

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# The folders each wheel is made of, and where their files land in it.
CONTENTS = {
    "workbench": {"workbench": "workbench", "workbench_trainkit": "workbench_trainkit",
                  "resources": "workbench/resources"},
    "workbench-mnn": {"workbench_mnn": "workbench_mnn"},
    "workbench-device-agent": {"workbench_device": "workbench_device"},
}


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_the_sdist_builds_a_wheel_with_every_file_of_the_project(project, tmp_path):
    made = build(PROJECTS[project], tmp_path / "dist")
    [sdist] = [p for p in made if p.name.endswith(".tar.gz")]
    [wheel] = [p for p in made if p.name.endswith(".whl")]
    names = wheel_names(wheel)
    expected = set()
    for folder, target in CONTENTS[project].items():
        tracked = run(["git", "ls-files", folder], cwd=PROJECTS[project]).stdout.split()
        expected |= {target + f[len(folder):] for f in tracked if (PROJECTS[project] / f).is_file()}
    assert expected, f"no tracked files found for {project}"
    assert expected - names == set(), "the wheel built from the sdist lacks files the code loads"
    with tarfile.open(sdist) as archive:
        in_sdist = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert "pyproject.toml" in in_sdist
    # The sdist carries what builds the wheel, not the checkout's docs, tests or other projects.
    assert not {n for n in in_sdist if n.split("/")[0] in ("docs", "tests", "benchmarks", ".ci", "__pycache__")}
    assert not [n for n in in_sdist | names if "__pycache__" in n]


def test_the_workbench_sdist_leaves_out_the_other_projects(tmp_path):
    [sdist] = build(REPO, tmp_path / "dist", "--sdist")
    with tarfile.open(sdist) as archive:
        tops = {m.name.split("/")[1] for m in archive.getmembers() if m.name.count("/") >= 1}
    assert {"workbench", "workbench_trainkit", "resources", "pyproject.toml", "README.md"} <= tops
    assert not tops & {"device_sdk", "plugins", "scripts", "packaging"}
