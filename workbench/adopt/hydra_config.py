"""The keys of a Hydra app's primary YAML config, with its defaults list one level deep, read
with omegaconf (imported here on first use: only Hydra projects need it)."""

from __future__ import annotations

from pathlib import Path

from workbench.adopt.errors import AdoptError
from workbench.adopt.parameter import ScriptParameter


def read_hydra_config(config_file: Path) -> list[ScriptParameter]:
    """Every leaf key of the config (dotted names, as Hydra's ``key=value`` overrides take
    them) with its value as the default; ``???`` values are required."""
    try:
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException
    except ImportError:
        raise AdoptError("Reading a Hydra config needs the omegaconf package: pip install omegaconf.") from None
    config_file = Path(config_file)
    if not config_file.is_file():
        raise AdoptError(f"The Hydra config {config_file} does not exist. Set [training] config in "
                         "workbench.toml to the app's primary config file.")
    try:
        primary = OmegaConf.to_container(OmegaConf.load(config_file), resolve=False)
    except (OmegaConfBaseException, OSError, ValueError) as exc:
        raise AdoptError(f"{config_file} cannot be read as YAML: {_one_line(exc)}. Fix it; Workbench "
                         "left it untouched.") from None
    if not isinstance(primary, dict):
        raise AdoptError(f"{config_file} is not a mapping of keys to values, as a Hydra config is.")
    merged: dict = {}
    for group, option in _defaults(primary.pop("defaults", None) or []):
        part = _group_file(config_file.parent, group, option)
        if part is None:
            continue
        try:
            loaded = OmegaConf.to_container(OmegaConf.load(part), resolve=False)
        except (OmegaConfBaseException, OSError, ValueError):
            continue
        if isinstance(loaded, dict):
            loaded.pop("defaults", None)
            _merge(merged, {group: loaded} if group else loaded)
    _merge(merged, primary)
    return [_parameter(name, value) for name, value in _leaves(merged)]


def _defaults(entries) -> list[tuple[str, str]]:
    """(group, option) of each entry: "" as group for a config merged at the top."""
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, str) and entry != "_self_":
            found.append(("", entry))
        elif isinstance(entry, dict) and len(entry) == 1:
            (key, value), = entry.items()
            key = str(key).replace("override ", "").replace("optional ", "").strip()
            if isinstance(value, str) and value != "null" and not key.startswith("hydra"):
                found.append((key.split("@")[0], value))
    return found


def _group_file(folder: Path, group: str, option: str) -> Path | None:
    for suffix in (".yaml", ".yml"):
        candidate = folder / group / f"{option}{suffix}" if group else folder / f"{option}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _merge(into: dict, other: dict) -> None:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _leaves(mapping: dict, prefix: str = ""):
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{name}.")
        else:
            yield name, value


def _parameter(name: str, value) -> ScriptParameter:
    if value == "???":
        return ScriptParameter(name=name, type="str", required=True)
    kind = ("bool" if isinstance(value, bool) else "int" if isinstance(value, int)
            else "float" if isinstance(value, float) else "list" if isinstance(value, list) else "str")
    return ScriptParameter(name=name, type=kind, default=value)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]
