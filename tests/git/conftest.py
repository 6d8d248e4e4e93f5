"""Real repositories made with the real git binary, as git-cola's tests do."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Tester", "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester", "GIT_COMMITTER_EMAIL": "ada@example.com",
}


def git(root: Path, *args: str, check: bool = True) -> str:
    """Run git in ``root`` as a person at a terminal would; returns stdout."""
    import os

    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                            env={**os.environ, **GIT_ENV, "GIT_MERGE_AUTOEDIT": "no", "GIT_EDITOR": "true"})
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


@pytest.fixture(autouse=True)
def git_identity(monkeypatch, tmp_path):
    """Commits made by the service need an author; tests never read the user's own config."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir(exist_ok=True)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def make_repo(tmp_path):
    """``make_repo(name, files={path: text}) -> Path``: a repository with one commit of ``files``
    (no commit when ``files`` is None)."""

    def make(name: str = "repo", files: dict[str, str] | None = None, branch: str = "main") -> Path:
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", f"--initial-branch={branch}")
        git(root, "config", "user.name", GIT_ENV["GIT_AUTHOR_NAME"])
        git(root, "config", "user.email", GIT_ENV["GIT_AUTHOR_EMAIL"])
        if files is not None:
            for relative, text in files.items():
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "initial")
        return root

    return make
