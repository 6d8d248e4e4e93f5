"""The project service stays Qt-free and light, so the CLI and the hub can use it cheaply."""

import subprocess
import sys


def test_importing_the_project_service_loads_no_qt_and_no_heavy_modules():
    code = ("import sys, workbench.project; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'PySide6', 'torch', 'onnx', 'onnxruntime', 'git', 'paramiko', 'sklearn'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
