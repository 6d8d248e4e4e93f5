"""Indent, dedent and comment a block of lines; the rules behind Tab, Shift+Tab and Ctrl+/.

Qt-free: the editor hands over the selected lines and puts back what comes out.
"""

from __future__ import annotations

INDENT = "    "
INDENT_WIDTH = len(INDENT)

# By Pygments language name (lower case). Languages not listed have no line comment.
_COMMENT_PREFIXES = {
    "#": (
        "python", "python 2.x", "cython", "bash", "shell", "sh", "zsh", "toml", "yaml", "ruby",
        "perl", "r", "s", "cmake", "makefile", "dockerfile", "docker", "ini", "cfg", "nginx",
        "properties", "powershell", "julia", "nim", "coffeescript", "tcl", "gdscript",
        "text only",
    ),
    "//": (
        "c", "c++", "cpp", "objective-c", "java", "javascript", "typescript", "tsx", "jsx", "go",
        "rust", "kotlin", "swift", "scala", "dart", "c#", "csharp", "php", "groovy", "glsl",
        "hlsl", "cuda", "protocol buffer", "json5", "zig", "d", "verilog",
    ),
    "--": ("lua", "sql", "transact-sql", "mysql", "postgresql sql dialect", "haskell", "ada"),
    "%": ("matlab", "tex", "latex", "erlang", "prolog"),
    ";": ("common lisp", "scheme", "clojure", "nasm", "gas", "emacs lisp"),
}
COMMENT_PREFIX_BY_LANGUAGE = {
    language: prefix for prefix, languages in _COMMENT_PREFIXES.items() for language in languages
}


def comment_prefix_for(language: str) -> str | None:
    """The line-comment prefix of a language ("#" for Python, "//" for C, ...), or None."""
    return COMMENT_PREFIX_BY_LANGUAGE.get(language.lower())


def leading_whitespace(line: str) -> str:
    """The spaces and tabs a line starts with."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def first_non_blank_column(line: str) -> int:
    """0-based column of the first character that is not a space or tab."""
    return len(leading_whitespace(line))


def indent_lines(lines: list[str], indent: str = INDENT) -> list[str]:
    """Each non-blank line one level deeper (blank lines stay empty, leaving no trailing spaces)."""
    return [indent + line if line.strip() else line for line in lines]


def dedent_line(line: str, width: int = INDENT_WIDTH) -> str:
    """``line`` one level shallower: one tab, or up to ``width`` leading spaces, removed."""
    if line.startswith("\t"):
        return line[1:]
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, width):]


def dedent_lines(lines: list[str], width: int = INDENT_WIDTH) -> list[str]:
    """Each line one level shallower; lines already at column 0 stay as they are."""
    return [dedent_line(line, width) for line in lines]


def is_commented(lines: list[str], prefix: str) -> bool:
    """True when every non-blank line starts (after its indentation) with ``prefix``."""
    code = [line for line in lines if line.strip()]
    return bool(code) and all(line.lstrip(" \t").startswith(prefix) for line in code)


def toggle_comment(lines: list[str], prefix: str) -> list[str]:
    """Comment the lines out, or back in when all of them are already commented.

    The prefix goes at the smallest indentation of the block, so the block keeps its shape and
    uncommenting gives back exactly what was there.
    """
    if is_commented(lines, prefix):
        return [_uncomment(line, prefix) for line in lines]
    code = [line for line in lines if line.strip()]
    if not code:
        return list(lines)
    column = min(first_non_blank_column(line) for line in code)
    return [line[:column] + prefix + " " + line[column:] if line.strip() else line for line in lines]


def _uncomment(line: str, prefix: str) -> str:
    column = first_non_blank_column(line)
    if not line[column:].startswith(prefix):
        return line
    rest = line[column + len(prefix):]
    if rest.startswith(" "):
        rest = rest[1:]
    return line[:column] + rest


def move_lines(lines: list[str], first: int, last: int, step: int) -> list[str] | None:
    """``lines`` with lines ``first``..``last`` (0-based, inclusive) moved one line up (``step``
    -1) or down (+1) past their neighbour; None when they are already at that end."""
    if step < 0 and first == 0 or step > 0 and last >= len(lines) - 1:
        return None
    block = lines[first:last + 1]
    if step < 0:
        return lines[:first - 1] + block + [lines[first - 1]] + lines[last + 1:]
    return lines[:first] + [lines[last + 1]] + block + lines[last + 2:]


def indent_for_new_line(line_before_cursor: str, language: str, indent: str = INDENT) -> str:
    """The indentation Enter should put on the new line, from the text left of the cursor.

    Keeps the current line's indentation; one level more after a Python block opener (":") or
    after an opening bracket that ends the line in any language.
    """
    base = leading_whitespace(line_before_cursor)
    code = line_before_cursor.rstrip()
    if language.lower() in ("python", "cython", "python 2.x"):
        code = _strip_python_comment(code).rstrip()
        if code.endswith(":"):
            return base + indent
    if code.endswith(("(", "[", "{")):
        return base + indent
    return base


def _strip_python_comment(code: str) -> str:
    # A "#" inside a string is not a comment; track quotes just well enough for one line.
    quote = ""
    for index, char in enumerate(code):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return code[:index]
    return code
