"""Wheels built with the standard front end (``python -m build``) and installed, not in editable
mode, into fresh virtual environments that reuse the packages /work/main/.venv already has.

A fresh venv gets its dependencies through one ``.pth`` line naming a folder of links to
already-installed distributions. ``.pth`` files inside a folder added that way are not read, and
the links leave out this checkout's own editable installs, so only the installed wheel provides
``workbench``."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
PROJECTS = {"workbench": REPO, "workbench-mnn": REPO / "plugins" / "workbench-mnn",
            "workbench-device-agent": REPO / "device_sdk"}
# The distributions this checkout installs in editable mode: the venvs under test get them only
# from the wheels.
OWN_DISTRIBUTIONS = {"workbench", "workbench-mnn", "workbench-device-agent"}


def run(command: list, cwd: Path | str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a command, failing with its output when it exits non-zero."""
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, (f"{command} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}"
                                  f"\n--- stderr\n{done.stderr[-4000:]}")
    return done


def build(project: Path, outdir: Path, *options: str) -> list[Path]:
    """``python -m build --outdir OUTDIR [options] PROJECT``; the files it made."""
    if importlib.util.find_spec("build") is None:
        raise AssertionError("the build package (python -m build) is not installed in this venv: run "
                             "scripts/setup.sh, which installs the test extra that lists it")
    before = set(outdir.glob("*")) if outdir.exists() else set()
    # From the repository root, as packaging/build.sh runs it: the root is then sys.path[0], and
    # the build tools import the packaging library past the packaging/ folder there.
    run([sys.executable, "-m", "build", "--outdir", outdir, *options, project], cwd=REPO, timeout=240)
    return sorted(set(outdir.glob("*")) - before)


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def wheel_metadata(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(f".dist-info/{member}")]
        return archive.read(name).decode()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_entries(distribution: importlib.metadata.Distribution) -> set[str]:
    """What a distribution put at the top of site-packages: packages, modules, .libs folders and
    its .dist-info (console scripts under ../bin are left out)."""
    entries = {Path(str(f)).parts[0] for f in distribution.files or () if not str(f).startswith("..")}
    return {e for e in entries if not e.endswith(".pth") and e != "__pycache__"}


def link_distributions(folder: Path, names: set[str] | None = None) -> Path:
    """A folder of links to distributions installed here: those named and what they require
    (recursively), or, without names, every one except this checkout's own."""
    site_packages = Path(sysconfig.get_path("purelib"))
    wanted: dict[str, importlib.metadata.Distribution] = {}
    if names is None:
        for distribution in importlib.metadata.distributions():
            name = _normalized(distribution.metadata["Name"])
            if name not in OWN_DISTRIBUTIONS and Path(str(distribution.locate_file(""))) == site_packages:
                wanted.setdefault(name, distribution)
    else:
        environment = default_environment() | {"extra": ""}
        pending = list(names)
        while pending:
            name = _normalized(pending.pop())
            if name in wanted:
                continue
            distribution = importlib.metadata.distribution(name)
            wanted[name] = distribution
            for line in distribution.requires or ():
                requirement = Requirement(line)
                if requirement.marker is None or requirement.marker.evaluate(environment):
                    pending.append(requirement.name)
    folder.mkdir(parents=True)
    for distribution in wanted.values():
        for entry in _top_level_entries(distribution):
            source = Path(str(distribution.locate_file(entry)))
            if source.exists() and not (folder / entry).exists():
                (folder / entry).symlink_to(source)
    return folder


def fresh_venv(folder: Path, dependencies: Path) -> Path:
    """A venv (no pip of its own) whose site-packages reads ``dependencies`` through a .pth line;
    its python."""
    run([sys._base_executable, "-m", "venv", "--without-pip", folder], cwd=folder.parent)
    python = folder / "bin" / "python"
    site_packages = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             cwd=folder).stdout.strip())
    (site_packages / "installed_dependencies.pth").write_text(f"{dependencies}\n")
    return python


def pip_install(python: Path, *wheels: Path) -> None:
    """Install wheels into the venv of ``python`` as files (never editable), from nothing else."""
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--disable-pip-version-check", *wheels], cwd=python.parent)


def outside_env(**extra: str) -> dict:
    """The environment for commands run as a user would: no PYTHONPATH, no venv of this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(REPO)))
    env.update(extra)
    return env


def source_version(package_init: Path) -> str:
    """``__version__`` as written in a package's ``__init__.py``."""
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', package_init.read_text(encoding="utf-8"), re.M)
    assert match, f"no __version__ in {package_init}"
    return match.group(1)
