"""Incremental Pygments lexing, one line at a time, carrying the lexer state between lines.

Re-lexing the whole file on each keystroke is what makes big files sluggish. Instead each line is
lexed from the state the previous line ended in, and the end state is reported back; the
highlighter only moves on to the next line when that end state changed.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Hashable

from pygments.lexer import ExtendedRegexLexer, Lexer, LexerContext, RegexLexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import Error, Token, Whitespace, _TokenType
from pygments.util import ClassNotFound

# (index in the line, token type, text), as Pygments yields them.
LexedToken = tuple[int, _TokenType, str]

# Lexers that push forever (rare, usually on broken input) must not grow the state without bound.
MAX_STATE_DEPTH = 32

# Most specific first: a token type takes the name of the nearest listed ancestor.
FORMAT_NAMES: dict[_TokenType, str] = {
    Token.Name.Decorator: "decorator",
    Token.Name.Function: "name.function",
    Token.Name.Function.Magic: "name.function",
    Token.Name.Class: "name.class",
    Token.Name.Builtin: "builtin",
    Token.Name.Builtin.Pseudo: "builtin",
    Token.Name.Exception: "name.class",
    Token.Name.Tag: "keyword",
    Token.Name.Attribute: "name.function",
    Token.Keyword: "keyword",
    Token.Operator.Word: "keyword",
    Token.Operator: "operator",
    Token.Literal.String.Escape: "string.escape",
    Token.Literal.String.Interpol: "string.escape",
    Token.Literal.String: "string",
    Token.Literal.Number: "number",
    Token.Comment.Preproc: "preprocessor",
    Token.Comment: "comment",
    Token.Generic.Heading: "keyword",
    Token.Generic.Subheading: "keyword",
    Token.Generic.Deleted: "string",
    Token.Generic.Inserted: "name.class",
    Token.Error: "error",
}


@lru_cache(maxsize=1024)
def format_name_for(token_type: _TokenType) -> str | None:
    """The theme format name ("keyword", "string", ...) for a Pygments token type, or None."""
    while token_type is not None:
        name = FORMAT_NAMES.get(token_type)
        if name is not None:
            return name
        token_type = token_type.parent
    return None


# get_lexer_for_filename compiles a glob for each of Pygments' thousand file patterns on its first
# call, a quarter of a second in the window's start-up; the files training projects hold most
# are found by their suffix instead.
COMMON_LEXERS = {
    ".py": "python", ".pyi": "python", ".toml": "toml", ".md": "markdown", ".json": "json",
    ".yaml": "yaml", ".yml": "yaml", ".sh": "bash", ".cfg": "ini", ".ini": "ini",
    ".hparams": "ini", ".txt": "text", ".log": "text", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".hpp": "cpp", ".rst": "rst",
}


def lexer_for_path(path: Path | str) -> Lexer:
    """The Pygments lexer for a file name; plain text when the type is unknown."""
    alias = COMMON_LEXERS.get(Path(path).suffix.lower())
    try:
        if alias is not None:
            return get_lexer_by_name(alias, stripnl=False, ensurenl=False)
        return get_lexer_for_filename(str(path), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer()


class LineLexer:
    """Lexes one line at a time from a given state and reports the state the line ends in.

    States are small hashable values; ``state_id`` interns them to ints so they fit
    QSyntaxHighlighter's block state. For lexers that are not RegexLexers there is no state
    (every line starts fresh) and the state is always ``None``.
    """

    def __init__(self, lexer: Lexer) -> None:
        self.lexer = lexer
        self.is_stateful = _can_resume(lexer)
        self.initial_state: Hashable = ("root",) if self.is_stateful else None
        self._ids: dict[Hashable, int] = {}
        self._states: list[Hashable] = []
        self.state_id(self.initial_state)

    @property
    def language(self) -> str:
        """The language's display name ("Python", "Text only", ...)."""
        return self.lexer.name

    def state_id(self, state: Hashable) -> int:
        """A small non-negative int standing for ``state``; the same state always gets the same id."""
        found = self._ids.get(state)
        if found is None:
            found = self._ids[state] = len(self._states)
            self._states.append(state)
        return found

    def state_for_id(self, state_id: int) -> Hashable:
        """The state interned as ``state_id``; the initial state for unknown ids (such as -1)."""
        if 0 <= state_id < len(self._states):
            return self._states[state_id]
        return self.initial_state

    def lex_line(self, text: str, state: Hashable = None) -> tuple[list[LexedToken], Hashable]:
        """Lex one line (no line ending) starting in ``state``; return its tokens and end state."""
        if not self.is_stateful:
            return self._lex_alone(text), None
        stack = list(state) if state else ["root"]
        # The line ending is lexed too, because rules that match "\n" are what move a lexer
        # between states at line ends; its token is then dropped.
        try:
            if isinstance(self.lexer, ExtendedRegexLexer):
                tokens, stack = self._lex_extended(text + "\n", stack)
            else:
                tokens, stack = self._lex_regex(text + "\n", stack)
        except Exception:
            # A lexer callback that does not expect to start mid-file must not break the editor:
            # this line is lexed on its own and the next one starts fresh.
            return self._lex_alone(text), self.initial_state
        line_tokens = _clip(tokens, len(text))
        return line_tokens, tuple(stack[-MAX_STATE_DEPTH:])

    def _lex_alone(self, text: str) -> list[LexedToken]:
        try:
            return [t for t in self.lexer.get_tokens_unprocessed(text) if t[2]]
        except Exception:
            return [(0, Token.Text, text)] if text else []

    def _lex_regex(self, text: str, stack: list[str]) -> tuple[list[LexedToken], list[str]]:
        # The loop of RegexLexer.get_tokens_unprocessed, kept in step with Pygments, but
        # starting from and returning the state stack, which Pygments keeps to itself.
        lexer = self.lexer
        tokendefs = lexer._tokens
        if stack[-1] not in tokendefs:
            stack = ["root"]
        statetokens = tokendefs[stack[-1]]
        tokens: list[LexedToken] = []
        pos = 0
        end = len(text)
        while pos < end:
            for rexmatch, action, new_state in statetokens:
                m = rexmatch(text, pos)
                if m:
                    if action is not None:
                        if type(action) is _TokenType:
                            tokens.append((pos, action, m.group()))
                        else:
                            tokens.extend(action(lexer, m))
                    if m.end() == pos and new_state is None:
                        # An empty match that changes no state would loop forever.
                        continue
                    pos = m.end()
                    if new_state is not None:
                        _apply_transition(stack, new_state)
                        statetokens = tokendefs[stack[-1]]
                    break
            else:
                if text[pos] == "\n":
                    stack = ["root"]
                    statetokens = tokendefs["root"]
                    tokens.append((pos, Whitespace, "\n"))
                else:
                    tokens.append((pos, Error, text[pos]))
                pos += 1
        return tokens, stack

    def _lex_extended(self, text: str, stack: list[str]) -> tuple[list[LexedToken], list[str]]:
        # ExtendedRegexLexer keeps its stack in a context object we can hand in and read back.
        if stack[-1] not in self.lexer._tokens:
            stack = ["root"]
        context = LexerContext(text, 0, stack=list(stack))
        tokens = list(self.lexer.get_tokens_unprocessed(context=context))
        return tokens, list(context.stack)


def _can_resume(lexer: Lexer) -> bool:
    # Only the stock lexing loops can be restarted from a saved stack; a lexer that brings its
    # own loop (YAML keeps indentation in a context of its own) is lexed line by line.
    if isinstance(lexer, ExtendedRegexLexer):
        return type(lexer).get_tokens_unprocessed is ExtendedRegexLexer.get_tokens_unprocessed
    return isinstance(lexer, RegexLexer)


def _apply_transition(stack: list[str], new_state: object) -> None:
    if isinstance(new_state, tuple):
        for state in new_state:
            if state == "#pop":
                if len(stack) > 1:
                    stack.pop()
            elif state == "#push":
                stack.append(stack[-1])
            else:
                stack.append(state)
    elif isinstance(new_state, int):
        if abs(new_state) >= len(stack):
            del stack[1:]
        else:
            del stack[new_state:]
    elif new_state == "#push":
        stack.append(stack[-1])


def _clip(tokens: list[LexedToken], length: int) -> list[LexedToken]:
    clipped: list[LexedToken] = []
    for index, token_type, value in tokens:
        if index >= length or not value:
            continue
        if index + len(value) > length:
            value = value[: length - index]
        clipped.append((index, token_type, value))
    return clipped


def format_ranges(tokens: list[LexedToken]) -> list[tuple[int, int, str]]:
    """(start, length, format name) for the tokens that have a format, adjacent ranges merged."""
    ranges: list[tuple[int, int, str]] = []
    for index, token_type, value in tokens:
        name = format_name_for(token_type)
        if name is None:
            continue
        if ranges and ranges[-1][2] == name and ranges[-1][0] + ranges[-1][1] == index:
            start, length, _ = ranges[-1]
            ranges[-1] = (start, length + len(value), name)
        else:
            ranges.append((index, len(value), name))
    return ranges

