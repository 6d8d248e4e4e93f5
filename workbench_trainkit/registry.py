"""Datasets, models and preprocessing found by name, as FastNN's ``datasets_map`` does.

A project registers a factory once, next to the code it builds::

    from workbench_trainkit import models

    @models.register("digits_net")
    def digits_net(hp):
        return DigitsNet(num_classes=hp.num_classes)

and the training script builds whatever the hyper-parameters name::

    model = models.get(hp.model_name)(hp)

What a factory takes and returns is up to the project; the registry only finds it.
"""

from __future__ import annotations

import difflib
from typing import Callable

from workbench_trainkit.errors import TrainkitError


class Registry:
    """Factories of one kind (datasets, models, ...), each under a name."""

    def __init__(self, kind: str, hparam_key: str, attribute: str | None = None):
        self.kind = kind                # "model": used in messages
        self.hparam_key = hparam_key    # "model_name": the key that chooses a factory
        # How scripts spell the registry, so the messages show code that works.
        self.attribute = attribute or f"{kind}s"
        self._factories: dict[str, Callable] = {}

    def register(self, name: str) -> Callable[[Callable], Callable]:
        """A decorator that files the function (or class) under ``name`` and returns it as is."""
        if not isinstance(name, str) or not name.strip():
            raise TrainkitError(f"a {self.kind} needs a non-empty name to be registered, "
                                f"e.g. @{self.attribute}.register(\"my_{self.kind}\")")

        def add(factory: Callable) -> Callable:
            known = self._factories.get(name)
            # A module imported twice (as __main__ and by name) registers the same function
            # again: that is no conflict. Two different functions under one name are.
            if known is not None and _identity(known) != _identity(factory):
                raise TrainkitError(
                    f"two factories are registered as the {self.kind} {name!r}: "
                    f"{_qualified_name(known)} and {_qualified_name(factory)}; give one of them "
                    "another name")
            self._factories[name] = factory
            return factory

        return add

    def get(self, name: str) -> Callable:
        """The factory registered as ``name``; TrainkitError naming the key and choices if none."""
        try:
            return self._factories[name]
        except (KeyError, TypeError):
            pass
        known = sorted(self._factories)
        if not known:
            raise TrainkitError(
                f"{self.hparam_key} is {name!r}, but no {self.kind} is registered: import the "
                f"module that registers it (with @{self.attribute}.register(\"{name}\")) before "
                "building it")
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TrainkitError(
            f"unknown {self.hparam_key} {name!r} (registered {self.kind} names: "
            f"{', '.join(known)}).{hint} Set {self.hparam_key} to one of them, or register yours "
            f"with @{self.attribute}.register(\"{name}\").")

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._factories)

    def __contains__(self, name: str) -> bool:
        return name in self._factories

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.hparam_key!r}, names={self.names()})"


def _qualified_name(factory: Callable) -> str:
    module = getattr(factory, "__module__", "?")
    return f"{module}.{getattr(factory, '__qualname__', repr(factory))}"


def _identity(factory: Callable) -> tuple[str, str]:
    """Where a factory is defined: the same for both copies of a module imported twice."""
    code = getattr(factory, "__code__", None)
    source = f"{code.co_filename}:{code.co_firstlineno}" if code else getattr(
        factory, "__module__", "?")
    return getattr(factory, "__qualname__", repr(factory)), source


datasets = Registry("dataset", "dataset_name")
models = Registry("model", "model_name")
preprocessing = Registry("preprocessing", "preprocessing_name", "preprocessing")
