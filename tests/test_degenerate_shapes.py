"""Shapes at the edges: empty tensors are supported (and run no kernel), dimensions
beyond int64 are refused wherever IR is made."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block
from xdsl.utils.exceptions import ParseError, VerifyException

from autofusion.dialects import graph
from autofusion.fusion.cost import is_empty, op_cost
from autofusion.hardware import get_chip
from autofusion.mlir_io import default_context, parse_module


def _exp(shape: list[int]) -> graph.GraphOp:
    block = Block(arg_types=[TensorType(f32, shape)])
    return graph.ExpOp.make([block.args[0]], result_types=[TensorType(f32, shape)])


def test_verifier_refuses_a_dimension_beyond_int64() -> None:
    op = _exp([2**63, 3])
    with pytest.raises(VerifyException, match=r"dimension 0 \(9223372036854775808\) does not fit"):
        op.verify()
    _exp([2**63 - 1, 3]).verify()


def test_parser_refuses_a_dimension_beyond_int64_with_its_location() -> None:
    text = "func.func @f(%x: tensor<4x99999999999999999999xf32>) {\n  func.return\n}\n"
    with pytest.raises(ParseError, match="does not fit in int64") as info:
        parse_module(default_context(), text, "big.mlir")
    assert info.value.span.text == "99999999999999999999"
    assert info.value.span.get_location().col == 27


def test_an_op_on_an_empty_tensor_is_free() -> None:
    empty, full = _exp([0, 8]), _exp([2, 8])
    empty.verify()
    assert is_empty(empty) and not is_empty(full)
    chip = get_chip("Ascend910B1")
    cost = op_cost(empty, chip)
    assert (cost.gm_read_bytes, cost.gm_write_bytes, cost.launches) == (0, 0, 0)
    assert op_cost(full, chip).gm_read_bytes == 2 * 8 * 4
