"""The rope-after-matmul analysis (lowering/rope_epilogue.py): the column range of a rope
in a (merged QKV) matmul's output, and the named refusals."""

from __future__ import annotations

import pytest
from xdsl.ir import Operation

from autofusion.dialects import graph
from autofusion.lowering.rope_epilogue import RopeColumns, rope_columns, rope_epilogue_refusal
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_rule import Refusal

QKV = """
func.func @main(%x: tensor<2x16x32xf16>, %w: tensor<32x64xf16>, %cos: {table}, %sin: {table}) -> (tensor<2x16x4x8xf16>, tensor<2x16x2x8xf16>) {{
  %y = graph.matmul %x, %w : (tensor<2x16x32xf16>, tensor<32x64xf16>) -> tensor<2x16x64xf16>
  {cut}
  %q4 = graph.reshape %q {{shape = [0, 0, 4, 8]}} : tensor<2x16x32xf16> -> tensor<2x16x4x8xf16>
  %k4 = graph.reshape %k {{shape = [0, 0, 2, 8]}} : tensor<2x16x16xf16> -> tensor<2x16x2x8xf16>
  %qr = graph.rope %q4, %cos, %sin {{interleaved = false}} : (tensor<2x16x4x8xf16>, {table}, {table}) -> tensor<2x16x4x8xf16>
  %kr = graph.rope %k4, %cos, %sin {{interleaved = false}} : (tensor<2x16x2x8xf16>, {table}, {table}) -> tensor<2x16x2x8xf16>
  func.return %qr, %kr : tensor<2x16x4x8xf16>, tensor<2x16x2x8xf16>
}}
"""
SPLIT = (
    "%q, %k, %v = graph.split %y {axis = 2, sizes = [32, 16, 16]} : tensor<2x16x64xf16> -> "
    "(tensor<2x16x32xf16>, tensor<2x16x16xf16>, tensor<2x16x16xf16>)"
)


def _slice(name: str, start: int, stop: int) -> str:
    return (
        f"%{name} = graph.slice %y {{starts = [{start}], ends = [{stop}], axes = [-1], "
        f"steps = [1]}} : tensor<2x16x64xf16> -> tensor<2x16x{stop - start}xf16>"
    )


def _ops(cut: str, table: str = "tensor<1x16x1x8xf16>") -> tuple[Operation, list[Operation]]:
    module = parse_module(default_context(), QKV.format(cut=cut, table=table), "qkv.mlir")
    ops = [op for op in module.walk() if isinstance(op, graph.GraphOp)]
    root = next(op for op in ops if isinstance(op, graph.MatmulOp))
    return root, [op for op in ops if isinstance(op, graph.RopeOp)]


@pytest.mark.parametrize(
    "cut, ranges",
    [
        (SPLIT, [(0, 4), (32, 2)]),
        (_slice("q", 0, 32) + "\n  " + _slice("k", 32, 48), [(0, 4), (32, 2)]),
        (_slice("q", 16, 48) + "\n  " + _slice("k", 48, 64), [(16, 4), (48, 2)]),
    ],
)
@pytest.mark.parametrize("table", ["tensor<1x16x1x8xf16>", "tensor<16x1x8xf16>"])
def test_merged_qkv_columns(cut: str, ranges: list[tuple[int, int]], table: str) -> None:
    root, ropes = _ops(cut, table)
    found = [rope_columns(root, r) for r in ropes]
    assert all(isinstance(f, RopeColumns) for f in found)
    assert [(f.start, f.heads) for f in found if isinstance(f, RopeColumns)] == ranges
    assert all(f.head_dim == 8 for f in found if isinstance(f, RopeColumns))
    why = rope_epilogue_refusal(root, ropes)
    cols = ", ".join(f"[{s}, {s + h * 8})" for s, h in ranges)
    assert f"its columns {cols} are whole heads of dim 8" in why.reason


@pytest.mark.parametrize(
    "cut, table, reason",
    [
        (
            _slice("q", 4, 36) + "\n  " + _slice("k", 36, 52),
            "tensor<1x16x1x8xf16>",
            "the rope's columns [4, 36) are not whole heads of dim 8",
        ),
        (
            SPLIT.replace("axis = 2", "axis = -1"),
            "tensor<2x16x1x8xf16>",
            "the rope's cos table of shape 2x16x1x8 is not indexed by the output row",
        ),
    ],
)
def test_refusals_name_the_rope(cut: str, table: str, reason: str) -> None:
    root, ropes = _ops(cut, table)
    found = rope_columns(root, ropes[0])
    assert isinstance(found, Refusal)
    assert found.reason.startswith(reason)
    assert rope_epilogue_refusal(root, ropes).reason.startswith(
        f"graph.rope after a cube op: {reason}"
    )
