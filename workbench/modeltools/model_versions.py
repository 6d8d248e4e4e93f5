"""Model files of the project's model registry: which model version a file belongs to, and
filing what a model tool made from a version's file under that version.

A tool run on ``registry/models/bestmodel_0003.onnx`` writes its default output beside it
(``bestmodel_0003.int8.onnx``; ``outputs.free_path`` numbers it ``bestmodel_0003.int8-2.onnx``
or ``bestmodel_0003.2.onnx`` so the name keeps saying which version it is), and once the tool
has succeeded ``record_variants`` files each model it wrote to the models folder under version
0003 (``ModelRegistry.add_variant``: name, size, sha256 and role in
``neural_net_info_0003.yaml``). ``run_tool`` calls it, so the CLI and the tool windows (both run
tools through a job process that calls ``run_tool``) record a variant exactly once.

A registry that cannot be read or written never fails the tool: the model is made, and the
report says it was not recorded and why. A model outside the registry's models folder, or made
from a file of no version, changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.project_root import find_project_root

if TYPE_CHECKING:
    from workbench.modeltools.params import ToolSpec
    from workbench.modeltools.report import ToolReport
    from workbench.registry import ModelRegistry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionFile:
    """``path`` is a file of model version ``number`` of the registry ``models``."""

    models: "ModelRegistry"
    number: int
    path: Path

    @property
    def version(self) -> str:
        from workbench.registry.store import format_number

        return format_number(self.number)


def version_file(path: Path | str, project: Path | str | None = None) -> VersionFile | None:
    """The model version ``path`` is a file of, in the registry of ``project`` or of the
    project holding ``path``; None for a file of no version (or in no project). RegistryError
    when that project's settings cannot be read, so nobody can tell."""
    from workbench.project.errors import ProjectError
    from workbench.registry import RegistryError, open_versions
    from workbench.registry.models import MODEL_PREFIX

    path = Path(path).expanduser().absolute()
    # Every version's file is named bestmodel_NNNN...: any other name needs no project read.
    if not path.name.startswith(MODEL_PREFIX):
        return None
    roots = []
    for root in (project, find_project_root(path.parent)):
        if root is not None and Path(root).resolve() not in roots:
            roots.append(Path(root).resolve())
    for root in roots:
        try:
            models = open_versions(root).models
        except ProjectError as exc:
            raise RegistryError(str(exc)) from None
        number = models.version_of_file(path)
        if number is not None:
            return VersionFile(models, number, path)
    return None


def refuse_replacing_a_version_file(target: Path | str, project: Path | str | None,
                                    flag: str = "-o") -> None:
    """ModelToolError when ``target``, an output the user named, is a file a model version
    records: its sha256 in the version's record would no longer be the file's. A registry that
    cannot be read does not stop the tool (``record_variants`` then says what went wrong)."""
    from workbench.registry import RegistryError

    target = Path(target).expanduser().absolute()
    try:
        located = version_file(target, project)
        if located is None or not target.exists():
            return
        recorded = {item.name for item in located.models.get(located.number).files}
    except RegistryError:
        return
    if target.name in recorded:
        raise ModelToolError(
            f"{target} is a file of model version {located.version} (its record has the file's "
            f"sha256) and is never replaced; leave out {flag} for the next free name beside it, "
            "or choose another name")


def record_variants(spec: "ToolSpec", values: dict, report: "ToolReport",
                    project: Path | None, say: Callable[[str], None] = lambda text: None) -> None:
    """File the models ``report`` says the tool wrote into the registry's models folder under
    the version its input is a file of; the report's figures say which version and under what
    names, its warnings why nothing was recorded when the registry failed."""
    from workbench.registry import RegistryError
    from workbench.registry.models import MODEL_PREFIX

    role_of = spec.load_variant_role()
    source = _input_model(spec, values)
    if role_of is None or source is None or not report.outputs:
        return
    written = [Path(p) for p in report.outputs]
    try:
        located = version_file(source, project)
    except RegistryError as exc:
        # The registry's folder is unknown; a version-named input with outputs beside it was
        # most likely meant to be recorded, so say why it was not.
        beside = [p for p in written if p.parent.resolve() == source.parent.resolve()]
        if source.name.startswith(MODEL_PREFIX) and beside:
            _not_recorded(report, beside, None, exc)
        return
    if located is None:
        return
    folder = located.models.folder.resolve()
    made = [p for p in written if p.parent.resolve() == folder]
    if not made:
        return
    recorded: list[str] = []
    try:
        for path in made:
            item = located.models.add_variant(located.number, path, role_of(values, report, path))
            recorded.append(item.name)
            say(f"Recorded {item.name} under model version {located.version} ({item.role})")
    except Exception as exc:  # noqa: BLE001 - the model is made; no registry failure undoes that
        if not isinstance(exc, (RegistryError, OSError)):
            log.exception("recording %s under model version %s failed", made, located.version)
        _not_recorded(report, made[len(recorded):], located, exc)
        report.figures["recorded_as"] = recorded
        return
    report.figures["model_version"] = located.version
    report.figures["recorded_as"] = recorded


def _input_model(spec: "ToolSpec", values: dict) -> Path | None:
    for param in spec.params:
        value = values.get(param.name)
        if param.positional and value:
            return Path(value[0] if isinstance(value, list) else value).expanduser().absolute()
    return None


def _not_recorded(report: "ToolReport", paths: list[Path], located: VersionFile | None,
                  exc: Exception) -> None:
    from workbench.registry import RegistryError

    why = str(exc).strip() or type(exc).__name__
    if isinstance(exc, OSError):
        why = f"{exc.strerror or why}" + (f" ({exc.filename})" if exc.filename else "")
    elif not isinstance(exc, RegistryError):
        why = f"{type(exc).__name__}: {why}"
    if located is not None:
        report.figures["model_version"] = located.version
    names = ", ".join(p.name for p in paths)
    made = "were made" if len(paths) > 1 else "was made"
    version = f"model version {located.version}" if located else "its model version"
    report.warnings.append(f"{names} {made} but not recorded under {version} in the registry: "
                           f"{why.rstrip('.')}. The model file is in place and can be used as it is")
