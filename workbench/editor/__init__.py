"""The code editor capability: Qt-free services here, widgets in ``workbench.editor.widgets``."""

from workbench.editor.brackets import find_matching_bracket
from workbench.editor.errors import EditorError
from workbench.editor.go_to_line import clamp_line, parse_line_and_column
from workbench.editor.highlighting import (
    LineLexer,
    format_name_for,
    format_ranges,
    lexer_for_path,
)
from workbench.editor.hex_dump import format_byte_size, hex_dump
from workbench.editor.hot_exit import HotExitEntry, HotExitStore
from workbench.editor.large_file_search import (
    LineMatch,
    MatchCount,
    compile_query,
    count_matches,
    find_match,
    format_match_count,
)
from workbench.editor.line_edits import (
    comment_prefix_for,
    dedent_lines,
    indent_for_new_line,
    indent_lines,
    toggle_comment,
)
from workbench.editor.line_index import find_line_starts
from workbench.editor.textfile import (
    EOL_NAMES,
    TextFile,
    decode_text,
    encode_text,
    looks_binary,
    read_text_file,
    write_text_file,
)

__all__ = [
    "EOL_NAMES",
    "EditorError",
    "HotExitEntry",
    "HotExitStore",
    "LineLexer",
    "LineMatch",
    "MatchCount",
    "TextFile",
    "clamp_line",
    "comment_prefix_for",
    "compile_query",
    "count_matches",
    "decode_text",
    "dedent_lines",
    "encode_text",
    "find_line_starts",
    "find_match",
    "find_matching_bracket",
    "format_byte_size",
    "format_match_count",
    "format_name_for",
    "hex_dump",
    "format_ranges",
    "indent_for_new_line",
    "indent_lines",
    "lexer_for_path",
    "looks_binary",
    "parse_line_and_column",
    "read_text_file",
    "toggle_comment",
    "write_text_file",
]
