"""lower-to-buffer: interpreting the buffer IR gives the graph IR's numbers.

Each case is one fusion group, lowered for a chip and run at several shapes, including
ones that leave tail tiles and tail cores; f16 and bf16 cases are compared with the
tolerance of one rounding of their type.
"""

from __future__ import annotations

import numpy as np
import pytest

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects.buffer_verifier import footprint
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

from differential import apply_pipeline

TOLERANCE = {"f32": (2e-5, 2e-6), "f16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2)}


def group(body: str, args: list[tuple[str, str]], results: list[tuple[str, str]]) -> str:
    """A function holding one fusion group over its arguments."""
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    bind = ", ".join(f"%{n}_ = %{n} : {t}" for n, t in args)
    rtypes = ", ".join(t for _, t in results)
    yields = ", ".join(f"%{n}" for n, _ in results)
    return f"""
func.func @main({sig}) -> ({rtypes}) {{
  %grp:{len(results)} = graph.fusion_group ({bind}) -> ({rtypes}) {{
{body}
    graph.yield {yields} : {rtypes}
  }}
  func.return {", ".join(f"%grp#{i}" for i in range(len(results)))} : {rtypes}
}}"""


def cases() -> dict[str, tuple[str, list[tuple[str, str]], list[tuple[str, str]]]]:
    t = "tensor<?x{c}x{e}>"
    return {
        "bias_gelu_erf": (
            '    %a = graph.add %x_, %b_ : (T, V) -> T\n    %y = graph.gelu %a {approximate = "none"} : T',
            [("x", t), ("b", "tensor<{c}x{e}>")],
            [("y", t)],
        ),
        "gelu_tanh_sigmoid_silu": (
            '    %a = graph.gelu %x_ {approximate = "tanh"} : T\n    %s = graph.sigmoid %a : T\n'
            "    %y = graph.silu %s : T\n    %z = graph.tanh %y : T",
            [("x", t)],
            [("z", t)],
        ),
        "swiglu_clip_pow": (
            "    %two = graph.constant dense<2.0> : tensor<1x{e}>\n"
            "    %g = graph.swiglu %x_, %u_ : T\n    %c = graph.clip %g {min = -1.0, max = 1.5} : T\n"
            "    %p = graph.pow %c, %two : (T, tensor<1x{e}>) -> T\n    %y = graph.sqrt %p : T",
            [("x", t), ("u", t)],
            [("y", t)],
        ),
        "layer_norm_decomposed": (
            "    %m = graph.reduce_mean %x_ {axes = [-1], keepdims = true} : (T) -> C\n"
            "    %d = graph.sub %x_, %m : (T, C) -> T\n    %sq = graph.mul %d, %d : T\n"
            "    %v = graph.reduce_mean %sq {axes = [-1], keepdims = true} : (T) -> C\n"
            "    %eps = graph.constant dense<1.0e-05> : tensor<{e}>\n"
            "    %ve = graph.add %v, %eps : (C, tensor<{e}>) -> C\n    %s = graph.sqrt %ve : C\n"
            "    %n = graph.div %d, %s : (T, C) -> T\n    %gn = graph.mul %n, %g_ : (T, V) -> T\n"
            "    %y = graph.add %gn, %b_ : (T, V) -> T",
            [("x", t), ("g", "tensor<{c}x{e}>"), ("b", "tensor<{c}x{e}>")],
            [("y", t)],
        ),
        "softmax_scale_stats_out": (
            "    %k = graph.constant dense<0.125> : tensor<{e}>\n"
            "    %s = graph.mul %x_, %k : (T, tensor<{e}>) -> T\n    %y = graph.softmax %s {axis = -1} : T\n"
            "    %mx = graph.reduce_max %x_ {axes = [-1], keepdims = false} : (T) -> tensor<?x{e}>",
            [("x", t)],
            [("y", t), ("mx", "tensor<?x{e}>")],
        ),
        "add_rms_norm_two_outputs": (
            "    %y, %s = graph.add_rms_norm %x_, %r_, %g_ {axis = -1, epsilon = 1.0e-06} : (T, T, V) -> (T, T)",
            [("x", t), ("r", t), ("g", "tensor<{c}x{e}>")],
            [("y", t), ("s", t)],
        ),
        "split_layer_norm": (
            "    %m, %rs = graph.layer_norm_stats %x_ {axis = -1, epsilon = 1.0e-05} : (T) -> (C, C)\n"
            "    %y = graph.layer_norm_apply %x_, %m, %rs, %g_ {axis = -1} : (T, C, C, V) -> T",
            [("x", t), ("g", "tensor<{c}x{e}>")],
            [("y", t), ("rs", "tensor<?x1x{e}>")],
        ),
        "column_operands": (
            "    %d = graph.div %x_, %c_ : (T, C) -> T\n    %e = graph.sub %c_, %d : (C, T) -> T\n"
            "    %y = graph.max %e, %x_ : T",
            [("x", t), ("c", "tensor<?x1x{e}>")],
            [("y", t)],
        ),
    }


def instantiate(text: str, cols: int, elt: str) -> str:
    t = f"tensor<?x{cols}x{elt}>"
    return (
        text.replace("(T, V)", f"({t}, tensor<{cols}x{elt}>)")
        .replace(
            "(T, C, C, V)", f"({t}, tensor<?x1x{elt}>, tensor<?x1x{elt}>, tensor<{cols}x{elt}>)"
        )
        .replace("(T, T, V)", f"({t}, {t}, tensor<{cols}x{elt}>)")
        .replace("(T, C)", f"({t}, tensor<?x1x{elt}>)")
        .replace("(C, T)", f"(tensor<?x1x{elt}>, {t})")
        .replace("(C, C)", f"(tensor<?x1x{elt}>, tensor<?x1x{elt}>)")
        .replace("(T, T)", f"({t}, {t})")
        .replace("(T)", f"({t})")
        .replace("(C, tensor", f"(tensor<?x1x{elt}>, tensor")
        .replace("-> C", f"-> tensor<?x1x{elt}>")
        .replace(": C", f": tensor<?x1x{elt}>")
        .replace("(T, tensor", f"({t}, tensor")
        .replace("-> T", f"-> {t}")
        .replace(": T", f": {t}")
        .replace("{c}", str(cols))
        .replace("{e}", elt)
    )


def run_both(text: str, rows: int, chip: str, seed: int = 0) -> tuple[dict, dict, str]:
    ctx = default_context()
    before = parse_module(ctx, text, "group.mlir")
    after = apply_pipeline(parse_module(ctx, text, "group.mlir"), f"lower-to-buffer{{chip={chip}}}")
    from xdsl.dialects import func

    main = next(op for op in before.ops if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    feeds = {}
    for i, t in enumerate(main.function_type.inputs.data):
        shape = tuple(rows if d < 0 else d for d in t.get_shape())
        value = rng.standard_normal(shape) + (3.0 if i > 0 and "c" in str(t) else 0)
        feeds[f"arg{i}"] = dtypes.to_storage(value, t.element_type)
    return run_function(before, feeds), run_function(after, feeds), str(after)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(cases()))
def test_vector_kernels_match_the_graph(name: str, elt: str) -> None:
    body, args, results = cases()[name]
    text = instantiate(group(body, args, results), 40, elt)
    rtol, atol = TOLERANCE[elt]
    for rows in (1, 3, 67):
        want, got, after = run_both(text, rows, "Ascend910B1", seed=rows)
        assert "graph.fusion_group" not in after and "buffer.launch" in after
        for key in want:
            w, g = want[key].astype(np.float64), got[key].astype(np.float64)
            assert not np.isnan(g).any(), f"{key}: NaN (an unwritten or padded element leaked)"
            np.testing.assert_allclose(
                g, w, rtol=rtol, atol=atol, err_msg=f"{name} {key} rows={rows}"
            )


@pytest.mark.parametrize("cols", [1, 7, 64, 1000, 70000])
def test_column_tiling_and_unaligned_rows(cols: int) -> None:
    """Pure elementwise groups split long rows into column blocks (70000 > one tile)."""
    body, args, results = cases()["gelu_tanh_sigmoid_silu"]
    text = instantiate(group(body, args, results), cols, "f16")
    want, got, _ = run_both(text, 2, "Ascend910B1")
    np.testing.assert_allclose(
        got["out0"].astype(float), want["out0"].astype(float), rtol=4e-3, atol=4e-3
    )


def test_per_channel_nchw_operand_is_resident_and_mapped() -> None:
    text = """
func.func @main(%x: tensor<2x3x5x6xf32>, %s: tensor<3x1x1xf32>, %b: tensor<1x3x1x1xf32>) -> tensor<2x3x5x6xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<2x3x5x6xf32>, %ss = %s : tensor<3x1x1xf32>, %bb = %b : tensor<1x3x1x1xf32>) -> tensor<2x3x5x6xf32> {
    %m = graph.mul %xx, %ss : (tensor<2x3x5x6xf32>, tensor<3x1x1xf32>) -> tensor<2x3x5x6xf32>
    %a = graph.add %m, %bb : (tensor<2x3x5x6xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x5x6xf32>
    %y = graph.relu %a : tensor<2x3x5x6xf32>
    graph.yield %y : tensor<2x3x5x6xf32>
  }
  func.return %r : tensor<2x3x5x6xf32>
}"""
    want, got, after = run_both(text, 0, "Ascend910B1")
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-6, atol=1e-6)
    assert "outer1: index" in after  # the row map needs the outer dims


def test_rope_rows() -> None:
    text = """
func.func @main(%x: tensor<1x2x3x16xf32>, %c: tensor<3x16xf32>, %s: tensor<3x16xf32>) -> tensor<1x2x3x16xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<1x2x3x16xf32>, %cc = %c : tensor<3x16xf32>, %sn = %s : tensor<3x16xf32>) -> tensor<1x2x3x16xf32> {
    %y = graph.rope %xx, %cc, %sn {interleaved = false} : (tensor<1x2x3x16xf32>, tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<1x2x3x16xf32>
    graph.yield %y : tensor<1x2x3x16xf32>
  }
  func.return %r : tensor<1x2x3x16xf32>
}"""
    want, got, _ = run_both(text, 0, "Ascend910B1")
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("chip", ["Ascend910", "Ascend910B4", "Ascend310P3"])
def test_kernels_fit_each_chip(chip: str) -> None:
    body, args, results = cases()["layer_norm_decomposed"]
    text = instantiate(group(body, args, results), 512, "f16")
    want, got, after = run_both(text, 9, chip)
    np.testing.assert_allclose(
        got["out0"].astype(float), want["out0"].astype(float), rtol=4e-3, atol=4e-3
    )
    module = parse_module(default_context(), after, "after.mlir")
    from autofusion.dialects.buffer import KernelOp

    kernel = next(op for op in module.ops if isinstance(op, KernelOp))
    assert footprint(kernel)["ub"] <= get_chip(chip).ub_bytes


def test_unlowerable_group_is_a_clear_error() -> None:
    text = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<4x8xf32>) -> tensor<8x4xf32> {
    %t = graph.transpose %xx {perm = [1, 0]} : tensor<4x8xf32> -> tensor<8x4xf32>
    graph.yield %t : tensor<8x4xf32>
  }
  func.return %r : tensor<8x4xf32>
}"""
    from autofusion.diagnostics import UserError

    with pytest.raises(UserError, match=r"graph\.transpose has no vector kernel"):
        apply_pipeline(parse_module(default_context(), text, "t.mlir"), "lower-to-buffer")


def test_rows_view_kinds() -> None:
    from autofusion.lowering.row_plan import classify

    anchor = (2, 3, 5, 6)
    assert classify((2, 3, 5, 6), anchor, 2) == "full"
    assert classify((5, 6), anchor, 2) == "rowvec"
    assert classify((3, 5, 6), anchor, 2) == "mapped_rows"
    assert classify((2, 3, 1, 1), anchor, 2) == "column"
    assert classify((3, 1, 1), anchor, 2) == "mapped_column"
    assert classify((1,), anchor, 2) == "scalar"
    assert classify((2, 3, 5, 1), anchor, 2) is None
    assert graph.fusion_kind is not None
