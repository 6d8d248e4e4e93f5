"""Small programs to debug, with their line numbers named, and a listener that keeps what a
session tells."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from workbench.debug.session import SessionListener

# Line numbers below are those of SAMPLE; the tests name them, so keep them in step.
SAMPLE = '''\
import numpy as np


def square(x):
    y = x * x
    return y


def main():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    total = 0
    # a comment line
    for i in range(5):
        total += square(i)
    print("total", total)
    return total


main()
'''
LINE_VALUES = 10
LINE_TOTAL = 11
LINE_COMMENT = 12
LINE_LOOP = 13
LINE_CALL = 14
LINE_PRINT = 15
LINE_SQUARE_BODY = 5
LINE_RETURN_Y = 6


@pytest.fixture
def sample(tmp_path) -> Path:
    path = tmp_path / "sample.py"
    path.write_text(SAMPLE)
    return path


class Recorder(SessionListener):
    """Keeps every output, breakpoint report, state and the end, for tests to read."""

    def __init__(self):
        self.output: list[tuple[str, str]] = []
        self.breakpoints: dict[str, list] = {}
        self.states: list[str] = []
        self.errors: list[str] = []
        self.ended = threading.Event()
        self.end = None

    def on_state(self, state):
        self.states.append(state)

    def on_output(self, category, text):
        self.output.append((category, text))

    def on_breakpoints(self, path, results):
        self.breakpoints[path] = results

    def on_error(self, message):
        self.errors.append(message)

    def on_ended(self, end):
        self.end = end
        self.ended.set()

    def text(self, category: str = "stdout") -> str:
        return "".join(text for kind, text in list(self.output) if kind == category)
