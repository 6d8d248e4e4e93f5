"""Which model files a project holds (Qt-free): run outputs grouped by run, other folders, and
what is never walked."""

from __future__ import annotations

import os

from workbench.modeltools.model_index import (
    MODEL_SUFFIXES,
    group_by_run,
    is_model_file,
    list_models,
    run_id_of,
    watched_folders,
)

from .conftest import RUN_IDS


def test_run_outputs_and_other_folders_are_listed_newest_first_without_checkpoints_or_tool_folders(model_project):
    models = list_models(model_project)
    relative = [m.path.relative_to(model_project).as_posix() for m in models]
    assert relative == [f"runs/{RUN_IDS[1]}/outputs/model.onnx", f"runs/{RUN_IDS[0]}/outputs/model.onnx",
                        "exported/base.onnx"]
    assert [m.run_id for m in models] == [RUN_IDS[1], RUN_IDS[0], None]
    assert models[0].size == (model_project / relative[0]).stat().st_size


def test_groups_are_one_per_run_and_one_for_other_files_the_newest_first(model_project):
    groups = group_by_run(list_models(model_project))
    assert [(g.title, g.run_id, len(g.models)) for g in groups] == [
        (f"Run {RUN_IDS[1]}", RUN_IDS[1], 1), (f"Run {RUN_IDS[0]}", RUN_IDS[0], 1), ("Other files", None, 1)]


def test_hidden_and_half_written_files_are_not_models():
    assert is_model_file("model.onnx") and is_model_file("weights.PT")
    assert not is_model_file(".model.1a2b3c4d.onnx.partial")
    assert not is_model_file(".hidden.onnx")
    assert not is_model_file("model.onnx.data")
    assert ".onnx" in MODEL_SUFFIXES and ".mnn" in MODEL_SUFFIXES


def test_the_run_of_a_path_and_the_folders_to_watch(model_project):
    path = model_project / "runs" / RUN_IDS[0] / "outputs" / "model.onnx"
    assert run_id_of(model_project, path) == RUN_IDS[0]
    assert run_id_of(model_project, model_project / "exported" / "base.onnx") is None
    folders = watched_folders(model_project, list_models(model_project))
    assert model_project in folders and model_project / "runs" in folders
    assert model_project / "runs" / RUN_IDS[1] / "outputs" in folders
    assert model_project / "exported" in folders


def test_a_model_in_a_new_nested_folder_of_a_run_is_found(model_project):
    nested = model_project / "runs" / RUN_IDS[0] / "outputs" / "mobile"
    nested.mkdir()
    (nested / "model.mnn").write_bytes(b"mnn")
    os.utime(nested / "model.mnn", (1, 1))
    assert list_models(model_project)[-1].path == nested / "model.mnn"


def torchscript_file(path):
    """A file laid out as torch.jit.save writes one: a zip archive."""
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("model/data.pkl", b"\x80\x02}q\x00.")
    return path


def test_exported_programs_and_torchscript_are_listed_but_typescript_is_not(model_project):
    outputs = model_project / "runs" / RUN_IDS[0] / "outputs"
    (outputs / "model.pt2").write_bytes(b"PK\x03\x04exported program")
    torchscript_file(outputs / "model.ts")
    torchscript_file(outputs / "scripted.torchscript")
    (model_project / "web").mkdir()
    (model_project / "web" / "app.ts").write_text("export const answer: number = 42;\n")
    listed = {m.name for m in list_models(model_project)}
    assert {"model.pt2", "model.ts", "scripted.torchscript"} <= listed
    assert "app.ts" not in listed
    assert is_model_file(outputs / "model.ts") and not is_model_file(model_project / "web" / "app.ts")


def test_every_file_kind_a_built_in_tool_opens_is_a_model_kind(tools):
    from workbench.modeltools.registry import all_tools

    for spec in all_tools(include_plugins=False).values():
        if spec.name in ("count", "merge"):  # the tests' own tools
            continue
        assert set(spec.applies_to) <= set(MODEL_SUFFIXES), spec.name


def test_a_file_is_named_as_the_project_and_the_models_panel_name_it(tmp_path):
    from workbench.modeltools.model_index import name_in_project, name_in_run

    root = tmp_path / "proj"
    in_run = root / "runs" / RUN_IDS[0] / "outputs" / "int8" / "model.onnx"
    assert name_in_project(root, in_run) == f"runs/{RUN_IDS[0]}/outputs/int8/model.onnx"
    assert name_in_run(root, in_run) == ("int8/model.onnx", RUN_IDS[0])
    assert name_in_run(root, root / "exported" / "base.onnx") == ("exported/base.onnx", None)
    assert name_in_project(root, tmp_path / "elsewhere" / "x.onnx") == "x.onnx"
    assert name_in_project(None, root / "exported" / "base.onnx") == "base.onnx"
