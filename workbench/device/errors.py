"""The device capability's error types.

Every message says what happened and what to do, in a sentence or two a user can act on; the
``workbench`` command prints it as one line and the Devices panel shows it as it is.
"""

from __future__ import annotations


class DeviceError(Exception):
    """Reaching, pairing with or using a device failed; the message says why and what to do.

    ``code`` is the debug link's error code when the device answered with one (``bad_code``,
    ``runtime``…), else empty; ``details`` keeps raw text (a tool's output) for a details view.
    """

    def __init__(self, message: str, code: str = "", details: str = ""):
        super().__init__(message)
        self.code = code
        self.details = details


class DeviceUnreachable(DeviceError):
    """Nothing answers at the address, or the name is not known: no connection was made."""


class ConnectionLost(DeviceError):
    """The device stopped answering during a request (the agent ended, the network dropped, the
    cable came out). A push can be made again and goes on where it stopped."""


class NotPaired(DeviceError):
    """The device does not know this computer (never paired, or its pairings were reset)."""


class CertificateChanged(DeviceError):
    """The device presented another certificate than the one pinned when it was paired (or,
    while pairing, something between the two terminates TLS): nothing was sent to it."""


class PairingRefused(DeviceError):
    """The device refused the pairing code: ``attempts_left`` before pairing locks, or
    ``seconds`` the lock still lasts."""

    def __init__(self, message: str, code: str = "", attempts_left: int | None = None,
                 seconds: int | None = None):
        super().__init__(message, code)
        self.attempts_left = attempts_left
        self.seconds = seconds


class AdbError(DeviceError):
    """USB through adb is not possible here: adb is missing, or no device is attached."""
