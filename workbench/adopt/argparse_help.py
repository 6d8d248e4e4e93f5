"""A script's flags read from what ``python SCRIPT --help`` prints, for scripts whose parser
cannot be read from their code. The script runs in the project's interpreter with a time-out,
in its own process group so that a hung script and its children are all ended."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from workbench.adopt.errors import AdoptError
from workbench.adopt.parameter import ScriptParameter, kind_of_values

HELP_TIMEOUT_S = 10.0
_OPTION_LINE = re.compile(r"^ {1,4}(-\S.*?)(?: {2,}(\S.*))?$")
_POSITIONAL_LINE = re.compile(r"^ {1,4}([A-Za-z_][\w-]*)(?: {2,}(\S.*))?$")
_DEFAULT = re.compile(r"\(default:\s*(.*?)\)\s*$")


def run_help(python: str, script: str, project_dir: Path, timeout_s: float = HELP_TIMEOUT_S) -> str:
    """The text ``python SCRIPT --help`` prints; AdoptError (one line, saying to use --set) when
    it does not answer within ``timeout_s``, fails or prints no argparse usage."""
    unknown = "its flags are not known: give them with --set NAME=VALUE"
    try:
        process = subprocess.Popen([python, script, "--help"], cwd=project_dir, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   errors="replace", start_new_session=True,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})
    except OSError as exc:
        raise AdoptError(f"{python} could not run {script} --help ({exc.strerror or exc}); {unknown}.") from None
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _end_group(process)
        raise AdoptError(f"{script} --help did not answer within {timeout_s:g} s; {unknown}.") from None
    if process.returncode != 0 or "usage:" not in out:
        reason = _last_line(err) or _last_line(out) or f"exit status {process.returncode}"
        raise AdoptError(f"{script} --help failed ({reason}); {unknown}.")
    return out


def parse_help(text: str) -> list[ScriptParameter]:
    """The options and positional arguments of argparse's help output (not ``--help``)."""
    required_flags = _required_in_usage(text)
    parameters, section, current = [], "", None
    entries: list[list] = []
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        if not line.startswith(" "):
            section = line.strip().rstrip(":").lower()
            current = None
            continue
        if section.startswith("usage"):
            continue
        option = _OPTION_LINE.match(line)
        positional = _POSITIONAL_LINE.match(line) if "positional" in section else None
        if option and not line.startswith(" " * 5):
            current = ["option", option.group(1).strip(), option.group(2) or ""]
            entries.append(current)
        elif positional and not line.startswith(" " * 5):
            current = ["positional", positional.group(1), positional.group(2) or ""]
            entries.append(current)
        elif current is not None:
            current[2] = f"{current[2]} {line.strip()}".strip()
    for kind, spec, help_text in entries:
        parameter = _option(spec, help_text, required_flags) if kind == "option" else _positional(spec, help_text)
        if parameter is not None:
            parameters.append(parameter)
    return parameters


def _option(spec: str, help_text: str, required_flags: set[str]) -> ScriptParameter | None:
    strings = [part.strip() for part in spec.split(", ")]
    names = [s.split(" ", 1)[0] for s in strings]
    if "--help" in names or "-h" in names and len(names) == 1:
        return None
    flag = next((n for n in names if n.startswith("--")), names[0])
    metavar = strings[names.index(flag)].partition(" ")[2]
    choices = None
    found = re.match(r"^\{(.*)\}", metavar)
    if found:
        choices = tuple(found.group(1).split(","))
    default_text = None
    match = _DEFAULT.search(help_text)
    if match:
        default_text = match.group(1)
        help_text = help_text[:match.start()].rstrip()
    if not metavar:
        kind, default = "bool", default_text == "True" if default_text in ("True", "False") else False
        action = "store_false" if default is True else "store_true"
    else:
        action = ""
        default = _value(default_text)
        kind = "list" if "..." in metavar else kind_of_values(default, choices)
    return ScriptParameter(name=flag.lstrip("-").replace("-", "_"), type=kind, default=default, help=help_text,
                           choices=choices, required=flag in required_flags, flag=flag, action=action,
                           nargs="+" if kind == "list" else "")


def _positional(name: str, help_text: str) -> ScriptParameter:
    return ScriptParameter(name=name, type="str", help=help_text, required=True, positional=True)


def _required_in_usage(text: str) -> set[str]:
    """Option strings the usage line names outside brackets: argparse's required options."""
    usage = text.split("\n\n", 1)[0]
    required, depth = set(), 0
    for token in re.findall(r"\[|\]|[^\s\[\]]+", usage):
        if token == "[":
            depth += 1
        elif token == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and token.startswith("-"):
            required.add(token)
    return required


def _value(text: str | None):
    if text is None or text == "None":
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if text in ("True", "False"):
        return text == "True"
    return text.strip("'\"")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _end_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.communicate()
