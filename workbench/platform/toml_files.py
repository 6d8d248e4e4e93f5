"""TOML files the user also edits (``workbench.toml``, ``clusters.toml``), changed so that what
the user wrote stays: their comments, blank lines, key order and quoting, through ``tomlkit``.
Only the values Workbench changes are rewritten; the file is replaced atomically.

Reading a file only to use its values is ``tomllib``'s job (faster, in the standard library);
this module is for changing one.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator, Mapping

from workbench.platform.atomic_files import write_atomically


class TomlFileError(ValueError):
    """A TOML file that cannot be read or changed; the message names the file and the reason."""


def read_document(path: Path | str):
    """The TOML document at ``path`` for editing (an empty one when there is no file):
    a ``tomlkit`` document, which behaves as a dict and writes back what it read."""
    import tomlkit  # loaded only when a file is changed
    from tomlkit.exceptions import ParseError

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as exc:
        raise TomlFileError(f"cannot read {path}: {exc}") from None
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise TomlFileError(f"{path} is not valid TOML ({exc})") from None


def write_document(path: Path | str, document, mode: int | None = None) -> None:
    """Write ``document`` (from ``read_document``) to ``path`` atomically; a new file gets
    ``mode``, an existing one keeps its permissions."""
    import tomlkit

    write_atomically(path, tomlkit.dumps(document).encode("utf-8"), mode)


@contextlib.contextmanager
def editing(path: Path | str, mode: int | None = None) -> Iterator[Any]:
    """The document at ``path`` to change in the block; written back (atomically, ``mode`` for a
    new file) when the block ends without an error and something changed."""
    import tomlkit

    document = read_document(path)
    before = tomlkit.dumps(document)
    yield document
    if tomlkit.dumps(document) != before:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_document(path, document, mode)


def update_table(container, key: str, values: Mapping[str, Any], super_table: bool = False) -> None:
    """Make ``container[key]`` a table holding exactly ``values`` (a nested mapping becomes a
    sub-table). Keys whose value is unchanged are left as they are written, with their comments;
    changed ones are rewritten in place; missing ones are added at the end; keys not in
    ``values`` are removed. ``super_table`` makes a new table that only holds tables
    (``[clusters.lab]`` without a ``[clusters]`` line)."""
    import tomlkit

    created = key not in container
    if created:
        container[key] = tomlkit.table(is_super_table=super_table or None)
    table = container[key]
    # Comments and blank lines at a table's end are the user's words about what follows it;
    # what is added goes before them.
    trailing = _detach_trailing_lines(table)
    for name in [name for name in table if name not in values]:
        del table[name]
    for name, value in values.items():
        if isinstance(value, Mapping):
            if value:
                update_table(table, name, value)
            elif name in table:
                del table[name]
        elif name not in table or _plain(table[name]) != value:
            table[name] = value
    for line in trailing:
        table.add(line)
    if created and not super_table:
        table.add(tomlkit.nl())  # a blank line before whatever follows, as a person writes it


def _detach_trailing_lines(table) -> list:
    """Take the comments and blank lines off the end of ``table`` and return them. Only items
    after the last key go, so the table's index of its keys stays right."""
    from tomlkit.items import Comment, Whitespace

    body = table.value.body
    trailing = []
    while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
        trailing.append(body.pop()[1])
    return trailing[::-1]


def _plain(item: Any) -> Any:
    """The Python value of a tomlkit item (``unwrap`` where tomlkit has it)."""
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if unwrap else item
