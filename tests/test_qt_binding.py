"""The Qt binding the project pins must survive what an editor does to it all day."""

import subprocess
import sys

MANY_VOID_CALLS = """
import sys
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication([])
widget = QWidget()
before = sys.getrefcount(None)
for _ in range(50_000):
    widget.setEnabled(True)
print(before, sys.getrefcount(None))
"""


def test_many_void_qt_calls_leave_none_alone():
    # PySide6 6.12.0 dropped a reference to None on every call returning void, which aborts
    # Python 3.11 ("none_dealloc") after a few thousand calls; pyproject.toml keeps it out.
    result = subprocess.run([sys.executable, "-c", MANY_VOID_CALLS], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-500:]
    before, after = map(int, result.stdout.split())
    assert abs(after - before) < 100
