"""Secrets of one service kept where this machine can keep them: the OS keyring when one is usable,
else a file readable by its user only, as adb keeps ``~/.android/adbkey`` and OpenSSH
``~/.ssh/id_*`` on servers, containers, WSL and SSH sessions that have no keyring.

The file is JSON ``{name: secret}``, written atomically with mode 0600 under a lock (two processes
never lose each other's writes). A file that other users could read, another user's file, or a
damaged one is refused with ``SecretFileError``, never repaired in silence: someone may have read
it, and what it held may still be recovered. The first time the file is created the store says so
once, plainly, with the path. ``require_keyring`` refuses the file altogether.

Secrets that must never sit in a plain file (a key's passphrase) use ``secrets.py`` directly.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Callable

from workbench.platform.atomic_files import write_atomically
from workbench.platform.locks import locked
from workbench.platform.secrets import HOW_TO_GET_A_KEYRING, KeyringUnavailable, one_line

log = logging.getLogger(__name__)

# Read to learn whether the keyring answers at all (a locked one, D-Bus down: it raises).
_PROBE_NAME = "workbench-keyring-check"


class SecretFileError(Exception):
    """A fallback secrets file that cannot be trusted or read; the message says what and the fix."""

    def __init__(self, path: Path, message: str):
        super().__init__(message)
        self.path = path


class SecretStore:
    """Secrets of one service: the OS keyring when one is usable, else a file ``fallback_file``
    (mode 0600).

    The wording of the messages: ``subject`` is what is kept ("device keys"), ``setting`` the
    setting that refuses the file ("[devices] require_keyring") in ``settings_file``, ``redo`` what
    the user does once a damaged file is moved away ("pair the devices again").
    """

    def __init__(self, service: str, fallback_file: Path, require_keyring: bool = False,
                 on_fallback: Callable[[str], None] | None = None, *, subject: str = "secrets",
                 setting: str = "require_keyring", settings_file: Path | None = None,
                 redo: str = "store the secrets it held again"):
        self.service = service
        self.fallback_file = Path(fallback_file)
        self.require_keyring = require_keyring
        self.on_fallback = on_fallback
        self.subject = subject
        self.setting = setting
        self.settings_file = settings_file
        self.redo = redo
        self._probed = False
        self._backend = None  # the usable keyring backend, None when there is none
        self._unusable_reason = ""

    # --- What callers use -----------------------------------------------------------------------

    def store(self, name: str, secret: str) -> None:
        """Keep ``secret`` under ``name``: in the keyring (and then no longer in the file), else in
        the file. KeyringUnavailable with ``require_keyring`` and no usable keyring;
        SecretFileError when the file cannot be trusted or written."""
        backend = self._usable_keyring()
        if backend is not None:
            try:
                backend.set_password(self.service, name, secret)
            except Exception as exc:
                self._keyring_failed(exc)
            else:
                self._forget_older_copy_in_file(name)
                return
        if self.require_keyring:
            raise self._refusal()
        self._write_to_file(name, secret)

    def load(self, name: str) -> str | None:
        """The secret under ``name``, from the keyring first, then the file (one written while no
        keyring was usable is still found); None when neither holds it."""
        backend = self._usable_keyring()
        if backend is not None:
            try:
                secret = backend.get_password(self.service, name)
            except Exception as exc:
                self._keyring_failed(exc)
            else:
                if secret is not None:
                    return secret
        if self._backend is None and self.require_keyring:
            raise self._refusal()
        return self._read_file().get(name)

    def delete(self, name: str) -> bool:
        """Forget the secret under ``name`` in the keyring and in the file; whether one was kept.
        A keyring that cannot be asked is only logged; an untrusted file is SecretFileError."""
        deleted = False
        backend = self._usable_keyring()
        if backend is not None:
            from keyring.errors import PasswordDeleteError

            try:
                backend.delete_password(self.service, name)
                deleted = True
            except PasswordDeleteError:
                pass
            except Exception as exc:
                log.info("could not delete the secret %s of %s from the keyring: %s",
                         name, self.service, one_line(exc))
        return self._delete_from_file(name) or deleted

    def check(self) -> None:
        """Raise before the user is asked for anything that could not be kept: KeyringUnavailable
        with ``require_keyring`` and no usable keyring; SecretFileError when the file exists but
        cannot be trusted or read, or is needed and cannot be created."""
        backend = self._usable_keyring()
        if backend is None and self.require_keyring:
            raise self._refusal()
        if self.fallback_file.exists():
            self._read_file()
        elif backend is None:
            self._check_file_can_be_created()

    def where(self) -> str:
        """Where secrets are kept, for a message: "the OS keyring (<backend>)" or the file's path."""
        backend = self._usable_keyring()
        if backend is not None:
            return f"the OS keyring ({_backend_name(backend)})"
        if self.require_keyring:
            return f"nowhere: no OS keyring is usable ({self._unusable_reason})"
        return str(self.fallback_file)

    # --- The keyring ----------------------------------------------------------------------------

    def _usable_keyring(self):
        """The keyring backend when one answers, else None (the reason kept for messages)."""
        if self._probed:
            return self._backend
        self._probed = True
        import keyring  # loaded only when a secret is needed
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring):
            self._unusable_reason = "the keyring package found no backend"
        elif isinstance(backend, null.Keyring):
            self._unusable_reason = "the keyring is turned off (null backend)"
        else:
            try:
                backend.get_password(self.service, _PROBE_NAME)
            except Exception as exc:  # KeyringLocked, D-Bus errors, whatever a backend raises
                self._unusable_reason = one_line(exc)
            else:
                self._backend = backend
        if self._backend is None:
            log.info("no usable OS keyring for %s: %s", self.service, self._unusable_reason)
        return self._backend

    def _keyring_failed(self, exc: Exception) -> None:
        """The keyring answered the probe but failed a call (locked since, say): stop using it."""
        self._backend = None
        self._unusable_reason = one_line(exc)
        log.info("the OS keyring failed for %s: %s", self.service, self._unusable_reason)

    def _refusal(self) -> KeyringUnavailable:
        return KeyringUnavailable(
            f"No OS keyring is usable here ({self._unusable_reason}), and {self.setting} = true"
            f"{self._in_settings()} refuses keeping {self.subject} in a file instead. "
            f"{HOW_TO_GET_A_KEYRING}; or set {self.setting} = false{self._in_settings()}.")

    def _in_settings(self) -> str:
        return f" in {self.settings_file}" if self.settings_file else ""

    # --- The file -------------------------------------------------------------------------------

    @property
    def _lock_file(self) -> Path:
        return self.fallback_file.with_name(self.fallback_file.name + ".lock")

    def _read_file(self) -> dict[str, str]:
        """The secrets in the file ({} when there is none); SecretFileError when it cannot be
        trusted or read."""
        path = self.fallback_file
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise SecretFileError(path, f"cannot read {path} ({exc.strerror or exc}); check that "
                                        "it is a file of yours that you can read") from None
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise SecretFileError(path, f"{path} is not a file; move it away")
            _refuse_if_others_can_reach(path, status)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        try:
            entries = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._damaged(f"not JSON: {one_line(exc)}") from None
        if not isinstance(entries, dict):
            raise self._damaged("not a table of names and secrets")
        if not all(isinstance(secret, str) for secret in entries.values()):
            raise self._damaged("a secret that is not text")
        return entries

    def _damaged(self, problem: str) -> SecretFileError:
        path = self.fallback_file
        return SecretFileError(path, f"{path} is damaged ({problem}); Workbench leaves it as it is. "
                                     f"Move it away (mv {path} {path}.damaged) and {self.redo}.")

    def _write_to_file(self, name: str, secret: str) -> None:
        self._make_folder()
        with locked(self._lock_file):
            created = not self.fallback_file.exists()
            entries = self._read_file()
            entries[name] = secret
            self._write_entries(entries)
        if created:
            self._say_fallback_once()

    def _delete_from_file(self, name: str) -> bool:
        if not self.fallback_file.exists():
            return False
        with locked(self._lock_file):
            entries = self._read_file()
            if entries.pop(name, None) is None:
                return False
            self._write_entries(entries)
        return True

    def _forget_older_copy_in_file(self, name: str) -> None:
        """After a secret reached the keyring, drop the copy a keyless time left in the file (else
        a keyring locked later would bring the old secret back)."""
        try:
            self._delete_from_file(name)
        except (SecretFileError, OSError) as exc:
            log.warning("%s is now in the OS keyring, but an older copy in %s stays: %s",
                        name, self.fallback_file, exc)

    def _write_entries(self, entries: dict[str, str]) -> None:
        text = json.dumps(entries, indent=2, sort_keys=True) + "\n"
        # A new file is made 0600; an existing one keeps its mode, which _read_file just found
        # private.
        try:
            write_atomically(self.fallback_file, text.encode("utf-8"), mode=0o600)
        except OSError as exc:
            raise SecretFileError(self.fallback_file, f"cannot write {self.fallback_file} "
                                  f"({exc.strerror or exc}); check the folder's permissions and "
                                  "free space") from None

    def _make_folder(self) -> None:
        folder = self.fallback_file.parent
        if folder.is_dir():
            return
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise SecretFileError(self.fallback_file, f"cannot create the folder {folder} "
                                  f"({exc.strerror or exc}); check its parent's permissions") from None

    def _check_file_can_be_created(self) -> None:
        folder = self.fallback_file.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise SecretFileError(self.fallback_file, f"cannot create {self.fallback_file}: "
                                  f"{folder} is not a folder you can write to; check its permissions")

    def _say_fallback_once(self) -> None:
        settings = str(self.settings_file) if self.settings_file else "your settings"
        message = (f"No OS keyring is usable here ({self._unusable_reason}): keeping {self.subject} "
                   f"in {self.fallback_file}, readable by you only (as OpenSSH keeps ~/.ssh keys). "
                   f"Set {self.setting} = true in {settings} to refuse this.")
        log.warning("%s", message)
        if self.on_fallback is not None:
            self.on_fallback(message)


def _refuse_if_others_can_reach(path: Path, status: os.stat_result) -> None:
    """SecretFileError when other users could read or change the file, as OpenSSH refuses a key
    file. Not on Windows: there are no owner/group/other mode bits there (``st_mode`` only tells
    read-only), access is by ACL, and a file made in the user's profile folder is the user's only
    by default."""
    if os.name == "nt":
        return
    if status.st_uid != os.getuid():
        raise SecretFileError(path, f"{path} belongs to another user (uid {status.st_uid}), who can "
                                    f"read and change it; if it is yours (written with sudo, say), "
                                    f"run: sudo chown $USER {path}; else move it away")
    open_bits = status.st_mode & 0o077
    if open_bits:
        what = ("is readable by" if open_bits & 0o044 else
                "can be changed by" if open_bits & 0o022 else "is open to")
        raise SecretFileError(path, f"{path} {what} other users (mode "
                                    f"{status.st_mode & 0o777:04o}); run: chmod 600 {path}")


def _backend_name(backend) -> str:
    """A keyring backend's name for a user ("SecretService Keyring"); a chainer's, those it chains."""
    chained = getattr(type(backend), "backends", None)
    if isinstance(chained, list) and chained:
        return ", ".join(type(each).name for each in chained)
    return type(backend).name
