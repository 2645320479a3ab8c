"""ConstantFuseSamePass (passes/rules/constant_fuse_same.py): identical constants become
one, and the function computes what it did (interpreter before and after)."""

from __future__ import annotations

from differential import check_pass

# one rotary table read through two reshapes (a layer's q and k ropes): folded, the
# two reshapes are two equal constants, which the pass makes one
TWIN_TABLES = """
func.func @main(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x1x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) {
  %cos = graph.constant {name = "cos"} dense<[[1.0, 0.5, 0.25, 0.125], [2.0, 1.5, 1.25, 1.125]]> : tensor<2x4xf32>
  %c1 = graph.reshape %cos {shape = [1, 2, 1, 4]} : tensor<2x4xf32> -> tensor<1x2x1x4xf32>
  %c2 = graph.reshape %cos {shape = [1, 2, 1, 4]} : tensor<2x4xf32> -> tensor<1x2x1x4xf32>
  %a = graph.mul %q, %c1 : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x3x4xf32>
  %b = graph.mul %k, %c2 : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  func.return %a, %b : tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>
}
"""


def test_twin_tables_become_one_and_keep_the_numbers() -> None:
    ir = check_pass(
        TWIN_TABLES,
        "graph-fusion{only=TransposeReshapeConstFoldingPass,ConstantFuseSamePass}",
        rtol=0.0,
        atol=0.0,
    )
    assert ir.count("graph.constant") == 1, ir


def test_without_the_pass_the_twins_stay() -> None:
    ir = check_pass(TWIN_TABLES, "graph-fusion{only=TransposeReshapeConstFoldingPass}")
    assert ir.count("graph.constant") == 2, ir
