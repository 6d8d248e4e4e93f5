"""Secrets in the OS keyring (GNOME Keyring, KWallet, the macOS Keychain, the Windows Credential
Locker), through the ``keyring`` package: a device's pairing secret, a key file's passphrase.
Never in a file of Workbench's. (``secret_store.SecretStore`` is for secrets that may instead
sit in a file of the user's only where no keyring is usable, as OpenSSH keys do.)

Every failure of the keyring (no backend, a locked one, D-Bus down) becomes ``KeyringUnavailable``
with a one-line reason, so each capability says in its own words what could not be kept.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# What a user can do when no keyring works, for the messages of the capabilities.
HOW_TO_GET_A_KEYRING = ("Install or unlock one (GNOME Keyring, KWallet, the macOS Keychain, the "
                        "Windows Credential Locker), or pick a backend with PYTHON_KEYRING_BACKEND")


class KeyringUnavailable(Exception):
    """No OS keyring is usable here; ``reason`` says why, on one line."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def check_keyring() -> None:
    """KeyringUnavailable when no usable keyring backend is configured: to check before asking
    for something (a pairing code, a passphrase) that could not be kept."""
    import keyring  # loaded only when a secret is needed
    from keyring.backends import fail

    if isinstance(keyring.get_keyring(), fail.Keyring):
        raise KeyringUnavailable("the keyring package found no backend")


def store_secret(service: str, name: str, secret: str) -> None:
    """Keep ``secret`` under ``service`` and ``name``; KeyringUnavailable when it cannot be."""
    try:
        import keyring

        keyring.set_password(service, name, secret)
    except Exception as exc:
        raise KeyringUnavailable(one_line(exc)) from None


def load_secret(service: str, name: str) -> str | None:
    """The secret kept under ``service`` and ``name``; None when there is none;
    KeyringUnavailable when the keyring cannot be asked."""
    try:
        import keyring

        return keyring.get_password(service, name)
    except Exception as exc:
        raise KeyringUnavailable(one_line(exc)) from None


def delete_secret(service: str, name: str) -> bool:
    """Forget the secret under ``service`` and ``name``; False when none was kept or the keyring
    could not be asked (which is logged: forgetting is never worth an error)."""
    try:
        import keyring
        from keyring.errors import PasswordDeleteError

        try:
            keyring.delete_password(service, name)
        except PasswordDeleteError:
            return False
        return True
    except Exception as exc:
        log.info("could not delete the secret %s of %s from the keyring: %s", name, service, exc)
        return False


def one_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
