"""The smallest project file a test needs: a name and a training script."""

from __future__ import annotations

from pathlib import Path


def write_project_file(root: Path, name: str = "p", script: str = "train.py", more: str = "") -> Path:
    """``root/workbench.toml`` naming the project ``name`` and its training ``script``, with
    ``more`` (further TOML lines) after them; ``root`` is created if needed."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "workbench.toml"
    path.write_text(f'[project]\nname = "{name}"\n\n[training]\nscript = "{script}"\n{more}')
    return path
