"""Secrets kept in the OS keyring when one is usable, else in a file of the user's only: with a
working keyring, with none (as on a server or in a container), with a locked one, and with a file
that cannot be trusted."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys

import keyring
import pytest
from keyring.backends import fail
from keyring.errors import KeyringLocked

from tests.cluster.conftest import MemoryKeyring
from tests.device.keyring_file import KEYRING_FILE_ENV, FileKeyring
from workbench.platform.secret_store import SecretFileError, SecretStore
from workbench.platform.secrets import HOW_TO_GET_A_KEYRING, KeyringUnavailable

SERVICE = "workbench-test"


class LockedKeyring(MemoryKeyring):
    """A keyring that is there but locked (its unlock prompt dismissed, or none can be shown)."""

    def get_password(self, *arguments):
        raise KeyringLocked("Failed to unlock the collection!")

    set_password = delete_password = get_password


class KeyringThatLocksOnWrite(MemoryKeyring):
    """A keyring that answers reads but refuses to keep anything (it locked after the probe)."""

    def set_password(self, *arguments):
        raise KeyringLocked("Failed to unlock the item!")


@pytest.fixture
def use_keyring():
    """``use(backend)``: make ``backend`` the keyring until the test ends."""
    previous = keyring.get_keyring()
    yield keyring.set_keyring
    keyring.set_keyring(previous)


@pytest.fixture
def device_keys(tmp_path):
    """``make(**options) -> SecretStore`` over ``<tmp>/config/device-keys.json`` (the folder not
    yet made), worded as the device capability words it; the messages it gave are in ``said``."""
    said: list[str] = []

    def make(**options) -> SecretStore:
        options.setdefault("on_fallback", said.append)
        return SecretStore(SERVICE, tmp_path / "config" / "device-keys.json", subject="device keys",
                           setting="[devices] require_keyring",
                           settings_file=tmp_path / "config" / "settings.toml",
                           redo="pair the devices again", **options)

    make.said = said
    make.file = tmp_path / "config" / "device-keys.json"
    return make


def test_with_a_working_keyring_secrets_stay_out_of_any_file(use_keyring, device_keys, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv(KEYRING_FILE_ENV, str(tmp_path / "os-keyring.json"))
    use_keyring(FileKeyring())
    store = device_keys()
    store.check()
    store.store("device-1", "s3cret")
    assert store.load("device-1") == "s3cret"
    assert store.load("device-2") is None
    assert store.where() == "the OS keyring (keyring file FileKeyring)"
    assert not device_keys.file.exists() and device_keys.said == []
    assert store.delete("device-1") is True
    assert store.delete("device-1") is False
    assert FileKeyring().get_password(SERVICE, "device-1") is None


def test_without_a_keyring_secrets_go_to_a_file_of_the_user_only_said_once(use_keyring, device_keys,
                                                                            caplog):
    use_keyring(fail.Keyring())
    first, second = device_keys(), device_keys()
    first.check()
    with caplog.at_level(logging.WARNING, logger="workbench.platform.secret_store"):
        first.store("device-1", "s3cret")
        first.store("device-2", "other")
        second.store("device-3", "third")
    path = device_keys.file
    assert device_keys.said == [
        f"No OS keyring is usable here (the keyring package found no backend): keeping device keys "
        f"in {path}, readable by you only (as OpenSSH keeps ~/.ssh keys). Set [devices] "
        f"require_keyring = true in {path.parent / 'settings.toml'} to refuse this."]
    assert [record.getMessage() for record in caplog.records] == device_keys.said
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert second.load("device-1") == "s3cret" and first.load("device-3") == "third"
    assert first.where() == str(path)
    assert second.delete("device-2") is True
    assert first.delete("device-2") is False
    assert device_keys(on_fallback=None).load("device-2") is None


def test_require_keyring_without_one_refuses_before_anything_is_asked(use_keyring, device_keys):
    use_keyring(fail.Keyring())
    store = device_keys(require_keyring=True)
    with pytest.raises(KeyringUnavailable) as raised:
        store.check()
    message = str(raised.value)
    assert message.startswith("No OS keyring is usable here (the keyring package found no backend), "
                              "and [devices] require_keyring = true in ")
    assert "refuses keeping device keys in a file instead" in message
    assert HOW_TO_GET_A_KEYRING in message
    assert message.endswith(f"or set [devices] require_keyring = false in "
                            f"{device_keys.file.parent / 'settings.toml'}.")
    with pytest.raises(KeyringUnavailable):
        store.store("device-1", "s3cret")
    with pytest.raises(KeyringUnavailable):
        store.load("device-1")
    assert not device_keys.file.parent.exists() and device_keys.said == []


def test_a_locked_keyring_means_the_file_or_with_require_keyring_a_clear_refusal(use_keyring,
                                                                                 device_keys):
    use_keyring(LockedKeyring())
    with pytest.raises(KeyringUnavailable) as raised:
        device_keys(require_keyring=True).check()
    assert str(raised.value).startswith("No OS keyring is usable here (Failed to unlock the "
                                        "collection!), and [devices] require_keyring = true")

    store = device_keys()
    store.check()
    store.store("device-1", "s3cret")
    assert store.load("device-1") == "s3cret"
    assert "(Failed to unlock the collection!)" in device_keys.said[0]
    assert store.where() == str(device_keys.file)


def test_a_keyring_that_refuses_a_write_after_answering_leaves_the_secret_in_the_file(use_keyring,
                                                                                       device_keys):
    backend = KeyringThatLocksOnWrite()
    use_keyring(backend)
    store = device_keys()
    assert store.where() == "the OS keyring (test secret store KeyringThatLocksOnWrite)"
    store.store("device-1", "s3cret")
    assert backend.passwords == {}
    assert device_keys(on_fallback=None).load("device-1") == "s3cret"
    assert "(Failed to unlock the item!)" in device_keys.said[0]


@pytest.mark.parametrize(("mode", "words"), [(0o644, "is readable by"), (0o620, "can be changed by")])
def test_a_file_other_users_can_reach_is_refused_and_left_as_it_is(use_keyring, device_keys, mode,
                                                                   words):
    use_keyring(fail.Keyring())
    device_keys().store("device-1", "s3cret")
    path = device_keys.file
    path.chmod(mode)
    before = path.read_bytes()
    store = device_keys()
    for attempt in (store.check, lambda: store.load("device-1"),
                    lambda: store.store("device-2", "other"), lambda: store.delete("device-1")):
        with pytest.raises(SecretFileError) as raised:
            attempt()
        assert str(raised.value) == f"{path} {words} other users (mode 0{mode:o}); run: chmod 600 {path}"
        assert raised.value.path == path
    assert stat.S_IMODE(path.stat().st_mode) == mode and path.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a file to another user takes root")
def test_a_file_another_user_owns_is_refused(use_keyring, device_keys):
    use_keyring(fail.Keyring())
    device_keys().store("device-1", "s3cret")
    os.chown(device_keys.file, 65534, -1)
    with pytest.raises(SecretFileError) as raised:
        device_keys().load("device-1")
    assert str(raised.value).startswith(f"{device_keys.file} belongs to another user (uid 65534)")


def test_a_folder_where_the_file_should_be_is_refused(use_keyring, device_keys):
    use_keyring(fail.Keyring())
    device_keys.file.mkdir(parents=True)
    with pytest.raises(SecretFileError, match="device-keys.json is not a file; move it away"):
        device_keys().check()


@pytest.mark.parametrize("content", [b'{"device-1": "s3cr', b'["device-1"]', b'{"device-1": 7}',
                                     b"\xff\xfe"])
def test_a_damaged_file_is_named_and_never_overwritten(use_keyring, device_keys, content):
    use_keyring(fail.Keyring())
    path = device_keys.file
    path.parent.mkdir(mode=0o700)
    path.write_bytes(content)
    path.chmod(0o600)
    store = device_keys()
    for attempt in (store.check, lambda: store.load("device-1"),
                    lambda: store.store("device-2", "other")):
        with pytest.raises(SecretFileError) as raised:
            attempt()
        message = str(raised.value)
        assert message.startswith(f"{path} is damaged (")
        assert message.endswith(f"Move it away (mv {path} {path}.damaged) and pair the devices again.")
    assert path.read_bytes() == content
    assert device_keys.said == []


def test_a_secret_kept_in_the_file_is_found_once_a_keyring_appears_and_moves_there(use_keyring,
                                                                                   device_keys):
    use_keyring(fail.Keyring())
    device_keys().store("device-1", "s3cret")
    device_keys().store("device-2", "other")

    memory = MemoryKeyring()
    use_keyring(memory)
    store = device_keys(require_keyring=True)
    store.check()
    assert store.load("device-1") == "s3cret"
    store.store("device-1", "renewed")
    assert memory.passwords == {(SERVICE, "device-1"): "renewed"}
    assert "device-1" not in device_keys.file.read_text()
    assert store.load("device-1") == "renewed"
    assert store.delete("device-2") is True and store.load("device-2") is None


WRITER = """
import sys
from pathlib import Path
from workbench.platform.secret_store import SecretStore

store = SecretStore("workbench-test", Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
for number in range(int(sys.argv[3])):
    store.store(f"{sys.argv[2]}-{number}", f"secret of {sys.argv[2]}-{number}")
"""


def test_two_processes_writing_at_once_lose_nothing(use_keyring, device_keys, start_python):
    count = 25
    environment = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    writers = [start_python(WRITER, str(device_keys.file), name, str(count), env=environment,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for name in ("laptop", "server")]
    for writer in writers:
        assert writer.stdout.readline() == "ready\n"
    for writer in writers:  # both start writing together
        writer.stdin.write("go\n")
        writer.stdin.close()
    for writer in writers:
        assert writer.wait(timeout=60) == 0

    use_keyring(fail.Keyring())
    store = device_keys()
    for name in ("laptop", "server"):
        for number in range(count):
            assert store.load(f"{name}-{number}") == f"secret of {name}-{number}"
    assert stat.S_IMODE(device_keys.file.stat().st_mode) == 0o600
