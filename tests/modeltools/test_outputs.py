"""Output files: a default output never replaces an existing file, an explicit one does, and the
messages suggest the option the tool really has."""

from __future__ import annotations

import pytest

from workbench.modeltools.errors import ModelToolError
from workbench.modeltools.outputs import (NEVER_OVERWRITES, atomic_output, check_output,
                                          default_output, free_path)
from workbench.modeltools.registry import BUILT_IN, get_tool


def test_a_default_output_takes_the_next_free_number(tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    assert default_output(source, "int8", ".onnx") == tmp_path / "model.int8.onnx"
    (tmp_path / "model.int8.onnx").write_bytes(b"first")
    assert default_output(source, "int8", ".onnx") == tmp_path / "model.int8-2.onnx"
    (tmp_path / "model.int8-2.onnx").write_bytes(b"second")
    assert default_output(source, "int8", ".onnx") == tmp_path / "model.int8-3.onnx"
    # No middle part: Convert's model.pt -> model.onnx, model-2.onnx.
    assert default_output(tmp_path / "model.pt", "", ".onnx") == tmp_path / "model-2.onnx"


def test_a_pair_of_outputs_is_numbered_together(tmp_path):
    (tmp_path / "model.sparse.pt2").write_bytes(b"program of an earlier run")
    chosen = free_path(tmp_path / "model.sparse.onnx", partners=(".pt2",))
    assert chosen == tmp_path / "model.sparse-2.onnx"
    (tmp_path / "model.sparse-2.onnx").write_bytes(b"model of an earlier run")
    assert free_path(tmp_path / "model.sparse.onnx", partners=(".pt2",)) == \
        tmp_path / "model.sparse-3.onnx"


def test_a_default_output_that_appeared_meanwhile_is_not_replaced(tmp_path):
    target = tmp_path / "model.int8.onnx"
    with pytest.raises(ModelToolError, match="model.int8.onnx was created by something else"):
        with atomic_output(target, overwrite=False) as temporary:
            temporary.write_bytes(b"new")
            target.write_bytes(b"someone else's")
    assert target.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.int8.onnx"]
    fresh = tmp_path / "model.int8-2.onnx"
    with atomic_output(fresh, overwrite=False) as temporary:
        temporary.write_bytes(b"new")
    assert fresh.read_bytes() == b"new"
    with atomic_output(target) as temporary:  # an explicit -o replaces
        temporary.write_bytes(b"replaced")
    assert target.read_bytes() == b"replaced"


def test_check_output_suggests_the_option_the_tool_has(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"model")
    with pytest.raises(ModelToolError, match="choose another output path with -o$"):
        check_output(model, [model])
    with pytest.raises(ModelToolError, match="choose another output path with --csv$"):
        check_output(model, [model], flag="--csv")
    with pytest.raises(ModelToolError, match="give a file name with --markdown$"):
        check_output(tmp_path, [], flag="--markdown")


WRITERS = ("convert", "quantize", "sparsify")


def test_the_tools_that_write_a_model_are_the_ones_with_an_output():
    names = [entry.partition(":")[0].rsplit(".", 1)[-1] for entry in BUILT_IN]
    assert tuple(n for n in names if any(p.name == "output" for p in get_tool(n).params)) == WRITERS


@pytest.mark.parametrize("name", WRITERS)
def test_every_built_in_tool_that_writes_a_model_says_its_default_never_overwrites(name):
    spec = get_tool(name)
    outputs = [p for p in spec.params if p.name == "output"]
    assert NEVER_OVERWRITES in " ".join(outputs[0].help.split())
