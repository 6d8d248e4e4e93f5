"""Training on a dataset version: manifests read, samples selected, the digits template's ids."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest
import torch
from torch.utils.data import Subset, TensorDataset

from workbench_trainkit import (DatasetVersion, TrainkitError, active_dataset_version,
                                read_manifest, select_samples)

from .conftest import REPO, child_environment

DIGITS = REPO / "resources" / "templates" / "digits"
SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
VERSION_VARIABLES = ("WORKBENCH_DATASET_MANIFEST", "WORKBENCH_DATASET_VERSION",
                     "WORKBENCH_VAL_MANIFEST")


@pytest.fixture
def digits_project(tmp_path):
    project = tmp_path / "digits"
    shutil.copytree(DIGITS, project)
    return project


def sample_ids(project, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench_trainkit.sample_ids", *args, "--project", str(project)],
        cwd=project.parent, env=child_environment(**(env or {})), capture_output=True, text=True,
        timeout=60)


def test_a_manifest_gives_its_keys_in_order_without_comments_sizes_or_digests(tmp_path):
    manifest = tmp_path / "train_0003.txt"
    manifest.write_text(f"# version 0003\n\nimages/b.png\t120\t{SHA}\r\ndigits/0042\n"
                        f"images/a b.png\t0\t{SHA.upper()}\n", encoding="utf-8")
    assert read_manifest(manifest) == ["images/b.png", "digits/0042", "images/a b.png"]


@pytest.mark.parametrize("line, words", [
    ("a.png\t120", "2 TAB-separated fields"),
    ("a.png\tbig\t" + SHA, "'big' is not a whole number"),
    ("a.png\t12\tabc", "not a sha256"),
    ("\t12\t" + SHA, "no sample key"),
    ("first.png", "listed again (first on line 2)"),
])
def test_a_damaged_manifest_line_is_named_with_its_file_and_line(tmp_path, line, words):
    manifest = tmp_path / "train_0001.txt"
    manifest.write_text(f"# comment\nfirst.png\n{line}\n", encoding="utf-8")
    with pytest.raises(TrainkitError) as caught:
        read_manifest(manifest)
    message = str(caught.value)
    assert f"{manifest}:3: " in message and words in message
    assert "cut the dataset version again" in message


def test_select_samples_keeps_the_versions_items_in_dataset_order():
    dataset = TensorDataset(torch.arange(6))
    ids = [f"s{i}" for i in range(6)]
    version = DatasetVersion("0002", manifest=None, keys=["s4", "s1", "s5"])

    chosen = select_samples(dataset, ids, version)

    assert isinstance(chosen, Subset) and chosen.indices == [1, 4, 5]
    assert [int(chosen[i][0]) for i in range(len(chosen))] == [1, 4, 5]
    assert select_samples(dataset, ids, None) is dataset


def test_a_version_naming_samples_the_dataset_lacks_lists_them_and_their_count():
    dataset = TensorDataset(torch.arange(3))
    version = DatasetVersion("0007", manifest=None,
                             keys=["s0"] + [f"gone{i}" for i in range(8)])
    with pytest.raises(TrainkitError) as caught:
        select_samples(dataset, ["s0", "s1", "s2"], version)
    message = str(caught.value)
    assert "dataset version 0007 names 8 samples the dataset does not have" in message
    assert "gone0, gone1, gone2, gone3, gone4, ..." in message and "gone5" not in message


def test_the_active_version_comes_from_the_environment(tmp_path, monkeypatch):
    for name in VERSION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert active_dataset_version() is None

    manifest = tmp_path / "train_0004.txt"
    manifest.write_text("a\nb\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_DATASET_MANIFEST", str(manifest))
    monkeypatch.setenv("WORKBENCH_DATASET_VERSION", "0004")
    monkeypatch.setenv("WORKBENCH_VAL_MANIFEST", str(tmp_path / "val.txt"))
    version = active_dataset_version()
    assert (version.number, version.manifest, version.keys) == ("0004", manifest, ["a", "b"])
    assert version.val_manifest == tmp_path / "val.txt"

    manifest.unlink()
    with pytest.raises(TrainkitError) as caught:
        active_dataset_version()
    assert "dataset version 0004" in str(caught.value)
    assert "cut the version again, or train without --dataset-version" in str(caught.value)


def test_the_sample_ids_command_prints_the_digits_ids_as_json_only(digits_project):
    result = sample_ids(digits_project, "data:sample_ids")

    assert result.returncode == 0, result.stderr
    ids = json.loads(result.stdout)
    assert result.stdout.count("\n") == 1
    assert (len(ids["train"]), len(ids["val"])) == (1257, 270)
    assert not set(ids["train"]) & set(ids["val"])
    assert all(len(i) == len("digits/0000") and i.startswith("digits/") for i in ids["train"])
    # The same seed splits the same way; another seed, another way.
    assert json.loads(sample_ids(digits_project, "data:sample_ids").stdout) == ids
    (digits_project / "seed3.hparams").write_text("seed=3\n")
    other = sample_ids(digits_project, "data:sample_ids", "--hparams",
                       str(digits_project / "seed3.hparams"))
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["train"] != ids["train"]


@pytest.mark.parametrize("code, target, words", [
    ("", "nowhere:sample_ids", "cannot import nowhere"),
    ("", "ids:missing", "ids has no function missing"),
    ("def listing(hp):\n    return ['a', 'b']\n", "ids:listing", "returned list, not a dict"),
    ("def listing(hp):\n    return {'train': ['a', 'b'], 'val': ['b']}\n", "ids:listing",
     "the id 'b' in both train and val"),
    ("def listing(hp):\n    return {'train': ['a', 'a']}\n", "ids:listing", "'a' twice in train"),
    ("def listing(hp):\n    return {'train': ['a\\tb']}\n", "ids:listing", "without TABs"),
])
def test_the_sample_ids_command_refuses_bad_functions_with_one_error_line(
        tmp_path, code, target, words):
    project = tmp_path / "project"
    project.mkdir()
    (project / "ids.py").write_text("print('loading ids')\n" + code)
    result = sample_ids(project, target)
    assert result.returncode == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and words in errors[0], result.stderr


def test_what_the_projects_code_prints_goes_to_stderr(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "ids.py").write_text(
        "import os\nprint('loading')\n"
        "def listing(hp):\n    print('listing', hp.batch_size)\n    os.write(1, b'native\\n')\n"
        "    return {'train': ['x/1', 'x/2']}\n")
    result = sample_ids(project, "ids:listing")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"train": ["x/1", "x/2"], "val": []}
    assert "loading" in result.stderr and "listing 32" in result.stderr
    assert "native" in result.stderr


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_digits_trains_on_exactly_the_versions_images(digits_project):
    ids = json.loads(sample_ids(digits_project, "data:sample_ids").stdout)["train"]
    random.Random(0).shuffle(ids)
    manifest = digits_project / "versions" / "train_0002.txt"
    manifest.parent.mkdir()
    manifest.write_text("# 100 images\n" + "".join(f"{i}\n" for i in ids[:100]))

    result = subprocess.run(
        [sys.executable, "train.py", "--set", "num_epochs=1", "--set", "stop_at_step=2",
         "--output-dir", "out"], cwd=digits_project,
        env=child_environment(WORKBENCH_DATASET_MANIFEST=manifest, WORKBENCH_DATASET_VERSION="0002"),
        capture_output=True, text=True, timeout=110)
    assert result.returncode == 0, result.stderr
    assert "on 100 images of dataset version 0002," in result.stdout

    manifest.write_text("digits/0001\ndigits/9999\n")
    refused = subprocess.run(
        [sys.executable, "train.py", "--set", "stop_at_step=1", "--output-dir", "out2"],
        cwd=digits_project, env=child_environment(WORKBENCH_DATASET_MANIFEST=manifest),
        capture_output=True, text=True, timeout=110)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "error: dataset version 0002 names 1 sample the dataset does not have (digits/9999)")
