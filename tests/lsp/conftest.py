"""What the language server tests share: a small project whose train.py uses a function of
model.py, waiting while Qt's events go on, and project windows with only the lsp capability."""

from __future__ import annotations

from pathlib import Path

from tests.project_windows import open_with_capabilities
from tests.waiting import wait_with_events

TIMEOUT_S = 90.0

MODEL = '''import torch.nn as nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(1, width, 3)

    def forward(self, x):
        return self.conv(x)


def build(width):
    return Net(width)
'''

TRAIN = '''import torch.nn as nn
from model import build

net = build(8)
head = nn.Linear(8, 2)
print(net, head)
'''

UGLY = '''import os
def  squash( a,b ):
    return a+b
x=[1,2 ,3]
'''


def make_project(root: Path, toml: str = "[project]\nname = \"lsp-test\"\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "workbench.toml").write_text(toml, encoding="utf-8")
    (root / "model.py").write_text(MODEL, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    (root / "ugly.py").write_text(UGLY, encoding="utf-8")
    return root


def line_of(text: str, needle: str) -> tuple[int, int]:
    """1-based line and 0-based column of the first ``needle`` in ``text``."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number, line.index(needle)
    raise AssertionError(f"{needle!r} is not in the text")


def wait_for(condition, timeout: float = TIMEOUT_S, what: str = ""):
    """The first truthy ``condition()``, Qt's events processed meanwhile; fails after ``timeout``."""
    return wait_with_events(condition, timeout, what)


def open_window(root: Path):
    """A project window on ``root`` with only the language server capability installed."""
    return open_with_capabilities(root, ("workbench.lsp.widgets:install",), (1300, 850))


def close_window(window) -> None:
    """Close ``window`` and wait for its language server to end."""
    from workbench.lsp.widgets import controller_of

    controller = controller_of(window)
    window.discard_changes_on_close = True
    window.close()
    if controller is not None:
        controller.shut_down(wait=10)
    window.deleteLater()
