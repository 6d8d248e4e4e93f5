"""Entry points of a folder and the hyper-parameters of its script, read from real scripts."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.adopt.scripts import (DYNAMIC_FLAGS, HANGING_HELP, MISSING_MODULE, MODULE_LEVEL_PARSER, PLAIN_ARGPARSE,
                                 hydra_project, write)
from workbench.adopt import (AdoptError, clear_choice, find_entry_points, read_parameters, script_parameters)
from workbench.adopt.argparse_static import read_argparse


def by_name(parameters):
    return {p.name: p for p in parameters}


def test_argparse_flags_are_read_from_the_code_with_types_defaults_help_and_helpers(tmp_path):
    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    reading = read_parameters(tmp_path, {"script": "train.py", "parameters": "argparse"})
    assert reading.source == "code" and not reading.problem
    found = by_name(reading.parameters)
    assert [p.name for p in reading.parameters] == ["lr", "epochs", "data", "amp", "shuffle", "optimizer",
                                                     "milestones", "hidden"]
    assert (found["lr"].type, found["lr"].default, found["lr"].help, found["lr"].flag) == \
        ("float", 0.001, "learning rate", "--lr")
    assert found["data"].required and not found["lr"].required
    assert (found["amp"].type, found["amp"].default, found["amp"].action) == ("bool", False, "store_true")
    assert (found["shuffle"].flag, found["shuffle"].default) == ("--no-shuffle", True)
    assert found["optimizer"].choices == ("adam", "sgd")
    assert (found["milestones"].type, found["milestones"].default) == ("list", [30, 60])
    assert (found["hidden"].type, found["hidden"].default) == ("int", 128)


def test_a_module_level_parser_with_short_flags_and_a_positional_argument(tmp_path):
    found = by_name(read_argparse(write(tmp_path, "main.py", MODULE_LEVEL_PARSER)))
    assert (found["batch_size"].flag, found["batch_size"].default, found["batch_size"].type) == \
        ("--batch-size", 64, "int")
    assert found["data_dir"].positional and found["data_dir"].required


def test_flags_made_in_a_loop_are_read_from_the_scripts_help(tmp_path):
    write(tmp_path, "train.py", DYNAMIC_FLAGS)
    assert read_argparse(tmp_path / "train.py") is None
    reading = read_parameters(tmp_path, {"script": "train.py", "parameters": "argparse", "python": sys.executable})
    assert reading.source == "--help" and not reading.problem
    found = by_name(reading.parameters)
    assert (found["lr"].default, found["lr"].type, found["lr"].help) == (0.01, "float", "the lr")
    assert (found["epochs"].default, found["epochs"].type) == (5, "int")
    assert found["out"].required and not found["lr"].required
    assert (found["verbose"].type, found["verbose"].default) == ("bool", False)
    assert "help" not in found


def test_a_help_that_hangs_is_given_up_after_the_time_out_with_one_message(tmp_path):
    write(tmp_path, "train.py", HANGING_HELP)
    started = time.monotonic()
    reading = read_parameters(tmp_path, {"script": "train.py", "parameters": "argparse"}, help_timeout_s=0.5)
    assert time.monotonic() - started < 20  # the script sleeps for 60 s: it was ended, not waited for
    assert reading.parameters == []
    assert reading.problem == ("train.py --help did not answer within 0.5 s; its flags are not known: give them "
                               "with --set NAME=VALUE.")


def test_a_help_that_cannot_import_says_which_module_is_missing(tmp_path):
    write(tmp_path, "train.py", MISSING_MODULE)
    with pytest.raises(AdoptError, match=r"train.py --help failed \(ModuleNotFoundError: No module named "
                                         r"'a_module_nobody_installed'\); its flags are not known"):
        script_parameters(tmp_path, {"script": "train.py", "parameters": "argparse"})


def test_a_hydra_config_gives_dotted_keys_with_its_defaults_list_one_level_deep(tmp_path):
    hydra_project(tmp_path)
    [entry] = find_entry_points(tmp_path)
    assert (entry.script, entry.parameters, entry.config) == ("my_app.py", "hydra", "conf/config.yaml")
    found = by_name(script_parameters(tmp_path, {"script": "my_app.py", "parameters": "hydra",
                                                 "config": entry.config}))
    assert (found["optimizer.lr"].type, found["optimizer.lr"].default) == ("float", 0.001)
    assert found["optimizer.betas"].type == "list"
    assert (found["trainer.epochs"].type, found["trainer.epochs"].default) == ("int", 3)
    assert found["data.path"].required
    assert found["seed"].default == 7


def test_the_hydra_app_really_takes_the_dotted_keys_as_overrides(tmp_path):
    hydra_project(tmp_path)
    result = subprocess.run([sys.executable, "my_app.py", "optimizer.lr=0.5", "data.path=x",
                             "hydra.run.dir=.", "hydra.output_subdir=null"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "lr=0.5 epochs=3" in result.stdout


def test_a_template_project_keeps_its_hparams_file(tmp_path):
    from workbench.project import create_from_template

    project = create_from_template("digits", tmp_path / "digits", None)
    settings = project.settings["training"]
    assert "parameters" not in settings
    found = by_name(script_parameters(project.root, settings))
    assert "seed" in found and found["seed"].type == "int"


def test_an_unknown_parameters_style_is_refused_with_the_choices(tmp_path):
    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    with pytest.raises(AdoptError, match="must be one of argparse, hydra, hparams"):
        script_parameters(tmp_path, {"script": "train.py", "parameters": "click"})


def test_train_py_at_the_root_outranks_other_candidates_and_skipped_folders_are_not_read(tmp_path):
    write(tmp_path, "train.py", PLAIN_ARGPARSE)
    write(tmp_path, "scripts/train_big.py", PLAIN_ARGPARSE)
    write(tmp_path, "tools/export.py", MODULE_LEVEL_PARSER)
    for skipped in (".venv/lib/train.py", "node_modules/x/train.py", "tests/train_test.py",
                    ".git/hooks/train.py", "lib/site-packages/train.py"):
        write(tmp_path, skipped, PLAIN_ARGPARSE)
    found = find_entry_points(tmp_path)
    assert [e.script for e in found] == ["train.py", "scripts/train_big.py", "tools/export.py"]
    assert clear_choice(found).script == "train.py"


def test_a_project_scripts_entry_is_an_entry_point(tmp_path):
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n[project.scripts]\nfit = "pkg.fit:main"\n')
    write(tmp_path, "src/pkg/fit.py", "def main():\n    pass\n")
    [entry] = find_entry_points(tmp_path)
    assert entry.script == "src/pkg/fit.py" and "[project.scripts] fit" in entry.reasons


def test_fifty_equally_likely_scripts_give_no_choice(tmp_path):
    for number in range(50):
        write(tmp_path, f"train_{number:02}.py", PLAIN_ARGPARSE)
    found = find_entry_points(tmp_path)
    assert len(found) == 50 and clear_choice(found) is None
