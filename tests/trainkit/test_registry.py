"""Datasets, models and preprocessing are found by name, and a wrong name says what to write."""

from __future__ import annotations

import pytest

from workbench_trainkit import TrainkitError, datasets, models, preprocessing
from workbench_trainkit.registry import Registry


def test_a_registered_factory_is_found_by_its_name_and_left_unchanged():
    registry = Registry("model", "model_name")

    @registry.register("tiny_net")
    def tiny_net(hp):
        return ("tiny", hp)

    assert registry.get("tiny_net") is tiny_net
    assert registry.get("tiny_net")({"x": 1}) == ("tiny", {"x": 1})
    assert "tiny_net" in registry and registry.names() == ["tiny_net"]


def test_an_unknown_name_names_the_key_lists_the_known_names_and_suggests_the_closest():
    registry = Registry("model", "model_name")
    for name in ("digits_net", "resnet18", "mobilenet_v2"):
        registry.register(name)(lambda hp: None)
    with pytest.raises(TrainkitError) as caught:
        registry.get("digit_net")
    message = str(caught.value)
    assert "model_name 'digit_net'" in message
    assert "digits_net, mobilenet_v2, resnet18" in message
    assert "Did you mean 'digits_net'?" in message
    assert '@models.register("digit_net")' in message


def test_an_empty_registry_says_to_import_the_module_that_registers():
    with pytest.raises(TrainkitError, match="no dataset is registered: import the module"):
        Registry("dataset", "dataset_name").get("digits")


def test_two_different_factories_under_one_name_are_refused():
    registry = Registry("dataset", "dataset_name")
    registry.register("digits")(lambda hp: 1)
    with pytest.raises(TrainkitError, match="two factories are registered as the dataset 'digits'"):
        registry.register("digits")(lambda hp: 2)


def test_registering_the_same_function_again_is_allowed():
    # What happens when a module is imported twice, as __main__ and by its name.
    registry = Registry("model", "model_name")

    def build(hp):
        return hp

    registry.register("same")(build)
    registry.register("same")(build)
    assert registry.get("same") is build


def test_the_three_shared_registries_name_their_hyperparameter():
    assert (datasets.hparam_key, models.hparam_key, preprocessing.hparam_key) == (
        "dataset_name", "model_name", "preprocessing_name")
    with pytest.raises(TrainkitError, match=r"@preprocessing\.register"):
        Registry("preprocessing", "preprocessing_name", "preprocessing").get("x")
