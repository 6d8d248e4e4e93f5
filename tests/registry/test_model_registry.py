"""The model registry with real run folders: hard links, copies, shared identical files, numbers
that only grow, retention, aliases with their history and rollback, and damaged input."""

from __future__ import annotations

import os
import shutil

import pytest
import yaml

from tests.registry.conftest import make_project, make_run, open_project, register_run
from workbench.registry import RegistryError


@pytest.fixture
def registry(tmp_path):
    """(project folder, a function that opens its model registry with the given version_max)."""
    root = tmp_path / "project"
    root.mkdir()

    def models(version_max: int = 5):
        return open_project(root, make_project(root, train=0, val=0, registry={"version_max": version_max})).models

    return root, models


def test_a_run_file_is_hard_linked_and_its_record_written(registry):
    root, models = registry
    run, files = make_run(root, "run-1", b"weights" * 1000, {"model.onnx": b"onnx graph"})
    result = models().register(files, {"run": "run-1", "metrics": {"val_acc": 0.9}, "dataset_version": "0000"},
                               run_folder=run)
    version = result.version
    assert version.name == "0000" and [f.stored for f in version.files] == ["hardlink", "hardlink"]
    folder = root / "registry" / "models"
    assert [f.name for f in version.files] == ["bestmodel_0000.pt", "bestmodel_0000.onnx"]
    assert os.stat(folder / "bestmodel_0000.pt").st_ino == os.stat(run / "best.pt").st_ino
    assert os.stat(folder / "bestmodel_0000.onnx").st_ino == os.stat(run / "model.onnx").st_ino
    record = yaml.safe_load((folder / "neural_net_info_0000.yaml").read_text())
    assert record["run"] == "run-1" and record["metrics"] == {"val_acc": 0.9} and record["dataset_version"] == "0000"
    assert record["created_by"] and record["files"][0]["sha256"] == version.files[0].sha256
    assert models().weights_path(0) == folder / "bestmodel_0000.pt"
    assert not any(path.name.startswith(".incoming-") for path in folder.iterdir())


def test_a_file_outside_the_run_folder_is_copied_not_linked(registry):
    root, models = registry
    run = root / "runs" / "run-1"
    run.mkdir(parents=True)
    outside = root / "model.pt"
    outside.write_bytes(b"a script's own model file")
    version = models().register([(outside, "weights")], {"run": "run-1"}, run_folder=run).version
    stored = root / "registry" / "models" / "bestmodel_0000.pt"
    assert version.files[0].stored in ("copy", "reflink")
    assert os.stat(stored).st_ino != os.stat(outside).st_ino
    outside.write_bytes(b"the next run rewrote it in place")
    assert stored.read_bytes() == b"a script's own model file"


def test_an_identical_file_is_linked_under_the_new_version_s_name_not_stored_twice(registry):
    root, models = registry
    first = register_run(models(), root, "run-1", b"same weights").version
    second = register_run(models(), root, "run-2", b"same weights", {"model.onnx": b"new graph"}).version
    assert second.files[0].stored == "shared" and second.files[0].name == "bestmodel_0001.pt"
    assert second.files[1].name == "bestmodel_0001.onnx" and first.files[0].name == "bestmodel_0000.pt"
    folder = root / "registry" / "models"
    assert (folder / "bestmodel_0001.pt").stat().st_ino == (folder / "bestmodel_0000.pt").stat().st_ino
    assert models().weights_path(1) == folder / "bestmodel_0001.pt"
    assert second.own_size == len(b"new graph") and second.size == second.files[0].size + len(b"new graph")


def test_numbers_only_grow_after_removal_and_gc(registry):
    root, models = registry
    for index in range(3):
        register_run(models(), root, f"run-{index}", f"weights {index}".encode())
    models().remove(2)
    assert register_run(models(), root, "run-3", b"weights 3").version.number == 3
    models().gc(keep=0)
    assert models().list() == []
    assert register_run(models(), root, "run-4", b"weights 4").version.number == 4


def test_retention_keeps_the_newest_pinned_aliased_and_shared_and_reports_space(registry):
    root, models = registry
    registry_ = models(version_max=100)
    payloads = {0: b"A" * 1000, 1: b"B" * 2000, 2: b"A" * 1000, 3: b"C" * 3000, 4: b"D" * 4000, 5: b"E" * 5000,
                6: b"F" * 6000, 7: b"G" * 7000}
    for number, payload in payloads.items():
        register_run(registry_, root, f"run-{number}", payload, {"model.onnx": payload[:10] + bytes([number])})
    registry_.pin(3)
    registry_.set_alias("production", 1, reason="passed the device check")
    # 0's weights are linked as 2's; 2 is removed too, so both names go.
    # Version 4 shares nothing; 5, 6, 7 are the newest three.
    registry_.set_alias("staging", 6)
    dry = models(version_max=3).gc(dry_run=True)
    assert dry.dry_run and dry.plan.remove == [0, 2, 4]
    assert sorted(p.name for p in (root / "registry" / "models").iterdir() if p.name.startswith("bestmodel_0004"))
    report = models(version_max=3).gc()
    assert report.plan.remove == [0, 2, 4] and report.plan.keep == [1, 3, 5, 6, 7]
    assert report.plan.why_kept == {1: "alias production", 3: "pinned"}
    assert sorted(report.plan.files_removed) == ["bestmodel_0000.onnx", "bestmodel_0000.pt", "bestmodel_0002.onnx",
                                                 "bestmodel_0002.pt", "bestmodel_0004.onnx", "bestmodel_0004.pt"]
    sizes = 1000 + 11 + 1000 + 11 + 4000 + 11
    assert report.removed_bytes == sizes and dry.removed_bytes == sizes
    # Every file was linked from a run folder that still holds it: nothing came back to the disk.
    assert report.freed_bytes == 0
    assert [v.number for v in models().list()] == [1, 3, 5, 6, 7]
    for version in models().list():
        assert models().problems(version) == []


def test_a_kept_version_keeps_the_bytes_it_shares_with_a_removed_one(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"shared weights")
    for number in range(1, 4):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    shutil.rmtree(root / "runs" / "run-0")
    newest = register_run(models(version_max=2), root, "run-4", b"shared weights")
    assert newest.retention.plan.remove == [0, 1, 2]
    folder = root / "registry" / "models"
    assert not (folder / "bestmodel_0000.pt").exists()
    assert models().weights_path(4).read_bytes() == b"shared weights"
    # 0's file still had 4's link: removing its name gave nothing back.
    assert "bestmodel_0000.pt" in newest.retention.plan.files_removed


def test_space_freed_counts_files_with_no_other_link(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"x" * 5000)
    register_run(models(), root, "run-1", b"y" * 7000)
    import shutil
    shutil.rmtree(root / "runs" / "run-0")
    report = models().gc(keep=1)
    assert report.plan.remove == [0] and report.freed_bytes == 5000 and report.removed_bytes == 5000


def test_aliases_record_every_move_and_rollback_goes_one_move_further_back_each_time(registry):
    root, models = registry
    for number in range(4):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    book = models()
    book.set_alias("production", 0, reason="first release")
    book.set_alias("production", 1, reason="better accuracy")
    book.set_alias("production", 2, reason="even better")
    assert book.resolve("production").number == 2
    first = book.rollback("production", reason="crashes on the phone")
    assert (first.previous, first.version, first.action) == (2, 1, "rollback")
    second = book.rollback("production")
    assert (second.previous, second.version) == (1, 0)
    with pytest.raises(RegistryError, match="production has no earlier version to go back to"):
        book.rollback("production")
    book.set_alias("production", 3, reason="fixed")
    assert book.rollback("production").version == 0
    history = book.aliases.history("production")
    assert [(m.action, m.previous, m.version) for m in history] == [
        ("set", None, 0), ("set", 0, 1), ("set", 1, 2), ("rollback", 2, 1), ("rollback", 1, 0), ("set", 0, 3),
        ("rollback", 3, 0)]
    assert all(m.user and m.time for m in history) and history[0].reason == "first release"
    assert [v.aliases for v in book.list()] == [["production"], [], [], []]


def test_rollback_to_a_removed_version_and_unknown_aliases_are_clear_errors(registry):
    root, models = registry
    for number in range(2):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    book = models()
    book.set_alias("staging", 0)
    book.set_alias("staging", 1)
    book.remove(0)
    with pytest.raises(RegistryError, match="was on version 0000 before, but that version was removed"):
        book.rollback("staging")
    with pytest.raises(RegistryError, match="there is no alias 'nightly'"):
        book.rollback("nightly")
    with pytest.raises(RegistryError, match="'nightly' is neither a model version number nor an alias"):
        book.resolve("nightly")
    with pytest.raises(RegistryError, match="cannot be an alias"):
        book.set_alias("1st", 1)


def test_pinned_and_aliased_versions_cannot_be_removed(registry):
    root, models = registry
    for number in range(2):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    book = models()
    book.pin(0)
    book.set_alias("production", 1)
    with pytest.raises(RegistryError, match="0000 is pinned; unpin it first"):
        book.remove(0)
    with pytest.raises(RegistryError, match="0001 is what production points to"):
        book.remove(1)
    assert book.gc(keep=0).plan.remove == []
    book.pin(0, pinned=False)
    assert book.remove(0).plan.remove == [0]


@pytest.mark.parametrize("number", [9, "0009", "nine", -3])
def test_unknown_model_version_numbers_are_clear_errors(registry, number):
    root, models = registry
    register_run(models(), root, "run-0", b"weights")
    book = models()
    for call in (book.get, book.pin, book.remove, book.weights_path, lambda n: book.set_alias("production", n)):
        with pytest.raises(RegistryError, match=r"there is no model version 0009 \(there are 0000\)|is not a model "
                                                r"version number|neither a model version number nor an alias"):
            call(number)


def test_a_missing_weight_file_is_named_with_what_to_do(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"weights")
    (root / "registry" / "models" / "bestmodel_0000.pt").unlink()
    with pytest.raises(RegistryError, match=r"model version 0000 cannot be used: its file bestmodel_0000.pt is "
                                            r"missing .*restore it from the run folder .*run-0.*or remove the version"):
        models().weights_path(0)


def test_a_weight_file_changed_after_registration_is_named(registry):
    root, models = registry
    run, files = make_run(root, "run-0", b"weights")
    models().register([(run / "best.pt", "weights")], {}, run_folder=run)
    (root / "registry" / "models" / "bestmodel_0000.pt").write_bytes(b"weights and more")
    with pytest.raises(RegistryError, match="is 16 bytes, not the 7 recorded"):
        models().weights_path(0)


@pytest.mark.parametrize("damage", ["files: [unclosed", "just text", "", "files: 3", "files:\n  - name: x\n"])
def test_a_damaged_record_names_the_file_and_leaves_the_others_usable(registry, damage):
    root, models = registry
    for number in range(2):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    (root / "registry" / "models" / "neural_net_info_0000.yaml").write_text(damage)
    with pytest.raises(RegistryError, match=r"neural_net_info_0000.yaml is damaged .*Restore it"):
        models().list()
    with pytest.raises(RegistryError, match=r"neural_net_info_0000.yaml is damaged"):
        models().get(0)
    assert models().weights_path(1).name == "bestmodel_0001.pt"
    # Registering would clean files no record names: with a record unreadable it must not guess.
    with pytest.raises(RegistryError, match=r"neural_net_info_0000.yaml is damaged"):
        register_run(models(), root, "run-2", b"weights 2")
    assert (root / "registry" / "models" / "bestmodel_0000.pt").is_file()


def test_a_damaged_registry_json_stops_registration_and_says_how_to_mend_it(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"weights")
    (root / "registry" / "registry.json").write_text('{"next": {"model": "many"}}')
    with pytest.raises(RegistryError, match="registry.json is damaged .*Restore it .*or delete it"):
        register_run(models(), root, "run-1", b"weights 1")
    with pytest.raises(RegistryError, match="registry.json is damaged"):
        models().list()
    assert sorted(p.name for p in (root / "registry" / "models").glob("bestmodel_*")) == ["bestmodel_0000.pt"]
    (root / "registry" / "registry.json").unlink()
    assert [v.number for v in models().list()] == [0]
    assert register_run(models(), root, "run-2", b"weights 2").version.number == 1


def test_a_missing_source_file_is_refused_before_anything_is_written(registry):
    root, models = registry
    with pytest.raises(RegistryError, match="does not exist"):
        models().register([(root / "runs" / "gone" / "best.pt", "weights")], {})
    with pytest.raises(RegistryError, match="no model file"):
        models().register([], {})
    assert models().list() == []


def test_half_made_files_from_a_registration_that_died_are_never_a_version_and_are_cleaned(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"weights")
    folder = root / "registry" / "models"
    # What a registration that died leaves (its number was never recorded as taken here, so
    # the next registration may take it).
    (folder / "bestmodel_0001.pt").write_bytes(b"a registration that died before its record")
    (folder / ".incoming-0001-99999").mkdir()
    (folder / ".incoming-0001-99999" / "bestmodel_0001.onnx").write_bytes(b"half")
    assert [v.number for v in models().list()] == [0]
    register_run(models(), root, "run-1", b"weights 1")
    assert not (folder / ".incoming-0001-99999").exists()
    assert sorted(p.name for p in folder.glob("bestmodel_*")) == ["bestmodel_0000.pt", "bestmodel_0001.pt"]
    assert (folder / "bestmodel_0001.pt").read_bytes() == b"weights 1"


def test_a_variant_is_filed_under_its_version_and_verifications_recorded(registry):
    root, models = registry
    register_run(models(), root, "run-0", b"weights")
    quantized = root / "model.int8.onnx"
    quantized.write_bytes(b"int8 model")
    item = models().add_variant(0, quantized, "int8 quantized")
    assert item.name == "bestmodel_0000.int8.onnx" and item.stored in ("copy", "reflink")
    quantized.write_bytes(b"int8 model, second try")
    again = models().add_variant(0, quantized, "int8 quantized")
    assert again.name != item.name and (root / "registry" / "models" / item.name).read_bytes() == b"int8 model"
    models().record_verification(0, {"device": "pixel-7", "passed": True})
    version = models().get(0)
    assert [f.name for f in version.files] == ["bestmodel_0000.pt", item.name, again.name]
    assert version.info["verifications"][0]["device"] == "pixel-7"


def test_a_variant_written_again_beside_its_version_is_recorded_again_under_its_own_name(tmp_path):
    from workbench.registry import open_versions

    run = tmp_path / "runs" / "r" / "outputs"
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(b"weights")
    models = open_versions(tmp_path, {}).models
    models.register([(run / "best.pt", "best weights")], {}, run_folder=run.parent)
    variant = models.folder / "bestmodel_0000.int8.onnx"
    variant.write_bytes(b"first quantization")
    first = models.add_variant("0000", variant, "int8 quantized")
    variant.write_bytes(b"second quantization, bigger")
    second = models.add_variant("0000", variant, "int8 quantized")
    files = models.get("0000").files
    assert first.name == second.name == "bestmodel_0000.int8.onnx" and second.stored == "in place"
    assert [f.name for f in files] == ["bestmodel_0000.pt", "bestmodel_0000.int8.onnx"]
    assert files[1].size == len(b"second quantization, bigger") and not models.problems(models.get("0000"))


def test_an_alias_rolled_back_from_its_first_version_goes_to_the_version_before(registry):
    root, models = registry
    for number in range(4):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    book = models()
    book.remove(2)
    book.set_alias("production", 3, reason="first release")
    move = book.rollback("production")
    assert (move.previous, move.version, move.action) == (3, 1, "rollback")
    assert move.reason == "rollback to the version before 0003"
    assert [(m.previous, m.version) for m in book.aliases.history("production")] == [(None, 3), (3, 1)]


def test_removed_versions_are_logged_and_their_numbers_stay_taken_without_registry_json(registry):
    import json

    root, models = registry
    for number in range(3):
        register_run(models(), root, f"run-{number}", f"weights {number}".encode())
    models().remove(2)
    log = [json.loads(line) for line in (root / "registry" / "removed.jsonl").read_text().splitlines()]
    assert log[0]["versions"] == ["0002"] and log[0]["files"] == ["bestmodel_0002.pt"] and log[0]["user"]
    (root / "registry" / "registry.json").unlink()
    assert register_run(models(), root, "run-3", b"weights 3").version.number == 3
