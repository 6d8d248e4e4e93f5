"""Debugging a cell of a Python file in the project's console: the cell runs in the console's
kernel, in its namespace (its variables stay there afterwards, as after Run Cell), while the
window's debugger is attached to that kernel.

The kernel starts debugpy listening on a loopback port once (``SETUP_CODE``, run silently; the
port is read back through ``ENDPOINT_EXPRESSION``), and the console then runs
``%debugcell FILE FIRST LAST``. The magic reads those lines of the saved file and compiles
them under the file's own path, padded with blank lines so that each keeps its line number:
the editor's breakpoints in the file bind to the cell as they are, and the stack shows the
file, with no mapping. The kernel outlives the session: the debugger lets go of it when the
cell ends.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from workbench.debug.errors import DebugError

ENDPOINT_EXPRESSION = "_workbench_debug_endpoint"

SETUP_CODE = '''
def _workbench_debug_setup():
    import shlex
    ip = get_ipython()
    try:
        import debugpy
    except ImportError as exc:
        import sys
        return (f"error: debugpy cannot be imported in the console's Python ({sys.executable}: "
                f"{exc}). Install it there (pip install debugpy) and restart the console.")
    endpoint = ip.user_ns.get("_workbench_debug_endpoint", "")
    if not endpoint.startswith("127.0.0.1:"):
        try:
            endpoint = "%s:%d" % tuple(debugpy.listen(("127.0.0.1", 0)))
        except Exception as exc:  # debugpy listens once per process
            return f"error: the console's kernel cannot start debugpy ({exc}). Restart the console."

    def debugcell(line):
        """%debugcell FILE FIRST LAST: run lines FIRST..LAST of FILE here, under the debugger."""
        path, first, last = shlex.split(line)
        first, last = int(first), int(last)
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\\n")
        code = "\\n" * (first - 1) + "\\n".join(lines[first - 1:last]) + "\\n"
        exec(compile(code, __import__("os").path.abspath(path), "exec"), ip.user_ns)

    ip.register_magic_function(debugcell, "line", "debugcell")
    return endpoint

_workbench_debug_endpoint = _workbench_debug_setup()
del _workbench_debug_setup
'''


def parse_endpoint(value: str) -> tuple[str, int]:
    """The kernel's debugpy address from ``ENDPOINT_EXPRESSION``'s value (its repr, as the
    kernel sends it); DebugError with the kernel's own words when it could not listen."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text.startswith("error: "):
        raise DebugError(text[len("error: "):])
    host, _, port = text.rpartition(":")
    if host != "127.0.0.1" or not port.isdigit():
        raise DebugError(f"The console's kernel gave no debugger address ({value!r}). Restart the console "
                         "and debug the cell again.")
    return host, int(port)


def debugcell_line(path: Path | str, first: int, last: int, cwd: Path | str | None = None) -> str:
    """The console input that runs lines ``first``..``last`` of ``path`` under the debugger
    (the path relative to the kernel's folder ``cwd`` when it is inside it)."""
    path = Path(path)
    shown = str(path)
    if cwd is not None:
        try:
            shown = path.resolve().relative_to(Path(cwd).resolve()).as_posix()
        except ValueError:
            pass
    return f"%debugcell {shlex.quote(shown)} {int(first)} {int(last)}"
