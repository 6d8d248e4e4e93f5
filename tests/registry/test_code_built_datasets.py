"""Dataset versions of a dataset the project's code builds: the ids come from
``python -m workbench_trainkit.sample_ids`` run in the project's Python."""

from __future__ import annotations

import textwrap

import pytest

from tests.registry.conftest import open_project
from workbench.registry import RegistryError

DATA_PY = textwrap.dedent('''\
    COUNT = {count}

    def sample_ids(hp):
        print("building the dataset")          # must not end up in the answer
        ids = [f"digits/{{i:04d}}" for i in range(COUNT)] + ["#hash-named", "name with spaces"]
        return {{"train": ids, "val": [f"val/{{i}}" for i in range({val})]}}

    def broken(hp):
        raise ValueError("the data server is down")
''')


def code_project(tmp_path, count=50, val=4):
    root = tmp_path / "code-project"
    root.mkdir()
    (root / "data.py").write_text(DATA_PY.format(count=count, val=val))
    return root, {"data": {"samples": "data:sample_ids"}}


def test_a_code_built_dataset_is_cut_from_its_sample_ids(tmp_path):
    root, settings = code_project(tmp_path)
    datasets = open_project(root, settings).datasets
    version = datasets.cut().version
    assert version.kind == "ids" and version.samples == 52 and version.bytes is None
    keys = datasets.keys(version.number)
    assert "digits/0000" in keys and "#hash-named" in keys and "name with spaces" in keys
    assert version.val_samples == 4
    assert not datasets.pending().any


def test_code_built_fractions_nest_and_pending_sees_new_ids(tmp_path):
    root, settings = code_project(tmp_path, count=98)
    datasets = open_project(root, settings).datasets
    half = set(datasets.keys(datasets.cut(fraction=0.5).version.number))
    whole = set(datasets.keys(datasets.cut().version.number))
    assert len(half) == 50 and half < whole
    (root / "data.py").write_text(DATA_PY.format(count=100, val=4))
    assert datasets.pending().added == ["digits/0098", "digits/0099"]


def test_a_function_without_validation_ids_writes_no_val_txt(tmp_path):
    root, settings = code_project(tmp_path, val=0)
    datasets = open_project(root, settings).datasets
    assert datasets.cut().version.val_samples is None
    assert datasets.val_manifest() is None


def test_a_failing_function_is_a_one_line_error_naming_it(tmp_path):
    root, _ = code_project(tmp_path)
    datasets = open_project(root, {"data": {"samples": "data:broken"}}).datasets
    with pytest.raises(RegistryError, match="data:broken.*could not be listed: .*the data server is down") as caught:
        datasets.cut()
    assert "\n" not in str(caught.value)
    assert datasets.list() == []
