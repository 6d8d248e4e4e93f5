"""Package exports imported on first use (PEP 562), so importing a capability's package costs
nothing until one of its names is used: heavy libraries load only inside the modules that need them."""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose name N lives in ``package.where[N]``."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
