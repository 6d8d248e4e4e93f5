"""Which language server a project window starts, and how it is configured.

Read from ``workbench.toml`` (every key optional)::

    [lsp]
    command = ["pylsp"]            # the server; default: Workbench's own Python, -m pylsp
    python = ".venv/bin/python"    # the interpreter whose packages completions know
    max_line_length = 100          # pycodestyle's limit, and the formatter's

The interpreter falls back to ``[python] interpreter`` (the project's environment, which the
console uses too) and then ``[training] python``; with none, jedi uses the Python the server
runs in. The line length falls back to what the project's own
configuration files say (``pyproject.toml``, ``setup.cfg``, ``tox.ini``, ``.flake8``), else 100.
"""

from __future__ import annotations

import configparser
import os
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_LINE_LENGTH = 100

# Lint with pyflakes and pycodestyle, format with autopep8; everything else pylsp ships that
# would lint twice (flake8, pylint), slowly (mccabe, pydocstyle) or format otherwise (yapf) is off.
ASSIST_PLUGINS = ("jedi_definition", "jedi_hover", "jedi_references", "jedi_rename", "jedi_signature_help",
                  "jedi_highlight", "jedi_type_definition", "folding")
PLUGINS_OFF = ("flake8", "pylint", "mccabe", "pydocstyle", "yapf", "rope_autoimport", "rope_completion",
               "preload")


@dataclass(frozen=True)
class ServerConfig:
    """How to start and configure the language server of one project.

    ``problems`` are things wrong with the project's settings, said once to the user (the
    server still starts without what they name)."""

    root: Path
    command: tuple[str, ...]
    python: str | None = None
    max_line_length: int = DEFAULT_MAX_LINE_LENGTH
    problems: tuple[str, ...] = field(default_factory=tuple)

    def server_settings(self, role: str = "all") -> dict:
        """The ``workspace/didChangeConfiguration`` settings for pylsp: for ``role`` "all",
        "assist" (jedi's completion, help and navigation, no linting) or "checker" (linting
        and formatting only)."""
        checks = role in ("all", "checker")
        assists = role in ("all", "assist")
        plugins: dict = {name: {"enabled": False} for name in PLUGINS_OFF}
        plugins["pyflakes"] = {"enabled": checks}
        plugins["pycodestyle"] = {"enabled": checks, "maxLineLength": self.max_line_length}
        plugins["autopep8"] = {"enabled": checks}
        # Plain names in the list (the signature is in signature help): resolving each label's
        # signature costs jedi more than the whole completion. Workbench's own pylsp completes
        # through its plugin, which works out the kind of the first names only (a server named
        # in workbench.toml may not have it).
        own = self.command == default_command()
        plugins["jedi_completion"] = {"enabled": assists and not own, "resolve_at_most": 0,
                                      "include_params": False, "fuzzy": False}
        plugins["workbench_completion"] = {"enabled": assists and own, "fuzzy": False}
        plugins["jedi_symbols"] = {"enabled": assists, "all_scopes": True, "include_import_symbols": False}
        for name in ASSIST_PLUGINS:
            plugins[name] = {"enabled": assists}
        # jedi finds the project's own modules through the workspace root pylsp is given.
        plugins["jedi"] = {"environment": self.python} if self.python else {}
        return {"pylsp": {"configurationSources": ["pycodestyle"], "plugins": plugins}}


def default_command() -> tuple[str, ...]:
    """Workbench's own python-lsp-server, with Workbench's plugin beside it."""
    return (sys.executable, "-m", "pylsp")


def server_config(root: Path | str, settings: dict | None = None) -> ServerConfig:
    """The server configuration of the project at ``root`` whose ``workbench.toml`` parsed to
    ``settings``."""
    root = Path(root)
    settings = settings or {}
    table = _table(settings, "lsp")
    problems: list[str] = []
    command = table.get("command")
    if isinstance(command, str):
        command = [command]
    if not (isinstance(command, list) and command and all(isinstance(part, str) and part for part in command)):
        if command is not None:
            problems.append("[lsp] command in workbench.toml must be a list of strings, such as "
                            "[\"pylsp\"]; Workbench's own python-lsp-server is used instead.")
        command = list(default_command())
    python, problem = _interpreter(root, settings)
    if problem:
        problems.append(problem)
    length = table.get("max_line_length")
    if length is not None and not (isinstance(length, int) and not isinstance(length, bool) and length > 0):
        problems.append("[lsp] max_line_length in workbench.toml must be a positive whole number; "
                        f"{DEFAULT_MAX_LINE_LENGTH} is used.")
        length = None
    return ServerConfig(root=root, command=tuple(command), python=python,
                        max_line_length=length or project_line_length(root) or DEFAULT_MAX_LINE_LENGTH,
                        problems=tuple(problems))


def _table(settings: dict, name: str) -> dict:
    table = settings.get(name, {})
    return table if isinstance(table, dict) else {}


def _interpreter(root: Path, settings: dict) -> tuple[str | None, str]:
    """The project's interpreter (absolute) and a problem to report ("" when none)."""
    for table_name, key in (("lsp", "python"), ("python", "interpreter"), ("training", "python")):
        python = _table(settings, table_name).get(key)
        setting = f"[{table_name}] {key}"
        if not python:
            continue
        if not isinstance(python, str):
            return None, f"{setting} in workbench.toml must be a string (a path to a Python)."
        candidate = Path(python).expanduser()
        if not candidate.is_absolute() and (os.sep in python or (root / candidate).exists()):
            candidate = root / candidate
        if candidate.is_absolute():
            if os.access(candidate, os.X_OK) and candidate.is_file():
                return str(candidate), ""
            return None, (f"The project's Python ({python}, from {setting} in workbench.toml) "
                          "does not exist, so completions know only Workbench's own packages. Fix the path.")
        found = shutil.which(python)
        if found:
            return found, ""
        return None, (f"The project's Python ({python}, from {setting} in workbench.toml) is not "
                      "on the PATH, so completions know only Workbench's own packages.")
    return None, ""


def project_line_length(root: Path) -> int | None:
    """The maximum line length the project's own configuration files set, if any."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tools = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            tools = {}
        for tool, key in (("pycodestyle", "max-line-length"), ("flake8", "max-line-length"),
                          ("ruff", "line-length"), ("black", "line-length")):
            value = tools.get(tool, {}).get(key) if isinstance(tools.get(tool), dict) else None
            if isinstance(value, int) and value > 0:
                return value
    for name, sections in (("setup.cfg", ("pycodestyle", "flake8")), ("tox.ini", ("pycodestyle", "flake8")),
                           (".flake8", ("flake8",))):
        path = root / name
        if not path.is_file():
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue
        for section in sections:
            value = parser.get(section, "max-line-length", fallback=None) or parser.get(
                section, "max_line_length", fallback=None)
            if value and value.strip().isdigit() and int(value) > 0:
                return int(value)
    return None
