"""Installing the cluster capability costs the window nothing heavy: no paramiko, no keyring,
no dialog module until a command opens it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent('''
    import json, sys
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from workbench.project import load_project
    from workbench.ui.project_window import ProjectWindow
    window = ProjectWindow(load_project(sys.argv[1]))
    window.show()
    window.install_capabilities()
    loaded = [name for name in ("paramiko", "keyring", "workbench.cluster.connection",
                                "workbench.cluster.widgets.run_dialog",
                                "workbench.cluster.widgets.profiles_dialog") if name in sys.modules]
    print(json.dumps({"loaded": loaded, "commands": [c for c in ("cluster.profiles", "cluster.runOnCluster",
                                                                 "cluster.pullProducts") if c in window.commands]}))
''')


def test_the_cluster_capability_installs_without_loading_ssh_or_its_dialogs(project):
    result = subprocess.run([sys.executable, "-c", PROBE, str(project)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"loaded": [], "commands": ["cluster.profiles", "cluster.runOnCluster", "cluster.pullProducts"]}
