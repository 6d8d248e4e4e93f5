"""The import rules of ARCHITECTURE.md as data and one checker, so that tests can run the checker
on the real tree and on small trees made to break a rule.

A folder or top-level module of ``workbench/`` is one *room*. Rooms are of three kinds:
- the foundation (``FOUNDATION``): what every room may import; it imports only itself;
- the capabilities (``CAPABILITY_MAY_IMPORT``): each may import the foundation, itself and the
  capabilities its row names, and nothing else;
- the shell and the entry points (``SHELL_MAY_IMPORT``), which sit above the capabilities.

Inside a capability, a service module imports neither Qt nor the shell's Qt kit nor any widgets;
a widgets module meets another capability only through that capability's services (never its
``widgets``) or through the shell's extension points. Relative imports count as what they
resolve to, and imports inside functions count too: a lazy import is still an import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# Anyone may import these; they import only one another. ``qt`` is the shell's Qt kit (widgets
# every capability's widgets share), the others are Qt-free.
FOUNDATION: dict[str, set[str]] = {
    "platform": set(),
    "tasks": set(),
    "extensions": set(),
    "clikit": {"tasks", "platform"},
    "qt": {"tasks", "platform"},
    # Settings declared once and read at the user's and the project's level (Qt-free).
    "settings": {"platform"},
}

# Which capability may import which (besides the foundation and itself). Read a row as "this
# capability builds on those". training builds on no run backend: the cluster's backends
# register through the extension point, so training never names the cluster.
CAPABILITY_MAY_IMPORT: dict[str, set[str]] = {
    "ipc": set(),
    "project": set(),
    "editor": {"project"},
    "git": {"project", "editor"},
    # Adopting a folder of one's own training code: its entry points and the script's
    # hyper-parameters; training asks it for them at Train time.
    "adopt": {"project"},
    "training": {"project", "editor", "git", "ipc", "adopt", "registry"},
    "modeltools": {"project", "ipc", "registry"},
    "cluster": {"project", "git", "training", "modeltools", "ipc"},
    "device": {"project", "modeltools", "ipc", "registry"},
    # The IDE: a console bound to the project's kernel, a language server client beside the
    # editor, and a debugger that runs scripts, training and device scripts.
    "console": {"project", "editor"},
    "lsp": {"project", "editor"},
    "debug": {"project", "editor", "training", "device", "console"},
    # Finding things: Quick Open over a kept list of the project's files, Find and Replace in
    # Files over ripgrep.
    "search": {"project", "editor"},
    # Versions: dataset manifests and the model registry. Training registers what a run made and
    # trains on a version; the model tools file their variants under a version; the device
    # records verifications; the registry itself needs only the project (and the interpreter
    # that runs the project's code, which adopt knows).
    "registry": {"project", "adopt"},
    # Continual learning: an iteration cuts a dataset version, trains, runs the model tools,
    # verifies and deploys on devices, through each capability's services.
    "pipeline": {"project", "registry", "training", "modeltools", "device"},
}

# The shell builds windows from capabilities it finds through ui/capabilities.py (strings), so it
# names only the capabilities every window is made of; the processes and the command line sit on
# top and may import anything below them.
SHELL_MAY_IMPORT: dict[str, set[str] | None] = {
    "ui": {"project", "editor", "ipc"},
    "app": None,
    "cli": None,
    "launch": None,
    "__main__": None,
    "__init__": set(),
}

QT_PREFIXES = ("PySide6", "shiboken6", "pyqtgraph", "qtconsole")

# The hub-and-window channel is the one service made of Qt: QLocalSocket is its transport.
QT_SERVICES = {"workbench.ipc.connection", "workbench.ipc.server"}


@dataclass(frozen=True)
class Import:
    """One import statement's target, as a dotted module name, with the names it takes."""

    module: str
    names: tuple[str, ...]
    line: int


def module_name(package_root: Path, path: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` under ``package_root`` (whose folder name is the top
    package), and whether it is a package's ``__init__``."""
    parts = path.relative_to(package_root.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imports_of(path: Path, name: str, is_package: bool) -> list[Import]:
    """Every import in the file, top level or not, relative ones resolved against ``name``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = tuple(alias.name for alias in node.names)
            # ``from workbench.x import y`` may name a submodule y: count it as importing x.y.
            found.append(Import(module, names, node.lineno))
    return found


def _room(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "workbench":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _is_widgets(dotted: str) -> bool:
    return "widgets" in dotted.split(".")[2:]


def _targets(imp: Import, package_root: Path) -> list[str]:
    """The modules an import reaches: ``from a.b import c`` reaches a.b.c when c is a module,
    else a.b."""
    submodules = []
    for name in imp.names:
        candidate = package_root.parent.joinpath(*imp.module.split("."), name)
        if candidate.with_suffix(".py").is_file() or (candidate / "__init__.py").is_file():
            submodules.append(f"{imp.module}.{name}")
    return submodules or [imp.module]


def layering_faults(package_root: Path) -> list[str]:
    """Every import in the package at ``package_root`` that breaks a rule, one line each."""
    faults = []
    rooms_here = {p.name for p in package_root.iterdir() if (p / "__init__.py").is_file()}
    rooms_here |= {p.stem for p in package_root.glob("*.py")}
    known = set(FOUNDATION) | set(CAPABILITY_MAY_IMPORT) | set(SHELL_MAY_IMPORT)
    faults += [f"workbench/{room} is in no row of the layering table: say where it stands"
               for room in sorted(rooms_here - known)]
    for path in sorted(package_root.rglob("*.py")):
        name, is_package = module_name(package_root, path)
        room = _room(name)
        where = path.relative_to(package_root.parent)
        may_use_qt = "widgets" in name.split(".")[2:] or name in QT_SERVICES
        for imp in imports_of(path, name, is_package):
            for target in _targets(imp, package_root):
                fault = _fault(room, may_use_qt, target)
                if fault:
                    faults.append(f"{where}:{imp.line} imports {target}: {fault}")
    return faults


def _fault(room: str, may_use_qt: bool, target: str) -> str | None:
    target_room = _room(target)
    if room in FOUNDATION:
        if target.startswith(QT_PREFIXES) and room != "qt":
            return "the Qt-free foundation imports no Qt"
        if target_room and target_room != room and target_room not in FOUNDATION[room]:
            return "the foundation imports only the foundation"
        return None
    if room in CAPABILITY_MAY_IMPORT:
        if not may_use_qt and (target.startswith(QT_PREFIXES) or target_room == "qt"
                               or (target_room and _is_widgets(target))):
            return "a service imports no Qt and no widgets"
        if target_room is None or target_room == room or target_room in FOUNDATION:
            return None
        if target_room not in CAPABILITY_MAY_IMPORT[room]:
            return f"{room} may not import {target_room} (see CAPABILITY_MAY_IMPORT)"
        if _is_widgets(target):
            return "widgets meet another capability through its services, never its widgets"
        return None
    allowed = SHELL_MAY_IMPORT.get(room, set())
    if allowed is None or target_room is None or target_room == room or target_room in FOUNDATION:
        return None
    if target_room in CAPABILITY_MAY_IMPORT and target_room not in allowed:
        return f"the shell finds {target_room} through its extension points, not by import"
    if target_room in SHELL_MAY_IMPORT and SHELL_MAY_IMPORT[target_room] is None:
        return f"{room} sits below {target_room}"
    return None


def exported_names(package_root: Path, dotted: str) -> set[str] | None:
    """The names a package exports (its ``__all__``, a literal list or ``sorted(<dict>)``), or
    None when ``dotted`` is not a package of this tree."""
    init = package_root.parent.joinpath(*dotted.split("."), "__init__.py")
    if not init.is_file():
        return None
    tree = ast.parse(init.read_text(encoding="utf-8"))
    dicts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
            if isinstance(value, ast.Dict):
                dicts[target] = {k.value for k in value.keys if isinstance(k, ast.Constant)}
            if target == "__all__":
                if isinstance(value, (ast.List, ast.Tuple)):
                    return {e.value for e in value.elts if isinstance(e, ast.Constant)}
                if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name):
                    return dicts.get(value.args[0].id, set())
    return set()


def plugin_faults(plugin_root: Path, package_root: Path) -> list[str]:
    """Every import of Workbench in a plugin that reaches past what a package exports: a plugin
    imports names from a package's ``__init__`` (its ``__all__``) or public names of a top-level
    module such as ``workbench.tasks``, never a module inside a package."""
    faults = []
    for path in sorted(plugin_root.rglob("*.py")):
        if "tests" in path.relative_to(plugin_root).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                pairs = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                pairs = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in pairs:
                if not module.startswith("workbench.") and module != "workbench":
                    continue
                where = f"{path.relative_to(plugin_root.parent)}:{node.lineno}"
                exported = exported_names(package_root, module)
                if exported is None:
                    is_top_module = module.count(".") == 1 and package_root.joinpath(
                        module.split(".")[1] + ".py").is_file()
                    if not is_top_module:
                        faults.append(f"{where} imports {module}, a module inside a package: "
                                      f"import what the package exports instead")
                    elif name and name.startswith("_"):
                        faults.append(f"{where} imports the private {module}.{name}")
                elif name is None:
                    continue
                elif name not in exported:
                    faults.append(f"{where} imports {module}.{name}, which {module} does not export")
    return faults
