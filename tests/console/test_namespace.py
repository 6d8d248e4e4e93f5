"""The namespace summary the Variables view shows: computed by the probe the console sends to its
kernel (run here in this process on a made-up namespace, and once in a real kernel), read back
into ``Variable`` objects."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import torch

from workbench.console import namespace_probe
from workbench.console.namespace import find, parse_summary


@dataclasses.dataclass
class Split:
    train: list
    seed: int = 0


def summarise(namespace: dict):
    return parse_summary(namespace_probe.summary(namespace))


def test_arrays_and_tensors_show_shape_dtype_device_and_range():
    variables, truncated = summarise({
        "images": np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4),
        "labels": np.arange(5),
        "loss": torch.tensor(0.25),
        "weights": torch.full((3, 2), 2.0, dtype=torch.float64),
    })
    assert not truncated
    images = find(variables, "images")
    assert (images.type, images.size, images.shape, images.dtype) == ("np.ndarray", "(2, 3, 4)", [2, 3, 4], "float32")
    assert (images.min, images.max) == (-1.0, 1.0)
    assert images.summary == "float32   min -1   max 1"
    assert find(variables, "labels").size == "(5,)"
    loss = find(variables, "loss")
    assert (loss.type, loss.shape, loss.dtype, loss.device, loss.value) == ("torch.Tensor", [], "float32", "cpu", "0.25")
    weights = find(variables, "weights")
    assert (weights.size, weights.dtype, weights.min, weights.max) == ("(3, 2)", "float64", 2.0, 2.0)


def test_a_huge_array_gets_its_range_from_a_sample():
    huge = np.zeros(namespace_probe.EXACT_STATS_LIMIT * 3, dtype=np.float32)
    huge[1] = 5.0  # not in an evenly spaced sample: the range is marked approximate
    variables, _ = summarise({"huge": huge})
    assert find(variables, "huge").approximate and "≈" in find(variables, "huge").summary


def test_nan_and_empty_arrays_and_strings_of_arrays_are_shown_without_failing():
    variables, _ = summarise({"nan": np.array([1.0, math.nan]), "empty": np.zeros((0, 3)),
                              "words": np.array(["a", "b"]), "flags": np.array([True, False])})
    assert find(variables, "nan").min == "nan"
    assert find(variables, "empty").min is None and find(variables, "empty").size == "(0, 3)"
    assert find(variables, "words").min is None and find(variables, "words").dtype == "<U1"
    assert (find(variables, "flags").min, find(variables, "flags").max) == (False, True)


def test_containers_show_their_length_and_first_items_to_expand():
    variables, _ = summarise({"config": {"lr": 0.1, "layers": [8, 16, np.ones(3)]},
                              "many": list(range(500)), "split": Split(train=[1, 2])})
    config = find(variables, "config")
    assert config.size == "2 items"
    layers = next(child for child in config.children if child.name == "'layers'")
    assert [child.name for child in layers.children] == ["0", "1", "2"]
    assert layers.children[2].size == "(3,)"
    many = find(variables, "many")
    assert len(many.children) == namespace_probe.MAX_CHILDREN and many.more == 500 - namespace_probe.MAX_CHILDREN
    split = find(variables, "split")
    assert [child.name for child in split.children] == ["train", "seed"]


def test_private_names_modules_functions_and_classes_are_left_out():
    import os

    variables, _ = summarise({"_hidden": 1, "os": os, "f": len, "g": lambda: 0, "Split": Split, "In": [],
                              "kept": 1})
    assert [v.name for v in variables] == ["kept"]


def test_a_broken_repr_hides_only_its_own_value():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

        def __len__(self):
            raise RuntimeError("no")

    class BrokenList(list):
        def __len__(self):
            raise RuntimeError("no")

    variables, _ = summarise({"bad": Broken(), "worse": BrokenList([1]), "good": 2})
    assert find(variables, "bad").value.startswith("<Broken instance")
    assert find(variables, "worse").value == "<cannot show: RuntimeError>"
    assert find(variables, "good").value == "2"


def test_the_summary_is_bounded():
    namespace = {f"v{i}": [list(range(100))] * 100 for i in range(100)}
    payload = namespace_probe.summary(namespace)
    data = json.loads(payload)
    count = 0
    stack = list(data["variables"])
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.get("children", []))
    assert count <= namespace_probe.MAX_NODES
    assert data["truncated"]


def test_objects_show_their_length_and_default_reprs_lose_their_address():
    import torch.utils.data

    dataset = torch.utils.data.TensorDataset(torch.zeros(7, 2))
    variables, _ = summarise({"dataset": dataset, "pair": Split(train=[dataset])})
    assert (find(variables, "dataset").size, find(variables, "dataset").value) == ("7 items", "<TensorDataset>")
    assert find(variables, "pair").value == "Split(train=[<TensorDataset>], seed=0)"


def test_objects_open_to_their_public_attributes_so_a_datasets_tensors_show_their_shapes():
    import torch.utils.data

    class Loader:
        def __init__(self, dataset):
            self.dataset = dataset
            self.batch_size = 32
            self._cache = {}  # private: left out
            self.collate = len  # code: left out

    dataset = torch.utils.data.TensorDataset(torch.zeros(12, 1, 8, 8), torch.zeros(12, dtype=torch.int64))
    variables, _ = summarise({"splits": Split(train=dataset), "loader": Loader(dataset), "number": 3})
    train = find(variables, "splits").children[0]
    assert (train.size, train.value) == ("12 items", "<TensorDataset>")
    [tensors] = train.children
    assert (tensors.name, [t.size for t in tensors.children]) == ("tensors", ["(12, 1, 8, 8)", "(12,)"])
    loader = find(variables, "loader")
    assert [child.name for child in loader.children] == ["dataset", "batch_size"]
    assert find(variables, "number").children is None


def test_big_arrays_in_a_containers_preview_are_their_shape_and_small_ones_their_values():
    variables, _ = summarise({"pair": (torch.zeros(12, 3), np.zeros((4, 5), dtype=np.float32)),
                              "small": [torch.tensor([1, 2]), np.arange(3)]})
    assert find(variables, "pair").value == "(tensor(shape=(12, 3), float32), array(shape=(4, 5), float32))"
    assert find(variables, "small").value == "[tensor([1, 2]), array([0, 1, 2])]"
