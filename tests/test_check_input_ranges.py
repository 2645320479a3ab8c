"""`afc compile --check`'s integer inputs: ranges from how each input is used, or given.

An index input of a table smaller than [0, 8) (a small vocabulary, two token types, a
short position table) failed --check with "index out of range"; now it takes [0, d) of
the extent d it indexes, and `--input-range NAME=LO,HI` sets a range by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autofusion.diagnostics import UserError
from autofusion.driver.compile import CompileOptions, compile_model
from autofusion.driver.input_ranges import integer_input_ranges, parse_input_ranges
from autofusion.interpreter import DEFAULT_INTEGER_RANGE, find_function, random_inputs
from autofusion.mlir_io import default_context, parse_module

AFC = str(Path(sys.executable).parent / "afc")

USES = """
func.func @main(%ids: tensor<2x5xi64> {graph.name = "ids"}, %pos: tensor<2x5xi32> {graph.name = "pos"},
                %k: tensor<1x1x1x3xi64> {graph.name = "k"}, %hot: tensor<3x2xi64> {graph.name = "hot"},
                %free: tensor<4xi64> {graph.name = "free"}, %dyn: tensor<3xi64> {graph.name = "dyn"},
                %mask: tensor<2x5xi64> {graph.name = "mask"}, %count: tensor<2x5xi64> {graph.name = "count"},
                %t: tensor<10x4xf32> {graph.name = "t"}, %small: tensor<3x4xf32>, %d: tensor<?x4xf32>,
                %c: tensor<1x8x32x64xf16>, %n: tensor<1x1x1x64xf16>, %v: tensor<2xf32>)
    -> (tensor<2x5x4xf32>, tensor<10x4xf32>, tensor<1x8x32x64xf16>, tensor<3x5x2xf32>,
        tensor<4xi64>, tensor<3x4xf32>, tensor<5x2xi1>, tensor<2x5xi1>, tensor<2x5xf32>) {
  %e = graph.gather %t, %ids {axis = 0} : (tensor<10x4xf32>, tensor<2x5xi64>) -> tensor<2x5x4xf32>
  %flat = graph.reshape %ids {shape = [10]} : tensor<2x5xi64> -> tensor<10xi64>
  %wide = graph.cast %flat : tensor<10xi64> -> tensor<10xi32>
  %s = graph.gather %small, %wide {axis = 0} : (tensor<3x4xf32>, tensor<10xi32>) -> tensor<10x4xf32>
  %p = graph.gather %t, %pos {axis = 1} : (tensor<10x4xf32>, tensor<2x5xi32>) -> tensor<10x2x5xf32>
  %u = graph.scatter_nd %c, %k, %n {reduction = "none"} : (tensor<1x8x32x64xf16>, tensor<1x1x1x3xi64>, tensor<1x1x1x64xf16>) -> tensor<1x8x32x64xf16>
  %o = graph.one_hot %hot, %v {axis = 1, depth = 5} : (tensor<3x2xi64>, tensor<2xf32>) -> tensor<3x5x2xf32>
  %g = graph.gather %d, %dyn {axis = 0} : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %mt = graph.transpose %mask {perm = [1, 0]} : tensor<2x5xi64> -> tensor<5x2xi64>
  %mb = graph.cast %mt : tensor<5x2xi64> -> tensor<5x2xi1>
  %cb = graph.cast %count : tensor<2x5xi64> -> tensor<2x5xi1>
  %cf = graph.cast %count : tensor<2x5xi64> -> tensor<2x5xf32>
  func.return %e, %s, %u, %o, %free, %g, %mb, %cb, %cf : tensor<2x5x4xf32>, tensor<10x4xf32>, tensor<1x8x32x64xf16>, tensor<3x5x2xf32>, tensor<4xi64>, tensor<3x4xf32>, tensor<5x2xi1>, tensor<2x5xi1>, tensor<2x5xf32>
}
"""


def uses_function() -> object:
    return find_function(parse_module(default_context(), USES, "uses.mlir"))


def test_ranges_follow_the_indexed_extents() -> None:
    ranges = integer_input_ranges(uses_function(), {})  # type: ignore[arg-type]
    assert ranges == {
        # a 10-row table, and through a reshape and a cast a 3-row one: the smaller
        "ids": (0, 3),
        "pos": (0, 4),  # gathers along axis 1 of a [10, 4] table
        "k": (0, 1),  # scatter_nd: the smallest of the dims it addresses (1, 8, 32)
        "hot": (0, 5),  # one_hot's depth
        "free": DEFAULT_INTEGER_RANGE,  # indexes nothing
        "dyn": DEFAULT_INTEGER_RANGE,  # indexes a dynamic extent
        "mask": (0, 2),  # read only as a truth value (a transposed attention mask)
        "count": DEFAULT_INTEGER_RANGE,  # a truth value, but also a number
    }


def test_given_ranges_win_and_shape_the_random_inputs() -> None:
    f = uses_function()
    ranges = integer_input_ranges(f, {"ids": (1, 2), "free": (-5, -3)})  # type: ignore[arg-type]
    assert ranges["ids"] == (1, 2) and ranges["free"] == (-5, -3) and ranges["hot"] == (0, 5)
    feeds = random_inputs(f, seed=0, integer_ranges=ranges)  # type: ignore[arg-type]
    assert (feeds["ids"] == 1).all()
    assert feeds["free"].min() >= -5 and feeds["free"].max() < -3
    assert feeds["hot"].min() >= 0 and feeds["hot"].max() < 5
    assert feeds["pos"].dtype == np.int32


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"nope": (0, 1)}, "--input-range names no input 'nope' (inputs: ids, pos, k,"),
        ({"t": (0, 1)}, "--input-range t: the input is tensor<10x4xf32>; ranges apply to integer"),
    ],
)
def test_given_ranges_must_name_integer_inputs(given: dict, message: str) -> None:
    with pytest.raises(UserError) as e:
        integer_input_ranges(uses_function(), given)  # type: ignore[arg-type]
    assert e.value.message.startswith(message)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ids=1", "'ids=1' is not NAME=LO,HI"),
        ("=1,2", "'=1,2' is not NAME=LO,HI"),
        ("ids=a,2", "'ids=a,2': LO and HI must be integers"),
        ("ids=3,3", "'ids=3,3': the range [LO, HI) is empty"),
    ],
)
def test_parse_input_ranges_refuses_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(UserError) as e:
        parse_input_ranges([spec])
    assert e.value.message == f"--input-range {message}"
    assert parse_input_ranges(["ids=-2,7", "pos=0,1"]) == {"ids": (-2, 7), "pos": (0, 1)}
    with pytest.raises(UserError, match="gives 'ids' twice"):
        parse_input_ranges(["ids=0,1", "ids=0,2"])


def small_vocab_model(path: Path) -> Path:
    """token ids into a 3-row table, position ids (reshaped) into a 6-row one, plus x."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "tok"),
        numpy_helper.from_array(rng.standard_normal((6, 4)).astype(np.float32), "postab"),
        numpy_helper.from_array(np.array([2, 5], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Gather", ["tok", "ids"], ["e"], axis=0),
        helper.make_node("Reshape", ["pos", "shape"], ["pos2"]),
        helper.make_node("Gather", ["postab", "pos2"], ["p"], axis=0),
        helper.make_node("Add", ["e", "p"], ["s"]),
        helper.make_node("Add", ["s", "x"], ["out"]),
    ]
    inputs = [
        helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5]),
        helper.make_tensor_value_info("pos", TensorProto.INT64, [10]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4]),
    ]
    out = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 5, 4])]
    graph = helper.make_graph(nodes, "small_vocab", inputs, out, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def test_check_passes_on_a_vocab_smaller_than_eight(tmp_path: Path) -> None:
    model = small_vocab_model(tmp_path / "small_vocab.onnx")
    c = compile_model(str(model), CompileOptions(check=True))
    assert c.check is not None and c.check["ok"], c.check["verdict"]
    assert c.check["integer_ranges"] == {"ids": [0, 3], "pos": [0, 6]}
    checked = {r["what"] for r in c.check["comparisons"]}
    assert "ONNX Runtime: fused.onnx vs original .onnx" in checked


def test_cli_input_range(tmp_path: Path) -> None:
    model = small_vocab_model(tmp_path / "small_vocab.onnx")
    out = tmp_path / "out"
    done = subprocess.run(
        [AFC, "compile", str(model), "--check", "-q", "-o", str(out), "--input-range", "pos=4,6"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    check = json.loads((out / "check.json").read_text())
    assert check["integer_ranges"] == {"ids": [0, 3], "pos": [4, 6]} and check["ok"]
    for args, message in [
        (["--check", "--input-range", "nope=0,1"], "names no input 'nope' (inputs: ids, pos, x)"),
        (["--input-range", "pos=0,1"], "--input-range sets --check's inputs: give --check too"),
        (["--check", "--input-range", "pos=0"], "--input-range 'pos=0' is not NAME=LO,HI"),
    ]:
        bad = tmp_path / "bad"
        done = subprocess.run(
            [AFC, "compile", str(model), "-q", "-o", str(bad), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("afc: error")]
        assert len(errors) == 1 and errors[0].endswith(message), done.stderr
        assert "Traceback" not in done.stderr
        assert not bad.exists()
