"""A script's argparse flags read from its code with ``ast``, without running it.

Follows the shapes real scripts use: a parser at module level or built in a function
(``def get_parser(): ...; return parser``), argument groups, and helper functions of the same
file that take the parser as an argument (``add_model_args(parser)``). Anything it cannot read
for certain (flags made in a loop, ``**options``, a parser from another module, subcommands)
makes it answer None, so that the caller asks the script's ``--help`` instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

from workbench.adopt.parameter import ScriptParameter, kind_of_values

_TYPE_NAMES = {"int": "int", "float": "float", "str": "str", "bool": "bool", "Path": "str", "pathlib.Path": "str"}
_GROUP_MAKERS = {"add_argument_group", "add_mutually_exclusive_group"}
# Parsers argparse does not make: their flags come from dataclasses or signatures, read by --help.
_OTHER_PARSERS = ("HfArgumentParser", "LightningCLI", "ArgumentParser(parser_mode", "jsonargparse",
                  "tyro.cli", "fire.Fire", "simple_parsing")


def read_argparse(path: Path) -> list[ScriptParameter] | None:
    """The flags of the script at ``path``, or None when its code does not say them for certain."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text)
    except (OSError, SyntaxError):
        return None
    if any(marker in text for marker in _OTHER_PARSERS):
        return None
    parsers = _parser_names(tree)
    if not parsers:
        return None
    calls = _add_argument_calls(tree, parsers)
    if calls is None:
        return None
    parameters = []
    for call in calls:
        parameter = _parameter(call)
        if parameter is None:
            return None
        if parameter.name != "help":
            parameters.append(parameter)
    return parameters


def _parser_names(tree: ast.Module) -> set[str]:
    """Names bound to an ArgumentParser or one of its groups, anywhere in the file."""
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if _is_call_to(value, "ArgumentParser") or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                    and value.func.attr in _GROUP_MAKERS and _receiver(value.func) in names):
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in names:
                        names.add(target.id)
                        changed = True
    return names


def _add_argument_calls(tree: ast.Module, parsers: set[str]) -> list[ast.Call] | None:
    """Every ``add_argument`` call on a parser, in file order, including those of helper
    functions called with a parser; None when one is on something else or subcommands exist."""
    helpers = _helper_parameters(tree, parsers)
    # A helper's flags come where it is called, so the flags keep the order the parser has them.
    called_at = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            called_at[node.func.id] = min(called_at.get(node.func.id, node.lineno), node.lineno)
    calls = []
    for function in [tree, *[n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]]:
        name = getattr(function, "name", "")
        receivers = parsers | helpers.get(name, set())
        body = function.body
        for node in _walk_own(body):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "add_subparsers":
                return None
            if node.func.attr != "add_argument":
                continue
            receiver = _receiver(node.func)
            if receiver in receivers:
                calls.append(((called_at.get(name, node.lineno), node.lineno, node.col_offset), node))
            else:
                return None
    return [call for _, call in sorted(calls, key=lambda pair: pair[0])]


def _walk_own(body: list[ast.stmt]):
    """The nodes of a body, not entering nested functions (they are visited on their own)."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    stack = [node for node in reversed(body) if not isinstance(node, nested)]
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if not isinstance(child, nested):
                stack.append(child)


def _helper_parameters(tree: ast.Module, parsers: set[str]) -> dict[str, set[str]]:
    """{function name: its parameter names that receive a parser at some call in the file}."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: dict[str, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions):
                continue
            function = functions[node.func.id]
            names = [a.arg for a in function.args.posonlyargs + function.args.args]
            known = parsers | set().union(*found.values()) if found else parsers
            passed = [(names[i], a) for i, a in enumerate(node.args) if i < len(names)]
            passed += [(k.arg, k.value) for k in node.keywords if k.arg in names]
            for name, value in passed:
                if isinstance(value, ast.Name) and value.id in known and name not in found.get(function.name, set()):
                    found.setdefault(function.name, set()).add(name)
                    changed = True
    return found


def _parameter(call: ast.Call) -> ScriptParameter | None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    strings = []
    for argument in call.args:
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            return None
        strings.append(argument.value)
    if not strings:
        return None
    words = {k.arg: k.value for k in call.keywords}
    positional = not strings[0].startswith("-")
    flag = "" if positional else next((s for s in strings if s.startswith("--")), strings[0])
    dest = _literal(words.get("dest"), None) or (strings[0] if positional else flag.lstrip("-").replace("-", "_"))
    action = _literal(words.get("action"), "") or ""
    if not isinstance(action, str):
        return None
    nargs = _literal(words.get("nargs"), "")
    nargs = "" if nargs is None else str(nargs)
    choices = _literal(words.get("choices"), None)
    choices = tuple(choices) if isinstance(choices, (list, tuple)) else None
    default = _literal(words.get("default"), None)
    kind = _type_of(words.get("type"), action, nargs, default, choices)
    if action == "store_true" and "default" not in words:
        default = False
    elif action == "store_false" and "default" not in words:
        default = True
    required = bool(_literal(words.get("required"), False)) or (positional and nargs not in ("?", "*"))
    help_text = _literal(words.get("help"), "")
    return ScriptParameter(name=dest, type=kind, default=default,
                           help=" ".join(str(help_text).split()) if help_text else "",
                           choices=choices, required=required, flag=flag, positional=positional,
                           action=action, nargs=nargs)


def _type_of(node: ast.expr | None, action: str, nargs: str, default, choices) -> str:
    if action in ("store_true", "store_false", "store_const", "help", "version"):
        return "bool"
    if action == "count":
        return "int"
    if action in ("append", "extend") or nargs in ("+", "*") or nargs.isdigit() and int(nargs) > 1:
        return "list"
    if node is not None:
        return _TYPE_NAMES.get(ast.unparse(node), "str")
    return kind_of_values(default, choices)


def _literal(node: ast.expr | None, otherwise):
    if node is None:
        return otherwise
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return otherwise


def _receiver(func: ast.Attribute) -> str | None:
    return func.value.id if isinstance(func.value, ast.Name) else None


def _is_call_to(node: ast.expr, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute) and func.attr == name)
