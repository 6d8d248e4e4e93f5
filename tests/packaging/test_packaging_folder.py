"""The repository's ``packaging/`` folder (build scripts and Debian files) must never shadow the
``packaging`` library that pip, build and hatchling import: it stays a folder of scripts and
data, never a Python package."""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import REPO, run

SITE_PACKAGES = Path(sysconfig.get_path("purelib"))
WHERE_PACKAGING_COMES_FROM = "import packaging; print(packaging.__file__)"


def imported_packaging(cwd: Path, env: dict | None = None) -> Path:
    return Path(run([sys.executable, "-c", WHERE_PACKAGING_COMES_FROM], cwd=cwd, env=env).stdout.strip())


def test_import_packaging_from_the_repository_root_gets_the_library():
    # `python -c` puts the current folder first on sys.path: the root is searched before the library.
    assert imported_packaging(REPO) == SITE_PACKAGES / "packaging" / "__init__.py"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    assert imported_packaging(Path("/"), env) == SITE_PACKAGES / "packaging" / "__init__.py"
    # And in this process, which has the root on sys.path too.
    import packaging

    assert str(REPO) in sys.path and Path(packaging.__file__).parent == SITE_PACKAGES / "packaging"


def test_a_folder_named_packaging_shadows_the_library_only_as_a_package(tmp_path):
    (tmp_path / "packaging").mkdir()
    (tmp_path / "packaging" / "build.sh").write_text("#!/bin/sh\n")
    assert imported_packaging(tmp_path).parent == SITE_PACKAGES / "packaging"
    (tmp_path / "packaging" / "__init__.py").write_text("")
    assert imported_packaging(tmp_path).parent == tmp_path / "packaging"


def test_the_packaging_folder_is_no_python_package_and_names_no_module_like_a_library():
    folder = REPO / "packaging"
    if not folder.is_dir():
        pytest.skip("no packaging/ folder in this checkout")
    assert not (folder / "__init__.py").exists(), "packaging/__init__.py makes the folder shadow the library"
    assert not (REPO / "packaging.py").exists()
    # A script run from packaging/ has that folder first on sys.path: a module there named like an
    # installed or standard one (build.py, setuptools.py, json.py) would replace it for that script.
    clashes = [str(p.relative_to(REPO)) for p in folder.rglob("*.py")
               if p.stem in sys.stdlib_module_names or importlib.util.find_spec(p.stem) is not None]
    assert clashes == [], f"rename these so they cannot shadow a library: {clashes}"
