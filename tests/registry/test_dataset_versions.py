"""Dataset versions cut from real files: manifests, nesting fractions, a fixed val.txt, pending
changes and diffs, the hash cache, and every kind of damaged or wrong input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.registry.conftest import make_project, open_project, write_sample
from workbench.registry import RegistryError


def bump(path: Path, text: str) -> None:
    """Change a sample so its size differs (the cache keys on size and mtime)."""
    path.write_text(text, encoding="utf-8")


def test_the_first_cut_writes_a_manifest_its_metadata_and_val_txt(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    result = datasets.cut(reason="first data")
    version = result.version
    assert version.name == "0000" and version.samples == 20 and version.kind == "files"
    assert version.manifest == root / "registry" / "datasets" / "train_0000.txt"
    assert (root / "registry" / "datasets" / "train_0000.json").is_file()
    assert result.hashed == 25  # 20 train + 5 val files read once
    assert len(result.changes.added) == 20 and not result.changes.removed
    samples = datasets.samples(0)
    assert [s.key for s in samples] == sorted(s.key for s in samples)
    assert samples[0].key.startswith("data/train/") and samples[0].size is not None and len(samples[0].sha256) == 64
    val_lines = [line for line in datasets.val_manifest().read_text().splitlines() if not line.startswith("#")]
    assert len(val_lines) == 5 and version.val_samples == 5
    assert datasets.get("0000").reason == "first data" and datasets.latest().number == 0
    assert [entry["reason"] for entry in datasets.val_history()] == ["first data"]


def test_fractions_nest_each_inside_the_next(project):
    root, _ = project
    settings = make_project(root, train=200, val=0)
    settings["data"].pop("val")
    datasets = open_project(root, settings).datasets
    fractions = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    key_sets = [set(datasets.keys(datasets.cut(fraction=f).version.number)) for f in fractions]
    assert [len(keys) for keys in key_sets] == [100, 120, 140, 160, 180, 200]
    for smaller, larger in zip(key_sets, key_sets[1:]):
        assert smaller < larger
    # The same fraction cut again takes the same samples, and a sample added later does not
    # move the others out of the half.
    again = datasets.cut(fraction=0.5).version
    assert set(datasets.keys(again.number)) == key_sets[0]
    write_sample(root / "data" / "train" / "late" / "new.txt", "late arrival\n")
    later_half = set(datasets.keys(datasets.cut(fraction=0.5).version.number))
    assert len(later_half - key_sets[0]) <= 1 and len(key_sets[0] - later_half) <= 1


def test_a_fraction_out_of_range_is_refused(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    for fraction in (0, -0.5, 1.5):
        with pytest.raises(RegistryError, match="--fraction must be more than 0 and at most 1"):
            datasets.cut(fraction=fraction)
    assert datasets.list() == []


def test_val_txt_is_kept_when_the_validation_data_changes_unless_new_val(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    val_before = datasets.val_manifest().read_bytes()
    write_sample(root / "data" / "val" / "sample_999.txt", "a new val sample\n")
    result = datasets.cut(reason="more val data")
    assert datasets.val_manifest().read_bytes() == val_before
    assert "val.txt is kept" in result.val_note and "1 added" in result.val_note
    assert result.version.val_samples == 5
    replaced = datasets.cut(new_val=True, reason="a bigger val split")
    assert replaced.version.val_samples == 6 and "replaced" in replaced.val_note
    assert datasets.val_manifest().read_bytes() != val_before
    assert [entry["samples"] for entry in datasets.val_history()] == [5, 6]
    assert datasets.val_history()[-1]["reason"] == "a bigger val split"


def test_pending_and_diff_name_added_removed_and_changed_samples(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    assert len(datasets.pending().added) == 20
    datasets.cut()
    assert not datasets.pending().any
    train = root / "data" / "train"
    write_sample(train / "class_9" / "fresh.txt", "fresh\n")
    (train / "class_0" / "sample_000.txt").unlink()
    bump(train / "class_1" / "sample_001.txt", "edited sample, longer now\n")
    pending = datasets.pending()
    assert pending.added == ["data/train/class_9/fresh.txt"]
    assert pending.removed == ["data/train/class_0/sample_000.txt"]
    assert pending.changed == ["data/train/class_1/sample_001.txt"]
    second = datasets.cut().version
    assert (second.added, second.removed, second.changed, second.parent) == (1, 1, 1, 0)
    diff = datasets.diff(0)
    assert diff.to_json() == pending.to_json()
    assert datasets.diff(0, 1).to_json() == pending.to_json()
    reverse = datasets.diff(1, 0)
    assert reverse.added == pending.removed and reverse.removed == pending.added
    with pytest.raises(RegistryError, match="0001 is the newest"):
        datasets.diff(1)


def test_pending_after_a_fraction_does_not_count_the_samples_left_out(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut(fraction=0.5)
    assert not datasets.pending().any
    write_sample(root / "data" / "train" / "class_0" / "sample_000.txt", "changed and longer\n")
    in_half = "data/train/class_0/sample_000.txt" in datasets.keys(0)
    assert datasets.pending().changed == (["data/train/class_0/sample_000.txt"] if in_half else [])


def test_a_second_cut_hashes_only_the_files_that_changed(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    assert datasets.cut().hashed == 25
    unchanged = datasets.cut()
    assert unchanged.hashed == 0 and not unchanged.changes.any
    sample = root / "data" / "train" / "class_2" / "sample_002.txt"
    bump(sample, "train 2, edited\n")
    write_sample(root / "data" / "train" / "class_2" / "new.txt", "new\n")
    third = datasets.cut()
    assert third.hashed == 2
    assert third.changes.changed == ["data/train/class_2/sample_002.txt"]
    # Same size, new content, new mtime: found by the mtime, and hashed again.
    stat = sample.stat()
    sample.write_text("train 2, EDITED\n", encoding="utf-8")
    os.utime(sample, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    fourth = datasets.cut()
    assert fourth.hashed == 1 and fourth.changes.changed == ["data/train/class_2/sample_002.txt"]


def test_hidden_files_and_symbolic_links_are_not_samples(project):
    root, settings = project
    write_sample(root / "data" / "train" / ".DS_Store", "finder\n")
    write_sample(root / "data" / "train" / ".cache" / "x.txt", "cache\n")
    (root / "data" / "train" / "link.txt").symlink_to(root / "data" / "val" / "sample_000.txt")
    keys = open_project(root, settings).datasets.cut().version
    assert keys.samples == 20


def test_an_edited_manifest_line_is_a_hash_mismatch(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    manifest = root / "registry" / "datasets" / "train_0000.txt"
    lines = manifest.read_text().splitlines(keepends=True)
    path, size, sha = lines[3].rstrip("\n").split("\t")
    lines[3] = f"{path}\t{size}\t{'0' * 64}\n"
    manifest.write_text("".join(lines))
    for read in (lambda: datasets.get(0), lambda: datasets.keys(0), datasets.pending, lambda: datasets.diff(0, 0)):
        with pytest.raises(RegistryError, match="0000's manifest train_0000.txt does not match the hash recorded"):
            read()


def test_a_manifest_line_that_is_not_a_sample_names_the_line(project):
    from workbench.registry.datasets import read_manifest

    root, settings = project
    open_project(root, settings).datasets.cut()
    manifest = root / "registry" / "datasets" / "train_0000.txt"
    lines = manifest.read_text().splitlines(keepends=True)
    lines[2] = "data/train/x.txt\tnot-a-size\t" + "a" * 64 + "\n"
    manifest.write_text("".join(lines))
    with pytest.raises(RegistryError, match=r"train_0000.txt:3 is not a manifest line"):
        read_manifest(manifest)


def test_a_missing_manifest_says_so(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    (root / "registry" / "datasets" / "train_0000.txt").unlink()
    with pytest.raises(RegistryError, match="manifest .*train_0000.txt is missing"):
        datasets.get(0)


@pytest.mark.parametrize("damage", ["{not json", "[1, 2]", '{"format": 1}', '{"manifest": "train_0000.txt", '
                                    '"samples": "many", "manifest_sha256": "x", "kind": "files", "created": "now"}'])
def test_damaged_metadata_names_the_file(project, damage):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    metadata = root / "registry" / "datasets" / "train_0000.json"
    metadata.write_text(damage)
    with pytest.raises(RegistryError, match=r"train_0000.json is damaged .*Restore it"):
        datasets.get(0)
    with pytest.raises(RegistryError, match=r"train_0000.json is damaged"):
        datasets.list()


@pytest.mark.parametrize("number", [7, "0007", "abc", -1, "1.5"])
def test_an_unknown_or_malformed_version_number_is_a_clear_error(project, number):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    with pytest.raises(RegistryError, match=r"there is no dataset version 0007 \(there are 0000\)|is not a "
                                            r"dataset version number"):
        datasets.get(number)
    with pytest.raises(RegistryError):
        datasets.diff(0, number)


def test_a_damaged_registry_json_stops_a_cut_and_says_how_to_mend_it(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    (root / "registry" / "registry.json").write_text("{ damaged")
    with pytest.raises(RegistryError, match="registry.json is damaged .*Restore it"):
        datasets.cut()
    assert [v.number for v in datasets.list()] == [0]


def test_a_manifest_left_without_metadata_is_never_a_version_and_is_cleaned(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut()
    half_made = root / "registry" / "datasets" / "train_0001.txt"
    half_made.write_text("# a cut that died\n")
    assert [v.number for v in datasets.list()] == [0]
    assert datasets.cut().version.number == 1
    assert datasets.get(1).samples == 20


def test_numbers_grow_past_a_removed_dataset_version(project):
    root, settings = project
    datasets = open_project(root, settings).datasets
    datasets.cut(), datasets.cut()
    for suffix in (".txt", ".json"):
        (root / "registry" / "datasets" / f"train_0001{suffix}").unlink()
    assert datasets.cut().version.number == 2


def test_no_data_declared_or_a_missing_folder_is_a_clear_error(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    with pytest.raises(RegistryError, match=r"does not say where the data is.*\[data\]"):
        open_project(root, {}).datasets.cut()
    with pytest.raises(RegistryError, match=r"\[data\] train names 'data/nothing', which is not a folder"):
        open_project(root, {"data": {"train": "data/nothing"}}).datasets.cut()
    (root / "data" / "train").mkdir(parents=True)
    with pytest.raises(RegistryError, match="holds no training samples"):
        open_project(root, {"data": {"train": "data/train"}}).datasets.cut()


def test_a_sample_file_name_with_a_tab_is_refused(project):
    root, settings = project
    write_sample(root / "data" / "train" / "bad\tname.txt", "x\n")
    with pytest.raises(RegistryError, match="has a tab or line break in its name"):
        open_project(root, settings).datasets.cut()


def test_metadata_records_who_when_why_and_the_manifest_hash(project):
    import hashlib

    root, settings = project
    version = open_project(root, settings).datasets.cut(reason="why not").version
    data = json.loads((root / "registry" / "datasets" / "train_0000.json").read_text())
    assert data["version"] == "0000" and data["reason"] == "why not" and data["created_by"]
    assert data["manifest_sha256"] == hashlib.sha256(version.manifest.read_bytes()).hexdigest()
    assert data["manifest"] == "train_0000.txt"
