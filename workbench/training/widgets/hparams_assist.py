"""Completions and hover help in hyper-parameter files, from the project's schema.

At the start of a line the keys are offered (the project's own first), each with its type,
default and help; after ``key=`` the key's choices (true/false for a bool; on Ctrl+Space the
default of any other key). Hovering a key shows what it is and which values it accepts.

Called on the GUI thread at each key, so it only reads the schema the checker keeps (read
again only when workbench.toml changes) and builds the key list once per schema. Qt-free.
"""

from __future__ import annotations

import threading

from workbench.editor.assist import CompletionItem, Completions, TextPosition
from workbench.training.widgets.hparams_check import HParamsChecker

KEY_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def describe_key(key) -> str:
    """A key in one line: "learning_rate (float, default 0.01): initial learning rate; accepts
    a number of at least 0"."""
    text = f"{key.name} ({kind_text(key)}, default {default_text(key)})"
    if key.help:
        text += f": {key.help}"
    return f"{text}; accepts {key.describe()}"


def kind_text(key) -> str:
    return f"list of {key.item_kind}" if key.kind == "list" else key.kind


def default_text(key) -> str:
    from workbench_trainkit.hparams import format_value

    if key.kind == "list" and not key.default:
        return "empty"
    if key.kind == "str" and key.default == "":
        return '""'
    return format_value(key.default)


class HParamsAssist:
    """``complete(position)`` and ``hover(position)`` for the ``.hparams`` files of one project."""

    def __init__(self, checker: HParamsChecker):
        self.checker = checker
        self._lock = threading.Lock()
        self._items_schema = None
        self._key_items: dict[bool, tuple[CompletionItem, ...]] = {}

    def schema(self):
        try:
            return self.checker.schema()
        except Exception:  # a broken [training.keys]: the checker reports it; offer FastNN's keys
            from workbench_trainkit.schema import FASTNN_SCHEMA

            return FASTNN_SCHEMA

    # --- completions --------------------------------------------------------------------------

    def complete(self, position: TextPosition) -> Completions | None:
        line, column = position.line_text, position.column
        if line.lstrip().startswith("#"):
            return None
        equals = _code(line).find("=")
        if equals < 0 or column <= equals:
            return self._complete_key(line, column, position.explicit, has_equals=equals >= 0)
        return self._complete_value(line, column, equals, position.explicit)

    def _complete_key(self, line: str, column: int, explicit: bool, has_equals: bool) -> Completions | None:
        start = len(line) - len(line.lstrip())
        end = start
        while end < len(line) and line[end] in KEY_CHARACTERS:
            end += 1
        if not start <= column <= end:
            if not line.strip() and explicit:
                start = end = column  # a blank line: insert at the caret
            else:
                return None
        typed = line[start:column]
        if not explicit and (not typed or column != end or not typed[0].isalpha()):
            return None  # typing at the start of a line only: not inside or after a word
        return Completions(start, end, self._keys(not has_equals))

    def _keys(self, with_equals: bool) -> tuple[CompletionItem, ...]:
        schema = self.schema()
        with self._lock:
            if self._items_schema is not schema:
                self._items_schema, self._key_items = schema, {}
            items = self._key_items.get(with_equals)
            if items is None:
                from workbench_trainkit.schema import FASTNN_SCHEMA

                keys = list(schema.keys.values())
                # The project's own keys first: they are the ones no documentation lists.
                keys.sort(key=lambda key: FASTNN_SCHEMA.keys.get(key.name) is key)
                items = tuple(CompletionItem(
                    text=key.name + ("=" if with_equals else ""), label=key.name,
                    detail=f"{kind_text(key)} = {default_text(key)}" + (f"  ·  {key.help}" if key.help else ""),
                    documentation=describe_key(key)) for key in keys)
                self._key_items[with_equals] = items
            return items

    def _complete_value(self, line: str, column: int, equals: int, explicit: bool) -> Completions | None:
        schema = self.schema()
        name = line[:equals].strip()
        if name not in schema:
            return None
        key = schema[name]
        code = _code(line)
        start = equals + 1
        while start < len(code) and code[start] in " \t":
            start += 1
        end = len(code.rstrip())
        if column < start:
            if start < end:
                return None  # in the spaces before a value
            start = end = column
        elif column > end:
            return None  # in the comment after the value
        default = default_text(key)
        if key.choices:
            values = [str(choice) for choice in key.choices]
        elif key.kind == "bool":
            values = ["true", "false"]
        elif explicit and default not in ('""', "empty"):
            values = [default]  # nothing to choose from: Ctrl+Space at least shows the default
        else:
            return None
        if not explicit and column != end:
            return None  # offered while typing only at the end of the value
        help_text = describe_key(key)
        items = tuple(CompletionItem(text=value, detail="the default" if value == default else "",
                                     documentation=help_text) for value in values)
        return Completions(start, end, items)

    # --- hover --------------------------------------------------------------------------------

    def hover(self, position: TextPosition) -> str | None:
        line, column = position.line_text, position.column
        if line.lstrip().startswith("#"):
            return None
        code = _code(line)
        equals = code.find("=")
        key_part = code[:equals] if equals >= 0 else code
        start = len(key_part) - len(key_part.lstrip())
        end = len(key_part.rstrip())
        if not start <= column < end:
            return None
        schema = self.schema()
        name = key_part.strip()
        return describe_key(schema[name]) if name in schema else None


def _code(line: str) -> str:
    """The line without its ``#`` comment (a whole-line one, or one after whitespace), as the
    hyper-parameter parser reads it."""
    for index, char in enumerate(line):
        if char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line
