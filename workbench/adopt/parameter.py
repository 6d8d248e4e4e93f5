"""One hyper-parameter of a script, whatever way the script takes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TYPES = ("bool", "int", "float", "str", "list")


def kind_of_values(default, choices=()) -> str:
    """The type a parameter's default (else its first typed choice) shows it takes."""
    for value in (default, *(choices or ())):
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
    return "str"


@dataclass(frozen=True)
class ScriptParameter:
    """A hyper-parameter as the Train dialog shows it and a run passes it.

    ``name`` is the key ``--set name=value`` uses: argparse's ``dest``, a Hydra config's dotted
    key, or a ``.hparams`` key. ``flag`` is the option string a run passes (``--lr``) for an
    argparse option, "" otherwise; ``positional`` marks an argparse positional argument.
    ``type`` is one of TYPES; ``default`` is None when there is none (or it is not a literal).
    A bool ``flag`` with ``action`` "store_true"/"store_false" takes no value on the command line.
    """

    name: str
    type: str = "str"
    default: Any = None
    help: str = ""
    choices: tuple | None = None
    required: bool = False
    flag: str = ""
    positional: bool = False
    action: str = ""
    nargs: str = ""

    def describe(self) -> str:
        """One line: ``--lr (float, default 0.001): learning rate``."""
        what = [self.type]
        if self.required:
            what.append("required")
        elif self.default is not None:
            what.append(f"default {self.default!r}" if isinstance(self.default, str) else f"default {self.default}")
        if self.choices:
            what.append("one of " + ", ".join(str(c) for c in self.choices))
        label = self.flag or self.name
        return f"{label} ({', '.join(what)})" + (f": {self.help}" if self.help else "")
