"""The device capability: the host side of the debug link to an agent on a phone or board.

Qt-free services here (finding devices, pairing, the link that pushes, runs and benchmarks
models, verification against this computer, the local agent, scripts run on a device with their
output streamed, and debugging a script on a device through the link's tunnel), the ``workbench device …``
commands in ``cli.py``, and the Devices panel in ``widgets/``. The wire protocol itself is
``workbench_device.protocol`` (device_sdk), the one definition both sides use.

Names are imported from their modules on first use (PEP 562): zeroconf, keyring, NumPy and
onnxruntime load only when a device is found, paired or used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.project.lazy_exports import lazy_exports

_WHERE = {
    "DeviceError": "errors",
    "DeviceUnreachable": "errors",
    "ConnectionLost": "errors",
    "NotPaired": "errors",
    "PairingRefused": "errors",
    "AdbError": "errors",
    "PairedDevice": "paired",
    "PairedDevices": "paired",
    "user_data_dir": "paired",
    "SeenDevice": "discovery",
    "UsbDevice": "discovery",
    "browse": "discovery",
    "parse_address": "discovery",
    "usb_devices": "discovery",
    "adb_forward": "discovery",
    "KnownDevice": "discovery",
    "device_overview": "discovery",
    "DeviceLink": "link",
    "DeviceTarget": "link",
    "LoadedModel": "link",
    "pair_device": "link",
    "resolve": "link",
    "Verification": "verify",
    "OutputCheck": "verify",
    "VerificationHistory": "verify",
    "verify_model": "verify",
    "inputs_for": "verify",
    "history_for": "verify",
    "LocalAgent": "serve_local",
    "serve_local": "serve_local",
    "stop_local": "serve_local",
    "running_local_agent": "serve_local",
    "ScriptRun": "scripts",
    "run_script_on_device": "scripts",
    "DeviceDebugRun": "device_debug",
    "DebugTunnel": "device_debug",
    "TunnelClosed": "device_debug",
    "start_device_debug": "device_debug",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())


if TYPE_CHECKING:
    from workbench.device.device_debug import (
        DebugTunnel,
        DeviceDebugRun,
        TunnelClosed,
        start_device_debug,
    )
    from workbench.device.discovery import (
        KnownDevice,
        SeenDevice,
        UsbDevice,
        adb_forward,
        browse,
        device_overview,
        parse_address,
        usb_devices,
    )
    from workbench.device.errors import (
        AdbError,
        ConnectionLost,
        DeviceError,
        DeviceUnreachable,
        NotPaired,
        PairingRefused,
    )
    from workbench.device.link import DeviceLink, DeviceTarget, LoadedModel, pair_device, resolve
    from workbench.device.paired import PairedDevice, PairedDevices, user_data_dir
    from workbench.device.scripts import ScriptRun, run_script_on_device
    from workbench.device.serve_local import LocalAgent, running_local_agent, serve_local, stop_local
    from workbench.device.verify import (
        OutputCheck,
        Verification,
        VerificationHistory,
        history_for,
        inputs_for,
        verify_model,
    )
