"""Hyper-parameter files: typed values, errors that name file, line and key, project keys."""

from __future__ import annotations

import pytest

from workbench_trainkit.hparams import (
    FASTNN_SCHEMA,
    HParamsError,
    check_data_paths,
    check_hparams_text,
    find_project_dir,
    format_hparams,
    load_hparams,
    parse_override,
    project_schema,
)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_values_are_typed_by_the_schema():
    values, problems = check_hparams_text(
        "num_epochs=5\nlearning_rate=2e-3\nuse_fp16=yes\ntrain_files=a.rec, b.rec\n"
        "optimizer=adam\nmodel_dir='out dir'\n", FASTNN_SCHEMA)
    assert problems == []
    assert values == {"num_epochs": 5, "learning_rate": 0.002, "use_fp16": True,
                      "train_files": ["a.rec", "b.rec"], "optimizer": "adam",
                      "model_dir": "out dir"}


def test_comments_whole_line_and_after_whitespace_are_ignored():
    values, problems = check_hparams_text(
        "# a comment\n\n  batch_size=64   # per process\ndataset_dir=/data/set#1\n",
        FASTNN_SCHEMA)
    assert problems == []
    assert values == {"batch_size": 64, "dataset_dir": "/data/set#1"}


def test_unknown_key_names_line_and_suggests_the_closest_known_key():
    _, problems = check_hparams_text("num_epochs=3\nlearning_rat=0.1\n", FASTNN_SCHEMA, "a.hparams")
    [problem] = problems
    assert (problem.line, problem.key, problem.suggestion) == (2, "learning_rat", "learning_rate")
    assert (problem.start, problem.end) == (0, len("learning_rat"))
    assert str(problem) == "a.hparams:2: unknown hyper-parameter learning_rat: did you mean learning_rate?"


@pytest.mark.parametrize("line, words", [
    ("num_epochs=5.5", "whole number"),
    ("num_epochs=0", "at least 1"),
    ("learning_rate=fast", "a number"),
    ("use_bf16=maybe", "true or false"),
    ("learning_rate_decay_factor=1.5", "from 0 to 1"),
    ("optimizer=adm", "did you mean adam"),
    ("learning_rate=nan", "a number"),
])
def test_wrong_type_or_range_is_an_error_on_the_value(line, words):
    _, problems = check_hparams_text(line + "\n", FASTNN_SCHEMA, "f.hparams")
    [problem] = problems
    assert words in problem.message
    key = line.partition("=")[0]
    assert problem.key == key and problem.start == len(key) + 1 and problem.end == len(line)


def test_lines_without_equals_or_key_are_errors():
    _, problems = check_hparams_text("just words\n=5\n", FASTNN_SCHEMA)
    assert [p.line for p in problems] == [1, 2]
    assert "key=value" in problems[0].message


def test_a_key_set_twice_is_a_warning_and_the_later_value_wins():
    values, problems = check_hparams_text("batch_size=8\nbatch_size=16\n", FASTNN_SCHEMA)
    assert values == {"batch_size": 16}
    [problem] = problems
    assert problem.severity == "warning" and problem.line == 2 and "line 1" in problem.message


def test_load_applies_defaults_then_file_then_overrides(tmp_path):
    path = write(tmp_path / "h.hparams", "learning_rate=0.1\nnum_epochs=4\n")
    hp = load_hparams(path, overrides=["num_epochs=7"])
    assert hp.learning_rate == 0.1 and hp["num_epochs"] == 7
    assert hp.batch_size == FASTNN_SCHEMA["batch_size"].default
    assert hp.explicit == {"learning_rate", "num_epochs"}
    assert hp.source == str(path)


def test_load_reports_every_error_with_file_and_line(tmp_path):
    path = write(tmp_path / "h.hparams", "batch_size=big\nlerning_rate=1\n")
    with pytest.raises(HParamsError) as caught:
        load_hparams(path)
    assert [d.line for d in caught.value.diagnostics] == [1, 2]
    assert f"{path}:1: batch_size must be" in str(caught.value)
    assert "did you mean learning_rate?" in str(caught.value)


def test_a_bad_override_is_named_as_such(tmp_path):
    with pytest.raises(HParamsError, match=r"--set num_epochs=x: num_epochs must be"):
        load_hparams(None, overrides=["num_epochs=x"])
    with pytest.raises(HParamsError, match="write key=value"):
        load_hparams(None, overrides=["num_epochs"])
    assert parse_override(" lr = 3 ") == ("lr", "3")


def test_missing_and_binary_files_say_what_is_wrong(tmp_path):
    with pytest.raises(HParamsError, match="does not exist"):
        load_hparams(tmp_path / "nope.hparams")
    (tmp_path / "bin.hparams").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(HParamsError, match="not a UTF-8 text file"):
        load_hparams(tmp_path / "bin.hparams")


def test_project_keys_are_declared_in_workbench_toml(tmp_path):
    write(tmp_path / "workbench.toml", """
[training.keys]
seed = { type = "int", default = 0, min = 0, help = "fixes the split" }
backbone = { type = "str", default = "small", choices = ["small", "large"] }
dropout = { type = "float", default = 0, max = 1 }
""")
    hp_file = write(tmp_path / "hparams" / "a.hparams", "seed=3\nbackbone=large\n")
    assert find_project_dir(hp_file.parent) == tmp_path
    hp = load_hparams(hp_file)
    assert (hp.seed, hp.backbone, hp.dropout) == (3, "large", 0.0)
    schema = project_schema(tmp_path)
    _, problems = check_hparams_text("backbone=huge\nsed=1\n", schema)
    assert "one of small, large" in problems[0].message
    assert problems[1].suggestion == "seed"


@pytest.mark.parametrize("declaration, words", [
    ('seed = { type = "integer" }', "type must be one of"),
    ('seed = { type = "int", default = "x" }', "default 'x' is not a whole number"),
    ('seed = { type = "int", minimum = 0 }', "unknown field 'minimum'"),
    ("seed = 3", "write it as"),
])
def test_a_bad_project_declaration_is_reported(tmp_path, declaration, words):
    write(tmp_path / "workbench.toml", f"[training.keys]\n{declaration}\n")
    with pytest.raises(HParamsError, match=words):
        project_schema(tmp_path)


def test_formatted_values_read_back_the_same(tmp_path):
    values = {"learning_rate": 0.0025, "use_fp16": True, "train_files": ["a", "b"],
              "optimizer": "sgd", "num_epochs": 3}
    path = write(tmp_path / "h.hparams", format_hparams(values))
    hp = load_hparams(path, schema=FASTNN_SCHEMA)
    assert {key: hp[key] for key in values} == values
    assert "# learning rate\nlearning_rate=0.0025" in path.read_text()


def test_a_missing_dataset_folder_is_named_with_its_line(tmp_path):
    path = write(tmp_path / "h.hparams", "num_epochs=1\ndataset_dir=data/gone  # moved?\n")
    hp = load_hparams(path, schema=FASTNN_SCHEMA)
    [problem] = check_data_paths(hp, tmp_path, str(path))
    assert (problem.line, problem.key) == (2, "dataset_dir")
    assert str(problem).startswith(f"{path}:2: dataset_dir data/gone does not exist")
    (tmp_path / "data" / "set").mkdir(parents=True)
    (tmp_path / "data" / "set" / "a.rec").write_text("x")
    hp = load_hparams(None, ["dataset_dir=data/set", "train_files=a.rec,b.rec"], schema=FASTNN_SCHEMA)
    [problem] = check_data_paths(hp, tmp_path)
    assert problem.key == "train_files" and problem.message.endswith(": b.rec")
    assert str(problem).startswith("--set train_files=a.rec,b.rec: train_files lists")
    hp = load_hparams(path, ["dataset_dir=/gone"], schema=FASTNN_SCHEMA)
    assert str(check_data_paths(hp, tmp_path, str(path))[0]).startswith(
        "--set dataset_dir=/gone: dataset_dir /gone does not exist")
    assert check_data_paths(load_hparams(None, ["dataset_dir=data/set"], schema=FASTNN_SCHEMA),
                            tmp_path) == []
