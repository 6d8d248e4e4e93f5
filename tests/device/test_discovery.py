"""Finding devices: mDNS on loopback, addresses typed by hand, and USB through adb (missing, or
with no phone attached)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from workbench.device.discovery import adb_forward, browse, find_adb, parse_address, usb_devices
from workbench.device.errors import AdbError, DeviceError
from workbench.device.link import DeviceLink, pair_device, resolve

from .conftest import cli_env, free_port, run_cli


def test_mdns_finds_an_agent_announced_on_loopback_and_its_name_reaches_it(start_agent):
    agent = start_agent(name="Announced Phone", mdns=True)
    found = browse(seconds=30, stop_when=lambda d: d.device_id == agent.device_id)
    [device] = [d for d in found if d.device_id == agent.device_id]
    assert (device.name, device.host, device.port) == ("Announced Phone", "127.0.0.1", agent.port)
    assert device.protocol == 4 and device.source == "mdns"  # the highest it speaks

    target = resolve("Announced Phone")
    assert (target.via, target.port) == ("mdns", agent.port)
    pair_device("Announced Phone", agent.code)
    with DeviceLink.open("announced phone") as link:  # now by its paired name
        assert link.target.via == "paired" and link.info()["name"] == "Announced Phone"


LIST_UNTIL_SEEN = """
import json, sys
from workbench.device.discovery import device_overview
for _ in range(15):
    ids = [row["device_id"] for row in device_overview(seconds=2.0)["devices"]]
    if sys.argv[1] in ids:
        break
print(json.dumps({"ids": ids, "zeroconf_loaded": "zeroconf" in sys.modules}))
"""


def test_listing_devices_browses_the_lan_in_a_child_process_so_the_lister_never_holds_zeroconf(start_agent):
    """The Devices panel lists devices from its window's process: the mDNS browse (zeroconf,
    asyncio) runs in a process of its own, which ends with it."""
    agent = start_agent(name="Listed Phone", mdns=True)
    listed = subprocess.run([sys.executable, "-c", LIST_UNTIL_SEEN, agent.device_id], capture_output=True,
                            text=True, timeout=120, env=cli_env())
    assert listed.returncode == 0, listed.stderr
    result = json.loads(listed.stdout)
    assert agent.device_id in result["ids"]
    assert result["zeroconf_loaded"] is False


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.1:7300", ("127.0.0.1", 7300)),
    ("phone.local:7301", ("phone.local", 7301)),
    ("[::1]:7300", ("::1", 7300)),
    ("Pixel 8", None),
    ("127.0.0.1", None),
])
def test_addresses_are_host_colon_port(text, expected):
    assert parse_address(text) == expected


def test_a_port_out_of_range_is_refused():
    with pytest.raises(DeviceError) as error:
        parse_address("127.0.0.1:70000")
    assert "not a TCP port" in str(error.value)


def test_a_host_without_port_suggests_the_default_port():
    with pytest.raises(DeviceError) as error:
        resolve("192.0.2.77", browse_seconds=0.2)
    assert "192.0.2.77:7300" in str(error.value)


def test_without_adb_usb_says_how_to_install_it(monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("ANDROID_HOME", raising=False)
    monkeypatch.delenv("ANDROID_SDK_ROOT", raising=False)
    with pytest.raises(AdbError) as error:
        adb_forward()
    assert "adb is not installed" in str(error.value) and "apt install adb" in str(error.value)

    done = run_cli("info", "usb", PATH=str(empty))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("workbench: adb is not installed")
    listed = run_cli("list", "--no-browse", "--usb", PATH=str(empty))
    assert listed.returncode == 0 and "adb is not installed" in listed.stdout


@pytest.fixture
def private_adb(tmp_path, monkeypatch):
    """adb with its own server port and home folder (its key stays in the test's folder);
    the server is stopped after the test."""
    adb = shutil.which("adb")
    if adb is None:
        pytest.skip("adb is not installed (Debian: apt-get install adb)")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "ANDROID_SDK_HOME": str(home),
           "ANDROID_ADB_SERVER_PORT": str(free_port())}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env
    subprocess.run([adb, "kill-server"], capture_output=True, timeout=30)


def test_adb_with_no_device_attached_says_to_plug_one_in(private_adb):
    assert find_adb()
    assert usb_devices() == []
    with pytest.raises(AdbError) as error:
        adb_forward()
    assert "no device is attached over USB" in str(error.value)
    assert "USB debugging" in str(error.value)

    done = run_cli("pair", "usb", "--code", "123456")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no device is attached over USB" in done.stderr

    named = run_cli("info", "usb:emulator-5554")
    assert "adb sees no device 'emulator-5554'" in named.stderr
