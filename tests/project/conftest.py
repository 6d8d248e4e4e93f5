import os

# Widgets are tested without a display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def private_config_dir(tmp_path, monkeypatch) -> Path:
    """Keep every test's user settings (recent projects, ...) out of the real config folder."""
    folder = tmp_path / "config"
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(folder))
    return folder
