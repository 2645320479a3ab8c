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

from differential import apply_pipeline, group

TOLERANCE = {"f32": (2e-5, 2e-6), "f16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2)}


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
            # the statistics are float32 whatever the input's type
            "    %m, %rs = graph.layer_norm_stats %x_ {axis = -1, epsilon = 1.0e-05} : "
            "(T) -> (tensor<?x1xf32>, tensor<?x1xf32>)\n"
            "    %y = graph.layer_norm_apply %x_, %m, %rs, %g_ {axis = -1} : "
            "(T, tensor<?x1xf32>, tensor<?x1xf32>, tensor<{c}x{e}>) -> T",
            [("x", t), ("g", "tensor<{c}x{e}>")],
            [("y", t), ("rs", "tensor<?x1xf32>")],
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
    after = apply_pipeline(
        parse_module(ctx, text, "group.mlir"), f"set-target{{chip={chip}}},lower-to-buffer"
    )
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
func.func @main(%x: tensor<4x8x2xf32>) -> tensor<8x4x2xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<4x8x2xf32>) -> tensor<8x4x2xf32> {
    %t = graph.transpose %xx {perm = [1, 0, 2]} : tensor<4x8x2xf32> -> tensor<8x4x2xf32>
    graph.yield %t : tensor<8x4x2xf32>
  }
  func.return %r : tensor<8x4x2xf32>
}"""
    from autofusion.diagnostics import UserError

    # a transpose that keeps the innermost axis has no rows kernel (row_transpose.py
    # folds only those that move one axis innermost or back)
    with pytest.raises(UserError, match=r"transpose perm \[1, 0, 2\] neither moves"):
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


# ---- input views: slices and reshapes read through strided copies ------------------------

QK_ROPE = """
func.func @main(%x: tensor<BxSx96xf16>, %c: tensor<1xSx1x16xf16>, %s: tensor<1xSx1x16xf16>) -> tensor<BxSx4x16xf16> {
  %r = graph.fusion_group (%xx = %x : tensor<BxSx96xf16>, %cc = %c : tensor<1xSx1x16xf16>, %sn = %s : tensor<1xSx1x16xf16>) -> tensor<BxSx4x16xf16> {
    %q = graph.slice %xx {starts = [0], ends = [64], axes = [2], steps = [1]} : tensor<BxSx96xf16> -> tensor<BxSx64xf16>
    %q4 = graph.reshape %q {shape = [0, 0, 4, 16]} : tensor<BxSx64xf16> -> tensor<BxSx4x16xf16>
    %y = graph.rope %q4, %cc, %sn {interleaved = false} : (tensor<BxSx4x16xf16>, tensor<1xSx1x16xf16>, tensor<1xSx1x16xf16>) -> tensor<BxSx4x16xf16>
    graph.yield %y : tensor<BxSx4x16xf16>
  }
  func.return %r : tensor<BxSx4x16xf16>
}"""

GATE_UP = """
func.func @main(%x: tensor<?x96xf32>) -> tensor<?x40xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<?x96xf32>) -> tensor<?x40xf32> {
    %g = graph.slice %xx {starts = [8], ends = [48], axes = [1], steps = [1]} : tensor<?x96xf32> -> tensor<?x40xf32>
    %u = graph.slice %xx {starts = [56], ends = [96], axes = [-1], steps = [1]} : tensor<?x96xf32> -> tensor<?x40xf32>
    %y = graph.swiglu %g, %u : tensor<?x40xf32>
    graph.yield %y : tensor<?x40xf32>
  }
  func.return %r : tensor<?x40xf32>
}"""

COPY = """
func.func @main(%x: tensor<6x5x32xf32>) -> tensor<6x3x8xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<6x5x32xf32>) -> tensor<6x3x8xf32> {
    %v = graph.slice %xx {starts = [1, 16], ends = [4, 24], axes = [1, 2], steps = [1, 1]} : tensor<6x5x32xf32> -> tensor<6x3x8xf32>
    graph.yield %v : tensor<6x3x8xf32>
  }
  func.return %r : tensor<6x3x8xf32>
}"""


@pytest.mark.parametrize("rows", [1, 5, 70])
def test_column_slices_are_read_in_place(rows: int) -> None:
    """Two column windows of one input (a merged gate-up projection's halves) feed a
    SwiGLU: one GM input, each window streamed with a row stride of the whole row."""
    want, got, after = run_both(GATE_UP, rows, "Ascend910B1", seed=rows)
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=2e-5, atol=2e-6)
    assert "num_inputs = 1 : i64" in after and "= graph.slice" not in after


@pytest.mark.parametrize(("batch", "seq"), [(1, 6), (2, 37)])
def test_head_view_of_a_column_slice_feeds_rope(batch: int, seq: int) -> None:
    """q = reshape(x[..., :64], [B, S, 4, 16]): view rows (b, s, h) are 16 apart within
    a token and 96 apart between tokens; tiles cut runs of 4 anywhere."""
    text = QK_ROPE.replace("BxS", f"{batch}x{seq}").replace("1xSx", f"1x{seq}x")
    want, got, after = run_both(text, 0, "Ascend910B1", seed=seq)
    rtol, atol = TOLERANCE["f16"]
    np.testing.assert_allclose(
        got["out0"].astype(float), want["out0"].astype(float), rtol=rtol, atol=atol
    )
    assert "%run" in after  # one strided copy per run of a token's heads


def test_a_lone_view_is_a_copy_kernel() -> None:
    """A slice of two axes, alone: a copy kernel moving only the slice's bytes."""
    want, got, _ = run_both(COPY, 0, "Ascend910B1")
    np.testing.assert_array_equal(got["out0"], want["out0"])


def test_input_views_need_data_copy_pad() -> None:
    from autofusion.lowering.row_plan import plan_rows
    from autofusion.lowering.template import GroupParts, group_parts
    from autofusion.passes.fusion_rule import Refusal

    module = parse_module(default_context(), GATE_UP, "g.mlir")
    grp = next(op for op in module.walk() if isinstance(op, graph.FusionGroupOp))
    parts: GroupParts = group_parts(grp)
    chip = get_chip("Ascend910")
    got = plan_rows(parts, chip.ub_bytes, 8, False)
    assert isinstance(got, Refusal) and "DataCopyPad" in got.reason


def test_strided_view_algebra() -> None:
    from autofusion.lowering.row_views import Strided, input_view

    x = Strided.contiguous((1, 2048, 4608))
    assert x is not None and x.strides == (9437184, 4608, 1)
    # a reshape that splits the last axis keeps the row stride; merging rows and the
    # sliced columns is refused (they are not contiguous)
    qcols = Strided((1, 2048, 3584), x.strides, 0)
    heads = qcols.reshaped((1, 2048, 28, 128))
    assert heads is not None and heads.strides[1:] == (4608, 128, 1)  # size-1 dims: any
    assert qcols.reshaped((1, 2048 * 3584)) is None
    # rows (s, h) of the head view: runs of 28 heads 128 apart, tokens 4608 apart
    view = input_view(None, heads, (1, 2048, 28, 128), 3)  # type: ignore[arg-type]
    assert view is not None
    assert (view.run, view.row_stride, view.run_stride) == (28, 128, 4608)
    # the same view split at the tokens: one stride per row, 3584 contiguous columns
    flat = input_view(None, heads, (1, 2048, 28, 128), 2)  # type: ignore[arg-type]
    assert flat is not None and (flat.run, flat.row_stride) == (0, 4608)
    # a view whose columns are not contiguous in the input is refused
    kt = Strided((1, 2048, 28, 128), (9437184, 4608, 1, 28), 0)
    assert input_view(None, kt, (1, 2048, 28, 128), 3) is None  # type: ignore[arg-type]
    # a dynamic batch dim merges with the sequence into one row stride
    dyn = Strided.contiguous((-1, 2048, 4608))
    assert dyn is not None
    window = Strided((-1, 2048, 512), dyn.strides, 3584)
    got = input_view(None, window, (-1, 2048, 512), 2)  # type: ignore[arg-type]
    assert got is not None and (got.offset, got.run, got.row_stride) == (3584, 0, 4608)


def test_input_views_run_the_same_as_emitted_ascend_c() -> None:
    """The generated Ascend C of the view kernels (strided DataCopyPad, a loop over runs),
    compiled with g++ against the emulation header, gives the interpreter's numbers."""
    import shutil

    if shutil.which("g++") is None:
        pytest.skip("no g++")
    from autofusion.codegen.emulate import run_function_emulated

    rng = np.random.default_rng(0)
    rope = QK_ROPE.replace("BxS", "2x37").replace("1xSx", "1x37x")
    cases = [
        (GATE_UP, {"arg0": rng.standard_normal((70, 96)).astype(np.float32)}),
        (
            rope,
            {
                "arg0": rng.standard_normal((2, 37, 96)).astype(np.float16),
                "arg1": rng.standard_normal((1, 37, 1, 16)).astype(np.float16),
                "arg2": rng.standard_normal((1, 37, 1, 16)).astype(np.float16),
            },
        ),
    ]
    for text, feeds in cases:
        module = apply_pipeline(parse_module(default_context(), text, "v.mlir"), "lower-to-buffer")
        want, got = run_function(module, feeds), run_function_emulated(module, feeds)
        np.testing.assert_allclose(
            got["out0"].astype(float), want["out0"].astype(float), rtol=1e-6, atol=1e-6
        )
