"""Session folders: files go in and out, and no path leaves the folder."""

from __future__ import annotations

import os

import pytest

from workbench_device.protocol import Err, RemoteError

from .conftest import connect


def _sandbox(agent, client):
    return agent.data_dir / "sessions" / client.session_id


def test_files_go_into_the_session_folder_and_come_back(device, agent):
    data = os.urandom(3 * 1024 * 1024 + 5)
    reply = device.put_file("inputs/batch 1.bin", data)
    assert reply == {"path": "inputs/batch 1.bin", "size": len(data)}
    assert (_sandbox(agent, device) / "inputs" / "batch 1.bin").read_bytes() == data
    assert device.get_file("inputs/batch 1.bin") == data
    assert device.get_file("./inputs//batch 1.bin") == data
    device.put_file("inputs/batch 1.bin", b"replaced")
    assert device.get_file("inputs/batch 1.bin") == b"replaced"
    device.put_file("empty", b"")
    assert device.get_file("empty") == b""


@pytest.mark.parametrize("path", [
    "../escape.txt", "a/../../escape.txt", "/etc/passwd", "/tmp/x", "..", "a/b/../../../x",
])
def test_paths_that_leave_the_folder_are_refused(device, path):
    with pytest.raises(RemoteError) as error:
        device.put_file(path, b"nope")
    assert error.value.code == Err.SANDBOX
    with pytest.raises(RemoteError) as error:
        device.get_file(path)
    assert error.value.code == Err.SANDBOX
    with pytest.raises(RemoteError) as error:
        device.run_script(path)
    assert error.value.code == Err.SANDBOX
    assert device.put_file("still-works.txt", b"yes")["size"] == 3


def test_symbolic_links_that_point_out_are_refused(device, agent, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("private")
    folder = _sandbox(agent, device)
    # A script in the session could make such links; requests must not follow them out.
    os.symlink(outside / "secret.txt", folder / "file-link")
    os.symlink(outside, folder / "dir-link")
    os.symlink("/", folder / "root-link")
    for path in ("file-link", "dir-link/secret.txt", "root-link/etc/passwd"):
        with pytest.raises(RemoteError) as error:
            device.get_file(path)
        assert error.value.code == Err.SANDBOX, path
    for path in ("file-link", "dir-link/new.txt", "dir-link/sub/new.txt"):
        with pytest.raises(RemoteError) as error:
            device.put_file(path, b"overwrite")
        assert error.value.code == Err.SANDBOX, path
    assert (outside / "secret.txt").read_text() == "private"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # Links that stay inside are fine.
    device.put_file("real.txt", b"inside")
    os.symlink("real.txt", folder / "inner-link")
    assert device.get_file("inner-link") == b"inside"


def test_one_session_cannot_reach_another_sessions_files(agent, credential):
    first, second = connect(agent, credential), connect(agent, credential)
    try:
        first.put_file("mine.txt", b"first's")
        with pytest.raises(RemoteError) as error:
            second.get_file("mine.txt")
        assert error.value.code == Err.NOT_FOUND
        with pytest.raises(RemoteError) as error:
            second.get_file(f"../{first.session_id}/mine.txt")
        assert error.value.code == Err.SANDBOX
        with pytest.raises(RemoteError) as error:
            second.put_file(f"../{first.session_id}/mine.txt", b"overwritten")
        assert error.value.code == Err.SANDBOX
        assert first.get_file("mine.txt") == b"first's"
    finally:
        first.close()
        second.close()


def test_a_session_folder_goes_away_with_its_connection(agent, credential):
    client = connect(agent, credential)
    client.put_file("x", b"1")
    folder = agent.data_dir / "sessions" / client.session_id
    assert folder.is_dir()
    client.close()
    import time

    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not folder.exists()


def test_file_requests_check_their_fields(device):
    with pytest.raises(RemoteError) as error:
        device.get_file("missing.txt")
    assert error.value.code == Err.NOT_FOUND
    device.put_file("folder/file", b"x")
    with pytest.raises(RemoteError) as error:
        device.get_file("folder")
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.request("file.put", b"abc", path="a.txt", size=4)
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.request("file.put", b"abc", path="", size=3)
    assert error.value.code == Err.BAD_REQUEST
    with pytest.raises(RemoteError) as error:
        device.request("file.put", b"abc", path="a\x00b", size=3)
    assert error.value.code == Err.SANDBOX


@pytest.mark.parametrize("path,in_the_way", [
    ("notes.txt/a.bin", "notes.txt"),
    ("notes.txt/deeper/a.bin", "notes.txt"),
    ("inputs/notes.txt/a.bin", "inputs/notes.txt"),
])
def test_a_put_below_a_file_names_the_file_in_the_way(device, agent, path, in_the_way):
    device.put_file(in_the_way, b"a file, not a folder")
    with pytest.raises(RemoteError) as error:
        device.put_file(path, b"x")
    assert error.value.code == Err.BAD_REQUEST
    assert repr(in_the_way) in error.value.message and "not a folder" in error.value.message
    assert device.get_file(in_the_way) == b"a file, not a folder"
    assert device.put_file("still-works.txt", b"yes")["size"] == 3
