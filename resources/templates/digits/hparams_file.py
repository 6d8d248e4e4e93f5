"""Reads hyper-parameter files: one ``key=value`` a line, ``#`` starts a comment line.

Values are typed by how they look: ``5`` is an int, ``0.002`` and ``1e-3`` are floats,
``true``/``false`` are bools, and anything else is a string (quotes around it are optional).
"""

from pathlib import Path


def parse_value(text: str):
    """``text`` as an int, float, bool or string, whichever it looks like."""
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_assignment(line: str, where: str) -> tuple[str, object]:
    """Split ``key=value`` into the key and its typed value."""
    key, sep, value = line.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"{where}: expected key=value, got {line.strip()!r}")
    return key, parse_value(value)


def read_hparams(path: Path) -> dict:
    """The hyper-parameters in the file at ``path``, in file order."""
    hparams = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, value = parse_assignment(line, f"{path}, line {number}")
        hparams[key] = value
    return hparams


def apply_overrides(hparams: dict, overrides: list[str]) -> dict:
    """A copy of ``hparams`` with each ``key=value`` from the command line applied."""
    updated = dict(hparams)
    for item in overrides:
        key, value = parse_assignment(item, "--set")
        updated[key] = value
    return updated
