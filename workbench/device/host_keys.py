"""This computer's identity on the debug link, and the certificates of the devices it paired
with (the pins).

The identity is a key pair and a self-signed certificate (``device-link/link-key.pem`` and
``link-cert.pem`` in the user's config folder), made on first use. The key file is encrypted
with a random passphrase kept in the OS keyring, so the file alone is of no use; on a machine
with no usable keyring (a server, a container, WSL, an SSH session) the passphrase goes to
``device-secrets.json`` beside it, readable by the user only, as OpenSSH and adb keep their
keys, and Workbench says so once. ``[devices] require_keyring = true`` in ``settings.toml``
refuses that fallback.

Each paired device's pin, the SHA-256 of its certificate, is kept the same way, under the
device's id: a device whose certificate is not its pin is refused.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Callable

from workbench.device.errors import DeviceError
from workbench.platform.secret_store import KeyringUnavailable, SecretFileError, SecretStore
from workbench.platform.user_settings import SettingsFileError, read_setting
from workbench.settings import setting

log = logging.getLogger(__name__)

SERVICE = "workbench-device"
KEY_FOLDER = "device-link"
SECRETS_FILE = "device-secrets.json"
SETTINGS_FILE = "settings.toml"
PASSPHRASE_NAME = "link-key-passphrase"
PIN_PREFIX = "pin:"


def require_keyring(config_dir: Path) -> bool:
    """``[devices] require_keyring`` of the user's settings (false when unset)."""
    try:
        declared = setting("devices.require_keyring")  # its default and its Settings-window row
        return bool(read_setting(config_dir / SETTINGS_FILE, declared.section, declared.name, declared.default))
    except SettingsFileError as exc:
        raise DeviceError(str(exc)) from None


class HostKeys:
    """This computer's debug link identity and its pins, under ``config_dir``. ``on_notice``
    hears, once, that no keyring is usable and where the keys went instead."""

    def __init__(self, config_dir: Path, on_notice: Callable[[str], None] | None = None):
        self.config_dir = Path(config_dir)
        self.key_folder = self.config_dir / KEY_FOLDER
        self._store: SecretStore | None = None
        self._on_notice = on_notice
        self._identity = None

    @property
    def store(self) -> SecretStore:
        if self._store is None:
            self._store = SecretStore(SERVICE, self.config_dir / SECRETS_FILE,
                                      require_keyring=require_keyring(self.config_dir),
                                      on_fallback=self._notice, subject="device keys",
                                      setting="[devices] require_keyring",
                                      settings_file=self.config_dir / SETTINGS_FILE,
                                      redo="pair the devices again")
        return self._store

    def _notice(self, message: str) -> None:
        log.warning("%s", message)
        if self._on_notice is not None:
            self._on_notice(message)

    def where(self) -> str:
        """Where the keys are kept, for messages: the keyring or the fallback file."""
        return self._guarded(self.store.where, "find where the keys are kept")

    def check(self) -> None:
        """DeviceError when no secret could be kept here (checked before a pairing code is
        spent)."""
        self._guarded(self.store.check, "keep this computer's device key")

    def _guarded(self, call: Callable, what: str, *args):
        try:
            return call(*args)
        except KeyringUnavailable as exc:
            raise DeviceError(f"Could not {what}: {exc}") from None
        except SecretFileError as exc:
            raise DeviceError(str(exc)) from None

    # --- the identity ---

    def identity(self):
        """This computer's identity (made on first use); DeviceError when its key cannot be
        used: a file others can read, a keyring that is locked, files that do not match."""
        if self._identity is None:
            self._identity = self._load_or_make()
        return self._identity

    def _load_or_make(self):
        from workbench_device.tls import (
            CERT_FILE,
            KEY_FILE,
            IdentityError,
            load_identity,
            make_identity,
        )

        cert_file, key_file = self.key_folder / CERT_FILE, self.key_folder / KEY_FILE
        try:
            if key_file.exists() and cert_file.exists():
                passphrase = self._guarded(self.store.load, "read the device key's passphrase",
                                           PASSPHRASE_NAME)
                if passphrase is None:
                    raise DeviceError(
                        f"This computer's device key {key_file} is locked with a passphrase that "
                        f"is in neither the OS keyring nor {self.config_dir / SECRETS_FILE}. "
                        "Unlock the keyring it was kept in; or move the folder "
                        f"{self.key_folder} away and pair the devices again")
                return load_identity(cert_file, key_file, passphrase.encode())
            if key_file.exists() or cert_file.exists():
                raise IdentityError(f"{self.key_folder} holds only half of this computer's "
                                    f"device identity; move {self.key_folder} away and pair the "
                                    "devices again")
            passphrase = secrets.token_urlsafe(32)
            self._guarded(self.store.store, "keep the device key's passphrase", PASSPHRASE_NAME,
                          passphrase)
            self.key_folder.mkdir(parents=True, exist_ok=True)
            self.key_folder.chmod(0o700)
            identity = make_identity(cert_file, key_file, "Workbench host", passphrase.encode())
            log.info("made this computer's debug link identity in %s", self.key_folder)
            return identity
        except IdentityError as exc:
            raise DeviceError(str(exc)) from None
        except OSError as exc:
            raise DeviceError(f"cannot use {self.key_folder} ({exc.strerror or exc}); check "
                              "its permissions") from None

    # --- pins ---

    def pin(self, device_id: str) -> str | None:
        """The fingerprint pinned for ``device_id``; None when it is not paired."""
        return self._guarded(self.store.load, "read the device's pinned certificate",
                             PIN_PREFIX + device_id)

    def set_pin(self, device_id: str, fingerprint: str) -> None:
        self._guarded(self.store.store, "keep the device's pinned certificate",
                      PIN_PREFIX + device_id, fingerprint)

    def forget(self, device_id: str) -> None:
        try:
            self.store.delete(PIN_PREFIX + device_id)
        except (KeyringUnavailable, SecretFileError) as exc:
            log.info("could not forget the pin of %s: %s", device_id, exc)
