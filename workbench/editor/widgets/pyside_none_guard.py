"""A guard against a PySide6 bug that can crash the process with "deallocating None".

PySide6 6.12.0 drops one reference to ``None`` on every call of a Qt method that returns void.
Python 3.12+ does not count references to ``None`` (it is "immortal"), so there it is harmless;
on Python 3.11 ``None`` starts with a few thousand references, and a highlighter that calls
``setFormat`` for each token of a 20,000-line file runs it down to zero within a second.
"""

from __future__ import annotations

import ctypes
import sys

# Far more references than any session can drop, yet far from overflowing a Py_ssize_t.
_PLENTY = 1 << 60


def keep_none_alive() -> None:
    """Give ``None`` so many references that lost ones can never free it (Python < 3.12 only)."""
    if sys.version_info >= (3, 12):
        return
    # ob_refcnt is the first field of every CPython object header.
    refcount = ctypes.c_ssize_t.from_address(id(None))
    if refcount.value < _PLENTY // 2:
        refcount.value += _PLENTY
