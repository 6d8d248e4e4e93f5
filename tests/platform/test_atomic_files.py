"""Atomic writes on real files: the old file or the new one, never a mix, never a leftover."""

from __future__ import annotations

import os

import pytest

from workbench.platform import atomic_files
from workbench.platform.atomic_files import move_into_place, write_atomically, write_text_atomically


def test_a_new_file_gets_the_mode_asked_for_and_an_existing_one_keeps_its_own(tmp_path):
    secret = tmp_path / "devices.json"
    write_atomically(secret, b"{}", mode=0o600)
    assert secret.read_bytes() == b"{}" and secret.stat().st_mode & 0o777 == 0o600
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    write_text_atomically(script, "new")
    assert script.read_text() == "new" and script.stat().st_mode & 0o777 == 0o755


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "run.json"
    target.write_text("old")

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_files.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space"):
        write_text_atomically(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["run.json"]


def test_text_that_is_not_utf8_goes_back_byte_for_byte(tmp_path):
    target = tmp_path / "conflicted.py"
    raw = b"caf\xe9 = 1\r\n"
    target.write_bytes(raw)
    text = raw.decode("utf-8", errors="surrogateescape")
    write_text_atomically(target, text, errors="surrogateescape")
    assert target.read_bytes() == raw


def test_a_finished_file_moves_into_place_over_the_old_one(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    written = tmp_path / ".model.1234.onnx.partial"
    written.write_bytes(b"new")
    move_into_place(written, target)
    assert target.read_bytes() == b"new" and not written.exists()
