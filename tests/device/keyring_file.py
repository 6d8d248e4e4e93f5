"""The tests' in-memory keyring, kept in the file ``$WORKBENCH_TEST_KEYRING`` so that the
``workbench device`` commands a test runs as child processes share one keyring (selected there
with PYTHON_KEYRING_BACKEND=tests.device.keyring_file.FileKeyring). It stands in for the OS
keyring; the file lives in the test's temporary folder, outside Workbench's folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jaraco.classes import properties  # what keyring itself declares priorities with

from tests.cluster.conftest import MemoryKeyring

KEYRING_FILE_ENV = "WORKBENCH_TEST_KEYRING"


class FileKeyring(MemoryKeyring):
    @properties.classproperty
    def priority(cls) -> float:
        # keyring tries every backend class a process has imported; without the file this one
        # is not viable, so the other tests of the same process never meet it.
        if KEYRING_FILE_ENV not in os.environ:
            raise RuntimeError(f"${KEYRING_FILE_ENV} names no keyring file")
        return 1

    def __init__(self):
        super().__init__()
        self.path = Path(os.environ[KEYRING_FILE_ENV])

    def _load(self) -> None:
        try:
            entries = json.loads(self.path.read_text())
        except FileNotFoundError:
            entries = []
        self.passwords = {(service, user): secret for service, user, secret in entries}

    def _save(self) -> None:
        self.path.write_text(json.dumps([[s, u, p] for (s, u), p in self.passwords.items()]))

    def get_password(self, service, username):
        self._load()
        return super().get_password(service, username)

    def set_password(self, service, username, password):
        self._load()
        super().set_password(service, username, password)
        self._save()

    def delete_password(self, service, username):
        self._load()
        super().delete_password(service, username)
        self._save()
