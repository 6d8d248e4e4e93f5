"""Secrets in the OS keyring, with a keyring of the test's own, and with none usable (as on a
machine without a keyring service)."""

from __future__ import annotations

import keyring
import pytest
from keyring.backends import fail

from tests.cluster.conftest import MemoryKeyring
from workbench.platform.secrets import KeyringUnavailable, check_keyring, delete_secret, load_secret, store_secret


class BrokenKeyring(MemoryKeyring):
    """A keyring that is there but cannot be used (locked, its service gone)."""

    def get_password(self, *arguments):
        raise RuntimeError("The keyring is locked\nD-Bus said more on this line")

    set_password = delete_password = get_password


@pytest.fixture
def use_keyring():
    """``use(backend)``: make ``backend`` the keyring until the test ends."""
    previous = keyring.get_keyring()
    yield keyring.set_keyring
    keyring.set_keyring(previous)


def test_a_secret_is_kept_read_and_forgotten(use_keyring):
    memory = MemoryKeyring()
    use_keyring(memory)
    check_keyring()
    store_secret("workbench-test", "device-1", "s3cret")
    assert memory.passwords == {("workbench-test", "device-1"): "s3cret"}
    assert load_secret("workbench-test", "device-1") == "s3cret"
    assert load_secret("workbench-test", "device-2") is None
    assert delete_secret("workbench-test", "device-1") is True
    assert delete_secret("workbench-test", "device-1") is False
    assert memory.passwords == {}


def test_no_keyring_backend_is_said_before_anything_is_asked(use_keyring):
    use_keyring(fail.Keyring())
    with pytest.raises(KeyringUnavailable) as raised:
        check_keyring()
    assert raised.value.reason == "the keyring package found no backend"
    with pytest.raises(KeyringUnavailable):
        store_secret("workbench-test", "device-1", "s3cret")
    with pytest.raises(KeyringUnavailable):
        load_secret("workbench-test", "device-1")
    assert delete_secret("workbench-test", "device-1") is False


def test_a_keyring_that_fails_gives_its_reason_on_one_line(use_keyring):
    use_keyring(BrokenKeyring())
    with pytest.raises(KeyringUnavailable) as raised:
        store_secret("workbench-test", "device-1", "s3cret")
    assert raised.value.reason == "The keyring is locked"
    assert delete_secret("workbench-test", "device-1") is False
