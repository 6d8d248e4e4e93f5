"""The workbench wheel as users get it: built with ``python -m build``, installed without -e into
a fresh venv, and run from a folder outside the checkout. A file the app opens at run time that
the wheel leaves out fails here, where the checkout would have hidden it."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import (PROJECTS, REPO, build, fresh_venv, link_distributions, outside_env, pip_install, run,
                       source_version, wheel_metadata, wheel_names)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@dataclass
class InstalledWorkbench:
    venv: Path
    python: Path
    wheel: Path
    workdir: Path

    def workbench(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run([self.venv / "bin" / "workbench", *args], cwd=self.workdir,
                   env=outside_env(QT_QPA_PLATFORM="offscreen"), timeout=timeout)

    def python_says(self, code: str) -> str:
        return run([self.python, "-c", code], cwd=self.workdir, env=outside_env()).stdout.strip()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> InstalledWorkbench:
    root = tmp_path_factory.mktemp("installed")
    dist = root / "dist"
    [wheel] = build(PROJECTS["workbench"], dist, "--wheel")
    [agent_wheel] = build(PROJECTS["workbench-device-agent"], dist, "--wheel")
    [plugin_wheel] = build(PROJECTS["workbench-mnn"], dist, "--wheel")
    python = fresh_venv(root / "venv", link_distributions(root / "dependencies"))
    pip_install(python, wheel, agent_wheel, plugin_wheel)
    workdir = root / "work"
    workdir.mkdir()
    return InstalledWorkbench(root / "venv", python, wheel, workdir)


def test_the_wheel_holds_the_templates_the_trainkit_and_the_icon(installed):
    names = wheel_names(installed.wheel)
    tracked = run(["git", "ls-files", "resources", "workbench_trainkit"], cwd=REPO).stdout.split()
    expected = {("workbench/" + f) if f.startswith("resources/") else f for f in tracked if (REPO / f).is_file()}
    assert expected - names == set()
    assert "workbench/resources/templates/digits/hparams/digits.hparams" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_installed_wheel_not_the_checkout_is_what_runs(installed):
    found = json.loads(installed.python_says(
        "import json, workbench, workbench_trainkit, workbench_device, workbench_mnn;"
        "from workbench.project.resources import resources_dir;"
        "print(json.dumps([m.__file__ for m in (workbench, workbench_trainkit, workbench_device, workbench_mnn)]"
        " + [str(resources_dir())]))"))
    for path in map(Path, found):
        assert installed.venv in path.parents, f"{path} is not in the installed venv {installed.venv}"
        assert REPO not in path.resolve().parents
    assert Path(found[-1]).name == "resources" and Path(found[-1]).parent.name == "workbench"


def test_workbench_version_prints_the_one_version_of_workbench_init(installed):
    version = source_version(REPO / "workbench" / "__init__.py")
    assert installed.workbench("--version").stdout.strip() == f"workbench {version}"
    assert f"\nVersion: {version}\n" in wheel_metadata(installed.wheel, "METADATA")
    assert installed.wheel.name == f"workbench-{version}-py3-none-any.whl"


def test_the_installed_app_lists_every_template_of_the_checkout(installed):
    listed = {t["name"] for t in json.loads(installed.workbench("templates", "--json").stdout)}
    bundled = {p.parent.name for p in (REPO / "resources" / "templates").glob("*/template.toml")}
    assert listed == bundled


def test_new_digits_project_and_its_screenshot_from_the_installed_app(installed):
    from PySide6.QtGui import QImage

    installed.workbench("new", "--template", "digits", "P")
    project = installed.workdir / "P"
    for name in ("train.py", "model.py", "data.py", "hparams/digits.hparams", ".gitignore"):
        assert (project / name).is_file(), f"the digits project has no {name}"

    shot = installed.workdir / "P.png"
    installed.workbench("screenshot", "P", "-o", "P.png", "--size", "1000x700", timeout=180)
    image = QImage(str(shot))
    assert not image.isNull(), f"{shot} is not a readable PNG"
    assert (image.width(), image.height()) == (1000, 700)
    # A window drawn with its editor, tree and panels has many colours; a blank one has one or two.
    colours = {image.pixel(x, y) for x in range(0, 1000, 7) for y in range(0, 700, 7)}
    assert len(colours) > 20, f"the screenshot looks blank ({len(colours)} colours)"


def test_the_plugin_wheel_registers_through_its_entry_point(installed):
    assert "[workbench.plugins]\nmnn = workbench_mnn:register" in wheel_metadata(
        next(installed.wheel.parent.glob("workbench_mnn-*.whl")), "entry_points.txt")
    registered = json.loads(installed.python_says(
        "import json; from importlib.metadata import entry_points;"
        "print(json.dumps({e.name: e.load().__module__ for e in entry_points(group='workbench.plugins')}))"))
    assert registered == {"cluster": "workbench.cluster.backends", "mnn": "workbench_mnn"}
