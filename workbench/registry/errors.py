"""The registry's one error type: a message a user can act on (what is wrong, what to do)."""

from __future__ import annotations


class RegistryError(Exception):
    """A dataset or model version that cannot be cut, read, registered or removed, and why."""
