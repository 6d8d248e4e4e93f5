"""Every request gets exactly one reply frame, also when the reply's payload is empty or the
reply cannot be sent whole."""

from __future__ import annotations

from workbench_device.protocol import frame_bytes

from .conftest import read_raw_frame


def test_an_empty_file_comes_back_in_one_reply_and_the_connection_goes_on(device):
    device.put_file("empty", b"")
    sock = device.fs.sock
    sock.sendall(frame_bytes({"type": "file.get", "id": 501, "path": "empty"})
                 + frame_bytes({"type": "info", "id": 502}))
    header, payload = read_raw_frame(sock)
    assert (header["type"], header["id"], header["size"], payload) == ("file.get.ok", 501, 0, b"")
    header, _ = read_raw_frame(sock)
    assert (header["type"], header["id"]) == ("info.ok", 502)


def test_a_reply_that_fails_part_way_closes_the_connection(device, agent, monkeypatch):
    from workbench_device import wire

    device.put_file("data.bin", b"x" * 100000)

    def broken_sendfile(self, header, file, offset, count):
        self.sock.sendall(b"WBDL")  # the host has the start of a frame now
        raise OSError("the disk went away")

    monkeypatch.setattr(wire.FrameSocket, "send_file_range", broken_sendfile)
    sock = device.fs.sock
    sock.sendall(frame_bytes({"type": "file.get", "id": 7, "path": "data.bin"}))
    sock.settimeout(10)
    received = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    assert received == b"WBDL"  # and nothing after it: no second reply
