"""Package names imported from their modules on first use (PEP 562), so that importing a
capability's package costs nothing until one of its names is used.

    __getattr__, __dir__ = lazy_exports(__name__, {"RunService": "service", ...}, globals())
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Tuple


def lazy_exports(package: str, where: Dict[str, str], namespace: Dict[str, Any]
                 ) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose name ``n`` lives in
    its module ``where[n]``; a name once looked up is kept in ``namespace`` (the package's
    globals), so later look-ups never reach ``__getattr__``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
