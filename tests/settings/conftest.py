"""A project window with no capability installed, on a small project, with the user's settings
file in the test's config folder; the theme goes back to light after each test (it is the whole
process's, like the application palette)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.project_windows import open_with_capabilities


@pytest.fixture
def user_settings_file() -> Path:
    folder = Path(os.environ["WORKBENCH_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "settings.toml"


@pytest.fixture
def project_root(tmp_path) -> Path:
    root = tmp_path / "demo"
    root.mkdir()
    (root / "workbench.toml").write_text("# the demo project\n[project]\nname = \"demo\"\n")
    (root / "a.py").write_text("def f(x):\n    return x\n")
    (root / "b.py").write_text("import os\n")
    return root


@pytest.fixture
def open_window(qtbot, project_root):
    from workbench.qt.theme import apply_theme

    windows = []

    def open_(root: Path | None = None):
        window = open_with_capabilities(root or project_root, (), size=(1000, 700))
        qtbot.addWidget(window)
        windows.append(window)
        return window

    yield open_
    for window in windows:
        window.discard_changes_on_close = True
    apply_theme("light")
