"""The console costs a window nothing until it is used: opening a project window and installing
every capability (the console's included) loads no qtconsole, jupyter_client or ipykernel and
starts no kernel while the Console dock is behind the other bottom docks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from .conftest import make_project

PROBE = textwrap.dedent('''
    import json, sys, time
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow
    window = ProjectWindow(load_project(sys.argv[1]))
    window.show()
    window.install_capabilities()
    end = time.monotonic() + 1.5  # past the moment a dock shown in front would start its kernel
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
    from workbench.console.widgets import panel_of
    panel = panel_of(window)
    loaded = [name for name in ("qtconsole", "jupyter_client", "ipykernel", "zmq", "qtpy") if name in sys.modules]
    print(json.dumps({"loaded": loaded, "consoles": len(panel.consoles()),
                      "commands": [c for c in ("console.runFile", "console.runSelection", "console.runCell",
                                               "console.restart") if c in window.commands]}))
    window.discard_changes_on_close = True
    window.close()
''')


def test_a_project_window_with_every_capability_loads_nothing_of_the_console(tmp_path):
    root = make_project(tmp_path / "project", '[project]\nname = "p"\n[training]\nscript = "script.py"\n')
    result = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"loaded": [], "consoles": 0,
                      "commands": ["console.runFile", "console.runSelection", "console.runCell", "console.restart"]}
