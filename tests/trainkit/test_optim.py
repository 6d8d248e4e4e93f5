"""The learning-rate schedules and optimizers are the ones the hyper-parameters name."""

from __future__ import annotations

import math

import pytest
import torch

from workbench_trainkit import (TrainkitError, build_lr_schedule, build_optimizer,
                                clip_gradients, learning_rate_at, total_steps)

from .conftest import make_hparams


def rates(hp, steps, total):
    return [learning_rate_at(step, hp, total) for step in steps]


def test_fixed_rate_is_the_learning_rate_at_every_step():
    hp = make_hparams(learning_rate=0.1, learning_rate_decay_type="fixed")
    assert rates(hp, [0, 1, 50, 99, 500], 100) == [0.1] * 5


def test_t2t_warmup_starts_at_one_percent_and_grows_exponentially_to_the_rate():
    hp = make_hparams(learning_rate=1.0, learning_rate_decay_type="fixed", warmup_steps=10)
    assert learning_rate_at(0, hp, 100) == pytest.approx(0.01)
    assert learning_rate_at(5, hp, 100) == pytest.approx(0.1)
    assert learning_rate_at(9, hp, 100) == pytest.approx(0.01 ** 0.1)
    assert learning_rate_at(10, hp, 100) == 1.0
    # The formula as FastNN writes it, at every warm-up step.
    for step in range(10):
        assert learning_rate_at(step, hp, 100) == pytest.approx(
            math.exp(math.log(0.01) / 10) ** (10 - step))


def test_luong234_decays_four_times_from_two_thirds_of_the_steps():
    hp = make_hparams(learning_rate=1.0, learning_rate_decay_type="exponential",
                      learning_rate_decay_factor=0.5, decay_scheme="luong234")
    # 300 steps: decay starts at 200, then every (300 - 200) // 4 = 25 steps.
    assert rates(hp, [0, 199, 200, 224, 225, 250, 275, 299, 1000], 300) == [
        1.0, 1.0, 0.5, 0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0625]


def test_luong5_decays_five_times_from_half_way():
    hp = make_hparams(learning_rate=0.2, learning_rate_decay_type="exponential",
                      learning_rate_decay_factor=0.1, decay_scheme="luong5")
    # 100 steps: from 50, every 10.
    assert rates(hp, [49, 50, 59, 60, 90, 99], 100) == pytest.approx(
        [0.2, 0.02, 0.02, 0.002, 0.2 * 0.1 ** 5, 0.2 * 0.1 ** 5])


def test_luong10_decays_ten_times_from_half_way():
    hp = make_hparams(learning_rate=1.0, learning_rate_decay_type="exponential",
                      learning_rate_decay_factor=0.9, decay_scheme="luong10")
    # 100 steps: from 50, every 5.
    assert rates(hp, [49, 50, 54, 55, 95, 99], 100) == pytest.approx(
        [1.0, 0.9, 0.9, 0.81, 0.9 ** 10, 0.9 ** 10])


def test_polynomial_goes_in_a_straight_line_to_the_end_rate():
    hp = make_hparams(learning_rate=1.0, end_learning_rate=0.1,
                      learning_rate_decay_type="polynomial")
    assert rates(hp, [0, 25, 50, 100, 150], 100) == pytest.approx([1.0, 0.775, 0.55, 0.1, 0.1])


def test_warmup_multiplies_the_decay_it_precedes():
    hp = make_hparams(learning_rate=1.0, end_learning_rate=0.0, warmup_steps=10,
                      learning_rate_decay_type="polynomial")
    assert learning_rate_at(5, hp, 100) == pytest.approx(0.1 * 0.95)


def test_the_torch_schedule_sets_the_optimizer_to_the_same_rates():
    hp = make_hparams(optimizer="sgd", learning_rate=0.5, warmup_steps=4,
                      learning_rate_decay_type="exponential", learning_rate_decay_factor=0.5,
                      decay_scheme="luong5")
    weight = torch.nn.Parameter(torch.zeros(2))
    optimizer = build_optimizer([weight], hp)
    schedule = build_lr_schedule(optimizer, hp, total_steps=20)
    seen = []
    for _ in range(20):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert seen == pytest.approx([learning_rate_at(step, hp, 20) for step in range(20)])


def test_total_steps_honours_num_epochs_and_stop_at_step():
    assert total_steps(make_hparams(num_epochs=5, stop_at_step=0), 40) == 200
    assert total_steps(make_hparams(num_epochs=5, stop_at_step=-1), 40) == 200
    assert total_steps(make_hparams(num_epochs=5, stop_at_step=70), 40) == 70
    assert total_steps(make_hparams(num_epochs=5, stop_at_step=1000), 40) == 200
    with pytest.raises(TrainkitError, match="no batch"):
        total_steps(make_hparams(), 0)


@pytest.mark.parametrize("name, keys, kind, expected", [
    ("adadelta", {"adadelta_rho": 0.8, "opt_epsilon": 1e-6}, torch.optim.Adadelta,
     {"rho": 0.8, "eps": 1e-6}),
    ("adagrad", {"adagrad_initial_accumulator_value": 0.3}, torch.optim.Adagrad,
     {"initial_accumulator_value": 0.3}),
    ("adam", {"adam_beta1": 0.8, "adam_beta2": 0.99, "opt_epsilon": 1e-7}, torch.optim.Adam,
     {"betas": (0.8, 0.99), "eps": 1e-7}),
    ("adamw", {"adam_beta1": 0.7, "weight_decay": 0.01}, torch.optim.AdamW,
     {"betas": (0.7, 0.999), "weight_decay": 0.01}),
    ("momentum", {"momentum": 0.8}, torch.optim.SGD, {"momentum": 0.8}),
    ("sgd", {"momentum": 0.8}, torch.optim.SGD, {"momentum": 0}),
    ("rmsprop", {"rmsprop_decay": 0.7, "rmsprop_momentum": 0.6, "opt_epsilon": 0.5},
     torch.optim.RMSprop, {"alpha": 0.7, "momentum": 0.6, "eps": 0.5}),
])
def test_each_optimizer_is_built_with_its_own_keys(name, keys, kind, expected):
    hp = make_hparams(**{"optimizer": name, "learning_rate": 0.03, "weight_decay": 0.001, **keys})
    optimizer = build_optimizer([torch.nn.Parameter(torch.zeros(3))], hp)
    assert type(optimizer) is kind
    group = optimizer.param_groups[0]
    assert group["lr"] == 0.03
    assert group["weight_decay"] == keys.get("weight_decay", 0.001)
    for option, value in expected.items():
        assert group[option] == pytest.approx(value), option


def test_an_unknown_optimizer_is_a_clear_error():
    with pytest.raises(TrainkitError, match="optimizer is 'adamm'; use one of adadelta"):
        build_optimizer([torch.nn.Parameter(torch.zeros(1))], make_hparams(optimizer="adamm"))


def test_gradients_are_clipped_to_max_gradient_norm_and_left_alone_at_zero():
    weight = torch.nn.Parameter(torch.zeros(2))
    weight.grad = torch.tensor([3.0, 4.0])
    assert clip_gradients([weight], make_hparams(max_gradient_norm=0.0)) is None
    assert weight.grad.tolist() == [3.0, 4.0]
    assert clip_gradients([weight], make_hparams(max_gradient_norm=1.0)) == pytest.approx(5.0)
    assert weight.grad.norm().item() == pytest.approx(1.0, rel=1e-4)
