"""A broken [pipeline] declaration is one error naming the line and the key, before anything
runs; a sound one gives the steps in order with their parameters."""

from __future__ import annotations

import pytest

from workbench.pipeline import PipelineError, parse_declaration

GOOD = """\
[project]
name = "digits"

[[pipeline.steps]]
tool = "dataset"
fraction = 0.5

[[pipeline.steps]]
tool = "train"
from = "production"
epochs = 1
set = ["stop_at_step=0"]

[[pipeline.steps]]
tool = "convert"
opset = 17

[[pipeline.steps]]
tool = "quantize"
mode = "dynamic"

[[pipeline.steps]]
tool = "gate"
max_accuracy_drop = 1.5
max_size_mb = 2

[[pipeline.steps]]
tool = "deploy"
devices = ["phone"]
slot = "classifier"
"""


def _broken(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def test_a_sound_declaration_gives_the_steps_in_order_with_their_parameters():
    declaration = parse_declaration(GOOD)
    assert [step.tool for step in declaration.steps] == ["dataset", "train", "convert", "quantize", "gate", "deploy"]
    assert declaration.steps[1].params == {"from": "production", "epochs": 1, "set": ["stop_at_step=0"]}
    assert declaration.steps[4].params == {"max_accuracy_drop": 1.5, "max_size_mb": 2}


@pytest.mark.parametrize("old, new, line, words", [
    ('mode = "dynamic"', 'mod = "dynamic"', 20, ["key 'mod'", "step 4 (quantize)", "did you mean mode"]),
    ('mode = "dynamic"', 'mode = "int4"', 20, ["key 'mode'", "'int4' is not one of static, dynamic, fp16"]),
    ("opset = 17", "opset = 7", 16, ["key 'opset'", "minimum 13"]),
    ("fraction = 0.5", "fraction = 1.5", 6, ["key 'fraction'", "at most 1"]),
    ("epochs = 1", 'epochs = "one"', 11, ["key 'epochs'", "a whole number"]),
    ("max_size_mb = 2", "max_size_kb = 2", 25, ["key 'max_size_kb'", "did you mean max_size_mb"]),
    ('tool = "quantize"', 'tool = "quantise"', 19, ["key 'tool'", "did you mean quantize"]),
    ('set = ["stop_at_step=0"]', 'set = ["stop_at_step"]', 12, ["key 'set'", "key=value"]),
    ('devices = ["phone"]', 'devices = "phone"', 29, ["key 'devices'", "a list"]),
])
def test_a_broken_step_is_one_error_naming_its_line_and_key(old, new, line, words):
    with pytest.raises(PipelineError) as caught:
        parse_declaration(_broken(old, new))
    message = str(caught.value)
    assert message.startswith(f"workbench.toml line {line}:"), message
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_a_key_pipeline_does_not_hold_and_a_missing_pipeline_are_named():
    with pytest.raises(PipelineError, match=r"line 4: key 'step' is not part of \[pipeline\].*did you mean steps"):
        parse_declaration('[project]\nname = "x"\n[pipeline]\nstep = 1\n')
    with pytest.raises(PipelineError, match="declares no pipeline"):
        parse_declaration('[project]\nname = "x"\n')
    with pytest.raises(PipelineError, match=r"line 2: step 1 has no key 'tool'"):
        parse_declaration('[project]\n[[pipeline.steps]]\nfraction = 0.5\n')
    with pytest.raises(PipelineError, match=r"line 2: step 1 \(gate\) has no rule"):
        parse_declaration('[[pipeline.steps]]\ntool = "gate"\n')


def test_toml_that_does_not_parse_names_its_line():
    with pytest.raises(PipelineError, match=r"line 3.*fix the file's syntax"):
        parse_declaration('[[pipeline.steps]]\ntool = "dataset"\nfraction = \n')
