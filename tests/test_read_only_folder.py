"""Projects on a read-only file system: they open, say so, and lose nothing. A real read-only
mount is used, since permission bits do not stop root (who runs CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from workbench.project import create_from_template, load_project
from workbench.ui.project_window import ProjectWindow


@pytest.fixture
def read_only_project():
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only file system needs root (CI runs as root)")
    mount_point = tempfile.mkdtemp(prefix="wb-ro-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mount_point], check=True)
    try:
        root = create_from_template("digits", os.path.join(mount_point, "digits")).root
        subprocess.run(["mount", "-o", "remount,ro", mount_point], check=True)
        yield root
    finally:
        subprocess.run(["umount", "-l", mount_point], check=False)
        os.rmdir(mount_point)


def test_a_new_project_in_a_read_only_folder_is_a_one_line_error(read_only_project):
    result = subprocess.run([sys.executable, "-m", "workbench", "new", str(read_only_project.parent / "other")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("workbench: ") and len(result.stderr.strip().splitlines()) == 1


def test_a_read_only_project_opens_refuses_to_save_with_a_reason_and_save_as_rescues_the_edit(
        qtbot, read_only_project, tmp_path):
    project = load_project(read_only_project)
    assert not project.writable
    before = (read_only_project / "train.py").read_bytes()
    window = ProjectWindow(project)
    qtbot.addWidget(window)
    window.show()
    assert window.current_editor().path.name == "train.py"
    window.commands.execute("editor.insertText", text="# can't keep this on disk\n")
    window.commands.execute("file.save")
    assert "read-only file system" in window.statusBar().currentMessage()
    assert window.current_editor().is_modified()  # the edit is still there
    elsewhere = tmp_path / "train.py"
    window.commands.execute("file.saveAs", path=str(elsewhere))
    assert elsewhere.read_text().startswith("# can't keep this on disk\n")
    assert window.current_editor().path == elsewhere and not window.current_editor().is_modified()
    window.close()
    assert (read_only_project / "train.py").read_bytes() == before
