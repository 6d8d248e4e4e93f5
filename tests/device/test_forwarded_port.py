"""A device reached through a forwarded port, as `adb forward tcp:P tcp:7300` reaches a phone over
USB: the forwarder moves bytes and sees only TLS, and the pin made through it holds on a direct
connection (the same TLS and the same certificates on either path)."""

from __future__ import annotations

import socket
import threading

from workbench.device.link import DeviceLink, pair_device
from workbench.device.paired import PairedDevices


class PortForward:
    """A byte-for-byte TCP forwarder from a loopback port to ``target`` (what adb does over
    USB); ``seen`` collects every byte it moved toward the device."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            device = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, device, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(device, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, to_device: bool) -> None:
        try:
            while data := source.recv(65536):
                if to_device:
                    with self._lock:
                        self.seen += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def test_pairing_through_a_forwarded_port_holds_on_a_direct_connection(start_agent, digits_onnx):
    agent = start_agent(name="Cable Phone")
    forward = PortForward(("127.0.0.1", agent.port))
    code = agent.code
    try:
        device = pair_device(f"127.0.0.1:{forward.port}", code)
        with DeviceLink.open(f"127.0.0.1:{forward.port}") as link:
            assert link.push(digits_onnx).size == digits_onnx.stat().st_size
        assert forward.seen.startswith(b"\x16\x03")  # a TLS handshake, not a frame
        assert code.encode() not in forward.seen and b"WBDL" not in forward.seen
    finally:
        forward.close()

    PairedDevices().seen(device.device_id, "127.0.0.1", agent.port)  # as the LAN address
    with DeviceLink.open("Cable Phone") as link:
        assert link.address == agent.address
        assert link.info()["device_id"] == agent.device_id
