"""`afc compile --check` gives each named dynamic dim its own size (B = 4, S = 5, ...), so
a kernel that swaps two dynamic dims fails the check; where the model ties its dims it
falls back to one size and says so. The names come from the frontends (`graph.dims`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.interpreter import argument_dims, find_function, random_inputs, symbol_sizes
from autofusion.mlir_io import default_context
from frontends.text import parse_text_model

TWO_DIMS = """
input x: f32[B, S, 16]
input p: f32[S, 16]
y = add(x, p)
z = relu(y)
output z
"""

# a and b must have one batch size (they are added): the dims are tied
TIED = """
input a: f32[B, 8]
input b: f32[N, 8]
y = add(a, b)
output y
"""


def test_text_inputs_name_their_dims() -> None:
    module = parse_text_model(default_context(), TWO_DIMS, "m.afc")
    f = find_function(module)
    assert argument_dims(f) == [("B", "S", ""), ("S", "")]
    assert symbol_sizes(f, 4) == {"B": 4, "S": 5}
    inputs = random_inputs(f, 0, 4, None, symbol_sizes(f, 4))
    assert inputs["x"].shape == (4, 5, 16) and inputs["p"].shape == (5, 16)


def test_check_runs_the_dims_apart(tmp_path: Path) -> None:
    model = tmp_path / "m.afc"
    model.write_text(TWO_DIMS)
    c = compile_model(str(model), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check
    assert c.check["inputs"] == {"x": [4, 5, 16], "p": [5, 16]}
    assert c.check["notes"] == []


def test_tied_dims_fall_back_to_one_size(tmp_path: Path) -> None:
    model = tmp_path / "tied.afc"
    model.write_text(TIED)
    c = compile_model(str(model), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check
    assert c.check["inputs"] == {"a": [4, 8], "b": [4, 8]}
    assert any("do not run apart" in n for n in c.check["notes"]), c.check["notes"]


def test_onnx_dim_params_name_the_dims(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    c = compile_model(str(path), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check
    assert c.check["inputs"] == {"x": [4, 5, 8]}
