"""Editor tests run headless: the offscreen platform must be chosen before Qt loads."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture
def project(tmp_path):
    """An empty project folder."""
    root = tmp_path / "project"
    root.mkdir()
    return root
