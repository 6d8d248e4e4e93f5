"""Where in a hyper-parameter line keys and values are offered, and what hovering says: the
rules, without a window."""

from __future__ import annotations

from pathlib import Path

from workbench.editor.assist import TextPosition
from workbench.training.widgets.hparams_assist import HParamsAssist, describe_key
from workbench.training.widgets.hparams_check import HParamsChecker


def at(line: str, column: int | None = None, explicit: bool = False) -> TextPosition:
    return TextPosition(Path("a.hparams"), 1, len(line) if column is None else column, line, explicit)


def offered(assist, line, column=None, explicit=False):
    found = assist.complete(at(line, column, explicit))
    return None if found is None else (found.start, found.end, [item.shown for item in found.items])


def test_keys_are_offered_at_the_start_of_a_line_and_values_after_the_equals_sign(tmp_path):
    assist = HParamsAssist(HParamsChecker(tmp_path))  # no workbench.toml: FastNN's keys
    start, end, names = offered(assist, "lea")
    assert (start, end) == (0, 3) and names[0] == "dataset_name" and "learning_rate" in names
    assert offered(assist, "  opt", explicit=True)[:2] == (2, 5)
    assert offered(assist, "", explicit=True)[:2] == (0, 0)  # Ctrl+Space on an empty line
    assert offered(assist, "") is None and offered(assist, "lea ") is None  # not on their own
    assert offered(assist, "learning_rate=0.1", 3) is None  # typing inside a key: no list pops up
    assert offered(assist, "learning_rate=0.1", 3, explicit=True)[:2] == (0, 13)  # the whole key is replaced
    keys = assist.complete(at("lea")).items
    assert keys[0].text.endswith("=")
    assert not assist.complete(at("learning_rate=0.1", 3, True)).items[0].text.endswith("=")  # "=" is there

    assert offered(assist, "optimizer=") == (10, 10, ["adadelta", "adagrad", "adam", "adamw", "adamweightdecay",
                                                       "ftrl", "momentum", "sgd", "rmsprop"])
    assert offered(assist, "optimizer = ad")[:2] == (12, 14)
    assert offered(assist, "use_fp16=") == (9, 9, ["true", "false"])
    assert offered(assist, "num_epochs=") is None  # nothing to choose from while typing
    assert offered(assist, "num_epochs=", explicit=True) == (11, 11, ["100"])  # Ctrl+Space: the default
    assert offered(assist, "optimizer=adam  # fast") is None  # in the comment
    assert offered(assist, "# optimizer=") is None and offered(assist, "nonsense=", explicit=True) is None


def test_a_project_key_is_offered_first_and_a_broken_workbench_toml_still_offers_fastnns_keys(tmp_path):
    (tmp_path / "workbench.toml").write_text(
        '[training.keys]\nwidth = { type = "int", default = 64, min = 1, help = "hidden units" }\n')
    assist = HParamsAssist(HParamsChecker(tmp_path))
    [first, *_rest] = assist.complete(at("", explicit=True)).items
    assert (first.shown, first.detail) == ("width", "int = 64  ·  hidden units")
    assert assist.hover(at("width=3", 2)) == "width (int, default 64): hidden units; accepts a whole number of at least 1"
    (tmp_path / "workbench.toml").write_text("[training.keys\n")
    assert "learning_rate" in [item.shown for item in assist.complete(at("lea")).items]


def test_hovering_names_the_key_its_type_default_help_and_values(tmp_path):
    assist = HParamsAssist(HParamsChecker(tmp_path))
    assert assist.hover(at("  optimizer = adam", 4)) == (
        "optimizer (str, default rmsprop): the optimizer; accepts one of adadelta, adagrad, adam, adamw, "
        "adamweightdecay, ftrl, momentum, sgd, rmsprop")
    assert assist.hover(at("train_files=a,b", 0)).startswith("train_files (list of str, default empty)")
    assert assist.hover(at("dataset_dir=x", 0)).startswith('dataset_dir (str, default "")')
    assert assist.hover(at("optimizer=adam", 11)) is None  # on the value
    assert assist.hover(at("optimiser=adam", 2)) is None  # unknown: the diagnostic says so
    assert assist.hover(at("# optimizer=adam", 4)) is None
    from workbench_trainkit.schema import FASTNN_SCHEMA

    assert describe_key(FASTNN_SCHEMA["use_bf16"]) == "use_bf16 (bool, default false): autocast to bfloat16; accepts true or false"
