"""Cube kernel templates (matmul, conv, attention): the buffer IR gives the graph's numbers.

Each differential case interprets a one-group function before and after
`lower-to-buffer` on the same random inputs: f32 tight, f16/bf16 within one rounding of
their type. Chips: Ascend910B1 (split: the cube result reaches the vector epilogue
through a GM workspace), Ascend910 and Ascend310P3 (coupled: L0C -> UB). `small_tiles`
forces small base tiles so that interpreter-sized shapes still run several L1 stages,
L0 steps, M/N/K tails and many cores; other cases use the tiles the chip allows.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.dialects import buffer
from autofusion.dialects.buffer_verifier import footprint
from autofusion.fusion.cost import kernel_time
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering import attention_plan, matmul_cost, matmul_host, matmul_tiling
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.matmul_kernel import MatmulTemplate
from autofusion.lowering.template import GroupParts, NotApplicable, group_parts
from autofusion.mlir_io import default_context, module_to_text, parse_module
from autofusion.passes.fusion_rule import Refusal

from differential import apply_pipeline, group

TOLERANCE = {"f32": (1e-5, 1e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}
SPLIT, COUPLED = "Ascend910B1", "Ascend910"
ALL_CHIPS = ("Ascend910", "Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend310P3")


def T(shape: tuple[int, ...], elt: str) -> str:
    dims = "x".join("?" if d < 0 else str(d) for d in shape)
    return f"tensor<{dims}x{elt}>" if shape else f"tensor<{elt}>"


def feeds_for(args: list[tuple[str, tuple[int, ...], str]], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for i, (_, shape, elt) in enumerate(args):
        if elt == "i64":  # position ids: a shuffled range, so order is by id, not index
            out[f"arg{i}"] = rng.permutation(shape[0]).astype(np.int64) + 5
        elif elt == "i1":
            value = rng.random(shape) < 0.7
            value[..., 0] = True
            if len(shape) >= 2 and shape[-2] > 1:
                value[..., -1, :] = False  # a fully masked query row: its output is 0
            out[f"arg{i}"] = value
        else:
            out[f"arg{i}"] = dtypes.to_storage(
                rng.standard_normal(shape), dtypes.ELEMENT_TYPES[elt]
            )
    return out


def lowered(text: str, chip: str) -> ModuleOp:
    return apply_pipeline(
        parse_module(default_context(), text, "g.mlir"),
        f"set-target{{chip={chip}}},lower-to-buffer",
    )


def check(
    text: str, chip: str, feeds: dict[str, np.ndarray], elt: str, template: str | None = None
) -> ModuleOp:
    """Interpret before and after lowering; compare; return the lowered module."""
    before = parse_module(default_context(), text, "g.mlir")
    after = lowered(text, chip)
    ir = module_to_text(default_context(), after)
    assert "graph.fusion_group" not in ir and "buffer.launch" in ir
    kernel = next(op for op in after.ops if isinstance(op, buffer.KernelOp))
    if template is not None:
        assert kernel.template.data == template
    want, got = run_function(before, feeds), run_function(after, feeds)
    rtol, atol = TOLERANCE[elt]
    for key in want:
        w, g = want[key].astype(np.float64), got[key].astype(np.float64)
        assert not np.isnan(g).any(), f"{key}: NaN (an unwritten or padded element leaked)"
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, err_msg=key)
    return after


def kernel_of(module: ModuleOp) -> buffer.KernelOp:
    return next(op for op in module.ops if isinstance(op, buffer.KernelOp))


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Base tiles of 32 x 32 x 16 with two L0 steps per L1 stage; attention 16 x 32."""
    monkeypatch.setattr(matmul_tiling, "MN_CANDIDATES", ((32, 32), (16, 16)))
    monkeypatch.setattr(matmul_tiling, "K_CANDIDATES", (16,))
    monkeypatch.setattr(matmul_tiling, "STEP_K", (2,))
    monkeypatch.setattr(attention_plan, "Q_CANDIDATES", (16,))
    monkeypatch.setattr(attention_plan, "KV_CANDIDATES", (32,))
    yield


# ---- matmul ----------------------------------------------------------------------------------


def matmul_case(m: int, k: int, n: int, elt: str, epilogue: str = "gelu") -> tuple[str, list]:
    a, b, o = T((m, k), elt), T((k, n), elt), T((m, n), elt)
    body = f"    %mm = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n"
    if epilogue == "gelu":
        body += f'    %y = graph.gelu %mm {{approximate = "none"}} : {o}'
    else:
        body += f"    %y = graph.relu %mm : {o}"
    args = [("a", (m, k), elt), ("b", (k, n), elt)]
    return group(body, [(x, T(s, e)) for x, s, e in args], [("y", o)]), args


@pytest.mark.parametrize(
    ("chip", "elt"),
    [
        (SPLIT, "f32"),
        (SPLIT, "f16"),
        (SPLIT, "bf16"),
        (COUPLED, "f16"),
        ("Ascend310P3", "f16"),
    ],
)
def test_matmul_tails_and_cores(chip: str, elt: str, small_tiles: None) -> None:
    """M, N, K not multiples of the 32 x 32 x 16 base tiles: tails everywhere, several L1
    stages of two L0 steps, 6 output tiles on 6 cores. Coupled chips (no DataCopyPad)
    need 32-byte rows, so their K and N are multiples of 16 with an M tail."""
    m, k, n = (37, 70, 50) if chip == SPLIT else (37, 80, 48)
    text, args = matmul_case(m, k, n, elt)
    after = check(text, chip, feeds_for(args, 1), elt, "matmul")
    ir = module_to_text(default_context(), after)
    assert "buffer.mmad" in ir
    assert ("buffer.workspace" in ir) == (chip == SPLIT)
    l0c_to_ub = "#buffer.space<l0c>> to memref<?xf32, #buffer.space<ub>>"
    assert (l0c_to_ub in ir) == (chip != SPLIT)


@pytest.mark.parametrize("chip", [SPLIT, COUPLED])
def test_matmul_with_the_chips_own_tiles(chip: str) -> None:
    text, args = matmul_case(150, 96, 272, "f16")
    check(text, chip, feeds_for(args, 2), "f16", "matmul")


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((2, 3, 20, 24), (3, 24, 40)),  # B broadcast over the first batch dim
        ((1, 3, 20, 24), (2, 1, 24, 40)),  # both broadcast
        ((2, 20, 24), (24, 40)),  # a weight shared by the batch
        ((20, 24), (2, 24, 40)),  # a left operand shared by the batch
    ],
)
def test_batched_matmul_broadcasts_batch_dims(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], small_tiles: None
) -> None:
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])
    a, b, o = T(a_shape, "f32"), T(b_shape, "f32"), T(out, "f32")
    r = T(out[-2:], "f32")
    body = (
        f"    %mm = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n"
        f"    %y = graph.add %mm, %r_ : ({o}, {r}) -> {o}"
    )
    args = [("a", a_shape, "f32"), ("b", b_shape, "f32"), ("r", out[-2:], "f32")]
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("y", o)])
    check(text, SPLIT, feeds_for(args, 3), "f32", "matmul")


def test_batched_matmul_with_dynamic_dims() -> None:
    """Batch and M dynamic: the host reads them and the tiling function sizes the launch."""
    a, b, o = T((-1, 4, -1, 32), "f16"), T((32, 48), "f16"), T((-1, 4, -1, 48), "f16")
    body = f"    %mm = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n    %y = graph.silu %mm : {o}"
    text = group(body, [("a", a), ("b", b)], [("y", o)])
    for shape in ((1, 4, 5, 32), (2, 4, 19, 32)):
        args = [("a", shape, "f16"), ("b", (32, 48), "f16")]
        after = check(text, SPLIT, feeds_for(args, 4), "f16")
    assert "buffer.dim %a[0]" in module_to_text(default_context(), after)


@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("chip", [SPLIT, COUPLED])
def test_gemm_transposes_bias_activation_residual(
    trans: tuple[bool, bool], chip: str, small_tiles: None
) -> None:
    ta, tb = trans
    # coupled chips: a half cube (no float32 one) and 32-byte rows (M a multiple of 16)
    e = "f32" if chip == SPLIT else "f16"
    m, k, n = (40 if chip == SPLIT else 48), 48, 32
    a_shape, b_shape = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    a, b, c, o = T(a_shape, e), T(b_shape, e), T((n,), e), T((m, n), e)
    props = (
        f"{{trans_a = {str(ta).lower()}, trans_b = {str(tb).lower()}, alpha = 0.5, beta = 2.0, "
        'activation = "gelu_tanh"}'
    )
    body = (
        f"    %g = graph.gemm %a_, %b_, %c_ {props} : ({a}, {b}, {c}) -> {o}\n"
        f"    %y = graph.add %g, %r_ : {o}"
    )
    args = [("a", a_shape, e), ("b", b_shape, e), ("c", (n,), e), ("r", (m, n), e)]
    text = group(body, [(x, T(s, t)) for x, s, t in args], [("y", o)])
    if ta and e == "f32":  # no L1 -> L0A load transposes float fractals (fractal_rules.py)
        why = MatmulTemplate().plan(parts_of(text), get_chip(chip))
        assert isinstance(why, Refusal) and "transposed f32 A operand" in why.reason
        return
    after = check(text, chip, feeds_for(args, 5), e, "matmul")
    assert ("transpose true" in module_to_text(default_context(), after)) == (ta or tb)


@pytest.mark.parametrize(
    ("act", "bias_shape"),
    [("relu", (1, 24)), ("sigmoid", (24,)), ("silu", (30, 1)), ("clip", (30, 24)), ("gelu", ())],
)
def test_matmul_bias_and_activation_props(act: str, bias_shape: tuple[int, ...]) -> None:
    """A matmul that graph-fusion gave a bias and an activation, then a cast epilogue."""
    a, b, c, o = T((30, 40), "f16"), T((40, 24), "f16"), T(bias_shape, "f16"), T((30, 24), "f16")
    extra = ", clip_min = -0.5, clip_max = 1.0" if act == "clip" else ""
    body = (
        f'    %mm = graph.matmul %a_, %b_, %c_ {{activation = "{act}"{extra}}} : ({a}, {b}, {c}) -> {o}\n'
        f"    %y = graph.cast %mm : {o} -> {T((30, 24), 'f32')}"
    )
    args = [("a", (30, 40), "f16"), ("b", (40, 24), "f16"), ("c", bias_shape, "f16")]
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("y", T((30, 24), "f32"))])
    check(text, SPLIT, feeds_for(args, 6), "f16", "matmul")


def test_plain_product_uses_an_f16_workspace_and_multi_outputs() -> None:
    """The graph rounds a plain product to f16: Fixpipe does it on the way to the
    workspace (half the traffic). The product itself is also a kernel output."""
    a, b, o = T((20, 32), "f16"), T((32, 48), "f16"), T((20, 48), "f16")
    body = f"    %mm = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n    %y = graph.sigmoid %mm : {o}"
    args = [("a", (20, 32), "f16"), ("b", (32, 48), "f16")]
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("mm", o), ("y", o)])
    after = check(text, SPLIT, feeds_for(args, 7), "f16")
    ir = module_to_text(default_context(), after)
    assert "buffer.workspace %ws_bytes : memref<?xf16, #buffer.space<gm>>" in ir
    assert "memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>" in ir


def test_matmul_without_epilogue_is_cube_only_with_fixpipe_relu() -> None:
    a, b, o = T((40, 64), "f16"), T((64, 48), "f16"), T((40, 48), "f16")
    body = f'    %y = graph.matmul %a_, %b_ {{activation = "relu"}} : ({a}, {b}) -> {o}'
    args = [("a", (40, 64), "f16"), ("b", (64, 48), "f16")]
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("y", o)])
    after = check(text, SPLIT, feeds_for(args, 8), "f16")
    kernel = kernel_of(after)
    assert kernel.core_type.data == "aic"
    ir = module_to_text(default_context(), after)
    assert "relu true" in ir and "vecin" not in ir
    # coupled chips have no Fixpipe to GM: the product goes through UB
    assert kernel_of(check(text, COUPLED, feeds_for(args, 8), "f16")).core_type.data == "mix"


# ---- conv --------------------------------------------------------------------------------------


def conv_case(
    n: int,
    c: int,
    hw: tuple[int, int],
    co: int,
    k: int,
    stride: int,
    pad: int,
    dil: int,
    group_: int,
    elt: str,
    bias: bool = True,
    act: str | None = None,
) -> tuple[str, list]:
    h, w = hw
    oh = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
    x, wt, o = T((n, c, h, w), elt), T((co, c // group_, k, k), elt), T((n, co, oh, ow), elt)
    props = (
        f"strides = [{stride}, {stride}], pads = [{pad}, {pad}, {pad}, {pad}], "
        f"dilations = [{dil}, {dil}], group = {group_}"
    )
    if act:
        props += f', activation = "{act}"'
    args = [("x", (n, c, h, w), elt), ("w", (co, c // group_, k, k), elt)]
    if bias:
        args.append(("b", (co,), elt))
        body = f"    %c = graph.conv2d %x_, %w_, %b_ {{{props}}} : ({x}, {wt}, {T((co,), elt)}) -> {o}\n"
    else:
        body = f"    %c = graph.conv2d %x_, %w_ {{{props}}} : ({x}, {wt}) -> {o}\n"
    body += f"    %y = graph.relu %c : {o}"
    return group(body, [(a, T(s, e)) for a, s, e in args], [("y", o)]), args


@pytest.mark.parametrize(
    ("name", "geometry"),
    [
        ("1x1", (2, 24, (7, 9), 40, 1, 1, 0, 1, 1)),
        ("3x3_stride2_pad1", (1, 16, (11, 10), 24, 3, 2, 1, 1, 1)),
        ("depthwise", (1, 8, (9, 10), 8, 3, 1, 1, 1, 8)),
        ("dilation2_grouped", (1, 8, (12, 11), 12, 3, 1, 2, 2, 2)),
    ],
)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_conv_bias_relu(name: str, geometry: tuple, elt: str) -> None:
    n, c, hw, co, k, s, p, d, g = geometry
    text, args = conv_case(n, c, hw, co, k, s, p, d, g, elt)
    after = check(text, SPLIT, feeds_for(args, 9), elt, "conv")
    # a pointwise conv is a plain GEMM per image: no im2col; on a split chip the others
    # have the AIVs gather X_col into a workspace (no LoadData3DV2 im2col in L1)
    ir = module_to_text(default_context(), after)
    assert ("buffer.vgather" in ir) == (name != "1x1")
    assert "buffer.im2col" not in ir


@pytest.mark.parametrize("chip", ["Ascend310P3", COUPLED])
def test_conv_on_coupled_chips(chip: str) -> None:
    """32-byte rows (W*2 and Cin*kh*kw*2 multiples of 32): the l0c -> ub path."""
    for text, args in (
        conv_case(1, 16, (8, 16), 32, 3, 2, 1, 1, 1, "f16"),
        conv_case(2, 16, (4, 16), 16, 1, 1, 0, 1, 1, "f16"),
    ):
        check(text, chip, feeds_for(args, 10), "f16", "conv")


def test_conv_without_epilogue_writes_through_fixpipe() -> None:
    text, args = conv_case(1, 8, (8, 8), 16, 3, 1, 1, 1, 1, "f16", bias=False, act="relu")
    text = text.replace("    %y = graph.relu %c : tensor<1x16x8x8xf16>\n", "").replace(
        "graph.yield %y", "graph.yield %c"
    )
    after = check(text, SPLIT, feeds_for(args, 11), "f16")
    # the AIVs only build X_col (explicit im2col); the AIC's Fixpipe writes the output
    assert kernel_of(after).core_type.data == "mix"
    ir = module_to_text(default_context(), after)
    assert "relu true : memref<?xf32, #buffer.space<l0c>> to memref<?xf16, #buffer.space<gm>>" in ir
    pointwise, args = conv_case(1, 8, (8, 8), 16, 1, 1, 0, 1, 1, "f16", bias=False, act="relu")
    pointwise = pointwise.replace("    %y = graph.relu %c : tensor<1x16x8x8xf16>\n", "").replace(
        "graph.yield %y", "graph.yield %c"
    )
    after = check(pointwise, SPLIT, feeds_for(args, 11), "f16")
    assert kernel_of(after).core_type.data == "aic"


# ---- flash attention -----------------------------------------------------------------------------


def attention_case(
    dims: tuple[int, int, int, int, int, int, int],
    layout: str,
    causal: bool,
    mask: str,
    elt: str,
) -> tuple[str, list]:
    b, hq, hkv, sq, skv, d, dv = dims

    def shape(h: int, s: int, x: int) -> tuple[int, ...]:
        return (b, h, s, x) if layout == "BNSD" else (b, s, h, x)

    args = [
        ("q", shape(hq, sq, d), elt),
        ("k", shape(hkv, skv, d), elt),
        ("v", shape(hkv, skv, dv), elt),
    ]
    o = T(shape(hq, sq, dv), elt)
    if mask == "bool":
        args.append(("m", (b, 1, sq, skv), "i1"))
    elif mask == "bool_keys":
        args.append(("m", (skv,), "i1"))
    elif mask == "float":
        args.append(("m", (1, hq, sq, skv), elt))
    elif mask == "positions":  # a causal mask by position: the ids of the S tokens
        args.append(("m", (sq,), "i64"))
    elif mask == "per_query":  # broadcasts over the keys: refused
        args.append(("m", (1, 1, sq, 1), "i1"))
    operands = ", ".join(f"%{a}_" for a, _, _ in args)
    types = ", ".join(T(s, e) for _, s, e in args)
    props = f'{{scale = 0.35, causal = {str(causal).lower()}, layout = "{layout}"}}'
    body = (
        f"    %fa = graph.flash_attention {operands} {props} : ({types}) -> {o}\n"
        f"    %y = graph.add %fa, %r_ : {o}"
    )
    args.append(("r", shape(hq, sq, dv), elt))
    return group(body, [(a, T(s, e)) for a, s, e in args], [("y", o)]), args


ATTENTION_CASES = [
    ((2, 2, 2, 40, 40, 16, 16), "BNSD", True, "none"),
    ((2, 4, 1, 1, 70, 32, 32), "BSND", False, "bool"),  # decoding: one query row
    ((1, 4, 2, 37, 70, 16, 32), "BNSD", True, "bool"),  # GQA, tails
    ((1, 2, 1, 20, 50, 32, 16), "BSND", False, "float"),
    ((1, 4, 1, 33, 64, 16, 16), "BSND", True, "bool_keys"),
    ((2, 4, 2, 45, 45, 16, 16), "BSND", False, "positions"),  # llama_layer.afc's mask
]
# coupled chips (no DataCopyPad) need 32-byte rows: Skv a multiple of 32 for i1 masks
COUPLED_ATTENTION = [
    ((2, 2, 2, 40, 64, 16, 16), "BNSD", True, "none"),
    ((1, 4, 2, 37, 64, 16, 32), "BNSD", True, "bool"),
    ((1, 2, 1, 20, 64, 32, 16), "BSND", False, "float"),
    ((1, 4, 1, 33, 64, 16, 16), "BSND", True, "bool_keys"),
]


@pytest.mark.parametrize(
    ("chip", "elt", "case"),
    [(SPLIT, e, c) for e in ("f32", "f16") for c in ATTENTION_CASES]
    + [(COUPLED, "f16", c) for c in COUPLED_ATTENTION]
    + [("Ascend310P3", "f16", COUPLED_ATTENTION[1])],
)
def test_flash_attention(chip: str, elt: str, case: tuple, small_tiles: None) -> None:
    """16-row query blocks and 32-key blocks: several of each, causal skipping and
    diagonal masking, GQA head mapping, masks broadcast over batch/head/query."""
    dims, layout, causal, mask = case
    text, args = attention_case(dims, layout, causal, mask, elt)
    # the attention template's own kernel (the cost model may take decode_attention)
    text = text.replace("{\n    %fa", 'plan {template = "attention"} {\n    %fa', 1)
    check(text, chip, feeds_for(args, 12), elt, "attention")


def test_flash_attention_with_the_chips_own_tiles() -> None:
    text, args = attention_case((1, 2, 2, 70, 140, 64, 64), "BNSD", True, "none", "bf16")
    check(text, SPLIT, feeds_for(args, 13), "bf16", "attention")


def test_flash_attention_rows_masked_by_the_lowest_float(small_tiles: None) -> None:
    """transformers masks with torch.finfo(float32).min added to the scores: a query row
    masked whole is then a softmax over equal scores (the mean of V), not a fully masked
    row (that is -inf: 0). Rows masked up to one key, and rows masked by -inf, too.
    (f32: the split chips' cube; the coupled ones have none.)"""
    text, args = attention_case((2, 2, 2, 20, 40, 16, 16), "BNSD", False, "float", "f32")
    feeds = feeds_for(args, 14)
    mask = np.zeros(args[3][1], np.float32)
    lowest = np.finfo(np.float32).min
    mask[..., 0, :] = lowest  # every key of query 0
    mask[..., 5, 1:] = lowest  # every key but the first of query 5
    mask[..., 17, :] = -np.inf  # query 17 attends to nothing: 0
    feeds["arg3"] = mask
    lowered_module = check(text, SPLIT, feeds, "f32", "attention")
    # the case adds a residual (arg4) to the attention
    out = run_function(lowered_module, feeds)["out0"] - feeds["arg4"]
    mean_v = feeds["arg2"].mean(axis=2)  # [B, H, Dv]
    np.testing.assert_allclose(out[:, :, 0, :], mean_v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, :, 17, :], 0, atol=1e-6)


# ---- end to end: ub-fusion puts the cube op and its epilogue in one kernel -----------------------

MLP = """
func.func @main(%x: tensor<?x48xf16>, %w: tensor<48x64xf16>, %b: tensor<64xf16>) -> tensor<?x64xf16> {
  %m = graph.matmul %x, %w : (tensor<?x48xf16>, tensor<48x64xf16>) -> tensor<?x64xf16>
  %a = graph.add %m, %b : (tensor<?x64xf16>, tensor<64xf16>) -> tensor<?x64xf16>
  %y = graph.gelu %a {approximate = "none"} : tensor<?x64xf16>
  func.return %y : tensor<?x64xf16>
}"""

CONV_BN_RELU = """
func.func @main(%x: tensor<2x8x10x12xf32>) -> tensor<2x16x5x6xf32> {
  %w = graph.constant dense<WEIGHTS> : tensor<16x8x3x3xf32>
  %s = graph.constant dense<SCALE> : tensor<16xf32>
  %o = graph.constant dense<SHIFT> : tensor<16xf32>
  %mu = graph.constant dense<MEAN> : tensor<16xf32>
  %v = graph.constant dense<VAR> : tensor<16xf32>
  %c = graph.conv2d %x, %w {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<2x8x10x12xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x5x6xf32>
  %n = graph.batch_norm %c, %s, %o, %mu, %v {epsilon = 1.0e-05} : (tensor<2x16x5x6xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x16x5x6xf32>
  %y = graph.relu %n : tensor<2x16x5x6xf32>
  func.return %y : tensor<2x16x5x6xf32>
}"""

DECOMPOSED_BN = """
func.func @main(%x: tensor<2x8x10x12xf16>, %w: tensor<16x8x3x3xf16>, %s: tensor<16x1x1xf16>, %o: tensor<16x1x1xf16>) -> tensor<2x16x10x12xf16> {
  %c = graph.conv2d %x, %w {strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1} : (tensor<2x8x10x12xf16>, tensor<16x8x3x3xf16>) -> tensor<2x16x10x12xf16>
  %m = graph.mul %c, %s : (tensor<2x16x10x12xf16>, tensor<16x1x1xf16>) -> tensor<2x16x10x12xf16>
  %a = graph.add %m, %o : (tensor<2x16x10x12xf16>, tensor<16x1x1xf16>) -> tensor<2x16x10x12xf16>
  %y = graph.relu %a : tensor<2x16x10x12xf16>
  func.return %y : tensor<2x16x10x12xf16>
}"""


def _dense(values: np.ndarray) -> str:
    def nested(a: np.ndarray) -> str:
        if a.ndim == 0:
            return f"{float(a):.6e}"
        return "[" + ", ".join(nested(x) for x in a) + "]"

    return nested(values)


def end_to_end(text: str, pipeline: str, feeds: dict[str, np.ndarray], elt: str) -> str:
    before = parse_module(default_context(), text, "m.mlir")
    want = run_function(before, feeds)
    after = apply_pipeline(parse_module(default_context(), text, "m.mlir"), pipeline)
    got = run_function(after, feeds)
    rtol, atol = TOLERANCE[elt]
    for key in want:
        np.testing.assert_allclose(
            got[key].astype(float), want[key].astype(float), rtol=rtol * 2, atol=atol * 4
        )
    return module_to_text(default_context(), after)


@pytest.mark.parametrize("chip", [SPLIT, COUPLED, "Ascend310P3"])
def test_matmul_bias_gelu_become_one_kernel(chip: str) -> None:
    feeds = feeds_for([("x", (9, 48), "f16"), ("w", (48, 64), "f16"), ("b", (64,), "f16")], 14)
    ir = end_to_end(MLP, f"set-target{{chip={chip}}},ub-fusion,lower-to-buffer", feeds, "f16")
    assert ir.count("buffer.launch") == 1 and ir.count("buffer.kernel") == 1
    assert 'template = "matmul"' in ir and not re.search(r"= graph\.\w+ ", ir)


@pytest.mark.parametrize("chip", [SPLIT, "Ascend310P3"])
def test_conv_bn_relu_after_graph_fusion_is_one_kernel(chip: str) -> None:
    rng = np.random.default_rng(15)
    cin = 8 if chip == SPLIT else 16  # coupled: 32-byte weight rows (Cin*9 halves)
    text = (
        CONV_BN_RELU.replace("WEIGHTS", _dense(rng.standard_normal((16, cin, 3, 3)) * 0.3))
        .replace("SCALE", _dense(rng.uniform(0.5, 2, 16)))
        .replace("SHIFT", _dense(rng.standard_normal(16)))
        .replace("MEAN", _dense(rng.standard_normal(16)))
        .replace("VAR", _dense(rng.uniform(0.5, 2, 16)))
    )
    x, elt = (2, 8, 10, 12), "f32"
    if chip != SPLIT:  # a half cube (no float32 one) and 32-byte rows: W = 16, OH*OW = 32
        text = text.replace("f32", "f16").replace("16x8x3x3", "16x16x3x3")
        text = text.replace("2x8x10x12", "2x16x8x16").replace("5x6", "4x8")
        x, elt = (2, 16, 8, 16), "f16"
    feeds = feeds_for([("x", x, elt)], 16)
    pipeline = f"set-target{{chip={chip}}},graph-fusion,ub-fusion,lower-to-buffer"
    ir = end_to_end(text, pipeline, feeds, elt)
    assert ir.count("buffer.launch") == 1 and 'template = "conv"' in ir
    assert not re.search(r"= graph\.(?!constant)\w+ ", ir)  # only the folded weights stay


def test_conv_with_a_decomposed_batchnorm_fuses_its_epilogue() -> None:
    args = [
        ("x", (2, 8, 10, 12), "f16"),
        ("w", (16, 8, 3, 3), "f16"),
        ("s", (16, 1, 1), "f16"),
        ("o", (16, 1, 1), "f16"),
    ]
    pipeline = f"set-target{{chip={SPLIT}}},ub-fusion,lower-to-buffer"
    ir = end_to_end(DECOMPOSED_BN, pipeline, feeds_for(args, 17), "f16")
    assert ir.count("buffer.launch") == 1 and 'template = "conv"' in ir


# ---- capacity: large shapes verify on every chip -------------------------------------------------


@pytest.mark.parametrize("chip", ALL_CHIPS)
def test_large_kernels_fit_every_chip(chip: str) -> None:
    cases = [
        matmul_case(4096, 4096, 4096, "f16")[0],
        conv_case(8, 256, (64, 64), 256, 3, 1, 1, 1, 1, "f16")[0],
        attention_case((1, 32, 8, 4096, 4096, 128, 128), "BNSD", True, "none", "f16")[0],
    ]
    c = get_chip(chip)
    for text in cases:
        module = lowered(text, chip)
        module.verify()
        kernel = kernel_of(module)
        for space, need in footprint(kernel).items():
            cap = c.capacity(space)
            assert cap is None or need <= cap, (chip, kernel.template.data, space, need, cap)


# ---- plans, refusals and costs ------------------------------------------------------------------


def parts_of(text: str) -> GroupParts:
    module = parse_module(default_context(), text, "g.mlir")
    from autofusion.dialects import graph

    fg = next(op for op in module.walk() if isinstance(op, graph.FusionGroupOp))
    return group_parts(fg)


def refusal(text: str, chip: str = SPLIT) -> str:
    from autofusion.lowering.template_registry import templates

    parts = parts_of(text)
    reasons = [t.plan(parts, get_chip(chip)) for t in templates()]
    assert all(isinstance(r, Refusal) for r in reasons), reasons
    first = next(r for r in reasons if r)
    return first.reason  # type: ignore[union-attr]


def test_refusals_name_the_reason() -> None:
    a, b, o = T((16, 32), "f16"), T((32, 16), "f16"), T((16, 16), "f16")
    prologue = group(
        f"    %e = graph.exp %a_ : {a}\n    %y = graph.matmul %e, %b_ : ({a}, {b}) -> {o}",
        [("a", a), ("b", b)],
        [("y", o)],
    )
    assert "a prologue op (graph.exp) feeds the graph.matmul" in refusal(prologue)
    two = group(
        f"    %m = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n"
        f"    %y = graph.matmul %m, %c_ : ({o}, {o}) -> {o}",
        [("a", a), ("b", b), ("c", o)],
        [("y", o)],
    )
    assert "two cube ops" in refusal(two)
    reduce = group(
        f"    %m = graph.matmul %a_, %b_ : ({a}, {b}) -> {o}\n    %y = graph.softmax %m {{axis = -1}} : {o}",
        [("a", a), ("b", b)],
        [("y", o)],
    )
    assert "graph.softmax after a cube op" in refusal(reduce)
    bf = group(
        f"    %y = graph.matmul %a_, %b_ : ({T((16, 32), 'bf16')}, {T((32, 16), 'bf16')}) -> {T((16, 16), 'bf16')}",
        [("a", T((16, 32), "bf16")), ("b", T((32, 16), "bf16"))],
        [("y", T((16, 16), "bf16"))],
    )
    assert "Ascend910 has no bf16 cube" in refusal(bf, "Ascend910")
    # 310P's Mmad takes half and int8 (CANN 8.1 dav_m200); 910 computes float in half
    f32_mm, _ = matmul_case(32, 32, 32, "f32")
    for chip in (COUPLED, "Ascend310P3"):
        assert f"{chip} has no float32 cube" in refusal(f32_mm, chip)
    x, w, oc = T((1, 4, -1, 8), "f16"), T((4, 4, 1, 1), "f16"), T((1, 4, -1, 8), "f16")
    conv = group(
        f"    %y = graph.conv2d %x_, %w_ {{strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1}} : ({x}, {w}) -> {oc}",
        [("x", x), ("w", w)],
        [("y", oc)],
    )
    assert "dynamic channels or spatial dims" in refusal(conv)
    text, _ = attention_case((1, 2, 1, 16, 32, 16, 16), "BNSD", False, "per_query", "f16")
    assert "broadcasts over the keys" in refusal(text)


def test_l0_too_small_is_refused() -> None:
    tiny = dataclasses.replace(get_chip(SPLIT), l0a_bytes=256, l0b_bytes=256)
    text, _ = matmul_case(64, 64, 64, "f16")
    plan = MatmulTemplate().plan(parts_of(text), tiny)
    assert isinstance(plan, Refusal)
    assert "cannot hold a 16x16 fractal tile" in plan.reason


def test_vector_groups_are_not_the_cube_templates_business() -> None:
    text = group(
        "    %y = graph.exp %x_ : tensor<8x8xf32>",
        [("x", "tensor<8x8xf32>")],
        [("y", "tensor<8x8xf32>")],
    )
    plan = MatmulTemplate().plan(parts_of(text), get_chip(SPLIT))
    assert isinstance(plan, NotApplicable) and not plan


def test_matmul_cost_counts_rereads_workspace_and_flops() -> None:
    text, _ = matmul_case(1024, 512, 2048, "f16")
    parts = parts_of(text)
    template = MatmulTemplate()
    split = template.plan(parts, get_chip(SPLIT))
    coupled = template.plan(parts, get_chip(COUPLED))
    assert not isinstance(split, Refusal) and not isinstance(coupled, Refusal)
    cs, cc = template.cost(split, get_chip(SPLIT)), template.cost(coupled, get_chip(COUPLED))
    m, k, n = 1024, 512, 2048
    assert cs.cube_flops == 2.0 * m * n * k
    # A is read once per N tile, B once per M tile (baseM 128, baseN 256 here)
    assert cs.gm_read_bytes >= m * k * 2 * (n // 256) + k * n * 2 * (m // 128)
    # the split chip pays the workspace round trip (f16: a plain product)
    assert cs.gm_write_bytes - cc.gm_write_bytes == m * n * 2
    assert cs.gm_read_bytes - cc.gm_read_bytes == m * n * 2
    assert cs.cube_cores_used == 24 and cs.vector_cores_used == 48
    assert kernel_time(cs, get_chip(SPLIT)).total_us > 0
    # HBM: A (1 MiB) fits half the L2, so the tiles go M fastest and every operand comes
    # from HBM once; the workspace never leaves L2
    assert cs.hbm_read_bytes == m * k * 2 + k * n * 2
    assert cs.hbm_write_bytes == m * n * 2


@pytest.mark.parametrize("gated", [True, False])
def test_norm_apply_in_a_matmul_epilogue(gated: bool, small_tiles: None) -> None:
    """rms_norm_apply needs its row's rstd and its columns' scale: any epilogue tile has
    them. Gated: apply(x) * (a @ b), as a split norm feeding a gated projection; else
    the apply normalizes the product itself."""
    m, k, n = 37, 40, 48
    mn, col = T((m, n), "f16"), T((m, 1), "f32")
    body = f"    %mm = graph.matmul %a_, %b_ : ({T((m, k), 'f16')}, {T((k, n), 'f16')}) -> {mn}\n"
    src = "%x_" if gated else "%mm"
    body += (
        f"    %y = graph.rms_norm_apply {src}, %r_, %g_ {{axis = -1}} : "
        f"({mn}, {col}, {T((n,), 'f16')}) -> {mn}\n"
    )
    body += f"    %z = graph.mul %y, %mm : {mn}" if gated else f"    %z = graph.relu %y : {mn}"
    args = [("a", (m, k), "f16"), ("b", (k, n), "f16"), ("r", (m, 1), "f32"), ("g", (n,), "f16")]
    if gated:
        args.append(("x", (m, n), "f16"))
    text = group(body, [(x, T(s, e)) for x, s, e in args], [("z", mn)])
    feeds = feeds_for(args, 5)
    feeds["arg2"] = np.abs(feeds["arg2"]) + 0.5  # an rstd is positive
    check(text, SPLIT, feeds, "f16", "matmul")


@pytest.mark.parametrize(
    ("mt", "nt", "group_m", "batch"), [(5, 3, 2, 1), (4, 4, 4, 2), (3, 5, 1, 2)]
)
def test_grouped_tile_order_visits_every_tile_once(
    mt: int, nt: int, group_m: int, batch: int
) -> None:
    ops = IntOps()
    t = {"mt": mt, "nt": nt, "group_m": group_m}
    seen = [matmul_tiling.tile_coords(ops, tile, t) for tile in range(batch * mt * nt)]
    assert sorted(seen) == [(b, i, j) for b in range(batch) for i in range(mt) for j in range(nt)]
    # within a group, consecutive tiles share the N tile (one B band)
    first = seen[: min(group_m, mt)]
    assert {j for _, _, j in first} == {0}


def test_matmul_in_groups_of_m_tiles_smaller_than_m(
    small_tiles: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An L2 budget of two A bands: groups of 2 of the 5 M tiles (a tail group of 1)."""
    m, k, n = 150, 40, 96
    for module in (matmul_host, matmul_cost):  # the modules that read the budget
        monkeypatch.setattr(module, "l2_budget", lambda chip: 2 * 32 * k * 2)
    text, args = matmul_case(m, k, n, "f16")
    plan = MatmulTemplate().plan(parts_of(text), get_chip(SPLIT))
    assert not isinstance(plan, Refusal)
    sizes = matmul_tiling.GemmSizes(m, n, k, 1)
    tiling = matmul_host.plan_tiling(IntOps(), plan, get_chip(SPLIT), sizes)
    assert (tiling.values["mt"], tiling.values["group_m"]) == (5, 2)
    check(text, SPLIT, feeds_for(args, 4), "f16", "matmul")
    cost = MatmulTemplate().cost(plan, get_chip(SPLIT))
    # A once (its bands are kept per group), B once per group: 3 sweeps
    assert cost.hbm_read_bytes == m * k * 2 + 3 * k * n * 2


# ---- the dialect additions: im2col, gathers, transposed loads, Fixpipe casts, workspaces ---------

KERNEL = """
func.func @main(%x: tensor<SRC>) -> tensor<DST> {
  %c1 = arith.constant 1 : index
  %y = buffer.launch @k blocks(%c1) (%x) tiling() dims() : (tensor<SRC>) -> tensor<DST>
  func.return %y : tensor<DST>
}
buffer.kernel @k(%in: memref<?xIN, #buffer.space<gm>>, %out: memref<?xOUT, #buffer.space<gm>>) attributes {chip = "CHIP", template = "test", core_type = "aic", num_inputs = 1 : i64, num_outputs = 1 : i64} {
BODY
  buffer.return
}"""


def run_kernel(
    body: str,
    src: str,
    dst: str,
    x: np.ndarray,
    chip: str = SPLIT,
    types: tuple[str, str] = ("f32", "f32"),
) -> np.ndarray:
    text = (
        KERNEL.replace("BODY", body)
        .replace("SRC", src)
        .replace("DST", dst)
        .replace("IN", types[0])
        .replace("OUT", types[1])
        .replace("CHIP", chip)
    )
    module = parse_module(default_context(), text, "k.mlir")
    return run_function(module, {"arg0": x})["out0"]


@pytest.mark.parametrize("dest", ["l0a", "l0b"])
def test_im2col_builds_the_implicit_gemm_matrix(dest: str) -> None:
    """A 2 x 5 x 6 map, 3 x 3 taps, stride 2, dilation 1, pads 1: rows k = (c, r, s),
    columns the 6 output pixels from the second one; zeros in the padding."""
    c, h, w, ow = 2, 5, 6, 3
    x = np.arange(c * h * w, dtype=np.float32) + 1
    m0, m, k0, k = 1, 6, 2, 15
    body = f"""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nx = arith.constant {c * h * w} : index
  %nb = arith.constant {c * h * w * 4} : index
  %kb = arith.constant {k * m * 4} : index
  %km = arith.constant {k * m} : index
  %C = arith.constant {c} : index
  %H = arith.constant {h} : index
  %W = arith.constant {w} : index
  %OW = arith.constant {ow} : index
  %M0 = arith.constant {m0} : index
  %M = arith.constant {m} : index
  %K0 = arith.constant {k0} : index
  %K = arith.constant {k} : index
  %l1 = buffer.alloc_buf "a1" %nb max_bytes {c * h * w * 4} -> memref<?xf32, #buffer.space<l1>>
  %l0 = buffer.alloc_buf "{"a2" if dest == "l0a" else "b2"}" %kb max_bytes {k * m * 4} -> memref<?xf32, #buffer.space<{dest}>>
  %acc = buffer.alloc_buf "co1" %kb max_bytes {k * m * 4} -> memref<?xf32, #buffer.space<l0c>>
  buffer.copy %in to %l1 blocks %c1 x %nx strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<l1>>
  buffer.im2col %l0, %l1 fmap(%C, %H, %W) pads(%c1, %c1) out_width %OW pixels(%M0, %M) k(%K0, %K) {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}} : memref<?xf32, #buffer.space<l1>> to memref<?xf32, #buffer.space<{dest}>>
"""
    # read the matrix back through an identity mmad: C = I @ B (l0b) or A @ I (l0a)
    rows, cols = (k, m) if dest == "l0b" else (m, k)
    eye = "l0a" if dest == "l0b" else "l0b"
    n_eye = rows if dest == "l0b" else cols
    body += f"""
  %ne = arith.constant {n_eye * n_eye} : index
  %neb = arith.constant {n_eye * n_eye * 4} : index
  %e = buffer.alloc_buf "{"a2" if eye == "l0a" else "b2"}" %neb max_bytes {n_eye * n_eye * 4} -> memref<?xf32, #buffer.space<{eye}>>
"""
    for i in range(n_eye):
        body += f"""  %i{i} = arith.constant {i * (n_eye + 1)} : index
  %one{i} = arith.constant 1.0 : f32
  buffer.set_value %e[%i{i}], %one{i} : memref<?xf32, #buffer.space<{eye}>>, f32
"""
    body += f"""  %R = arith.constant {rows} : index
  %Cc = arith.constant {cols} : index
  %false = arith.constant false
  %n = arith.constant {n_eye} : index
"""
    if dest == "l0b":
        body += "  buffer.mmad %acc, %e, %l0, %R, %Cc, %n, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<l0a>>, memref<?xf32, #buffer.space<l0b>>\n"
    else:
        body += "  buffer.mmad %acc, %l0, %e, %R, %Cc, %n, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<l0a>>, memref<?xf32, #buffer.space<l0b>>\n"
    # Fixpipe reads L0C with the mmad's n as its row stride (fractal_rules.py)
    body += "  buffer.copy %acc to %out blocks %R x %Cc strides %Cc, %Cc : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>"
    got = run_kernel(body, f"{c * h * w}xf32", f"{k * m}xf32", x).reshape(rows, cols)
    fmap = np.pad(x.reshape(c, h, w), ((0, 0), (1, 1), (1, 1)))
    want = np.zeros((k, m), np.float32)
    for kk in range(k):
        ci, r, s_ = (k0 + kk) // 9, ((k0 + kk) // 3) % 3, (k0 + kk) % 3
        for p in range(m):
            o_h, o_w = divmod(m0 + p, ow)
            want[kk, p] = fmap[ci, o_h * 2 + r, o_w * 2 + s_]
    np.testing.assert_array_equal(got, want if dest == "l0b" else want.T)


def vgather_kernel(offsets: list[int]) -> str:
    """GM -> UB, buffer.vgather at the given byte offsets, UB -> GM."""
    n = len(offsets)
    body = f"""
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  %nb = arith.constant {n * 4} : index
  %x = buffer.alloc_buf "vecin" %nb max_bytes {n * 4} -> memref<?xf32, #buffer.space<ub>>
  %y = buffer.alloc_buf "vecout" %nb max_bytes {n * 4} -> memref<?xf32, #buffer.space<ub>>
  %o = buffer.alloc_buf "veccalc" %nb max_bytes {n * 4} -> memref<?xi32, #buffer.space<ub>>
  buffer.copy %in to %x blocks %c1 x %n strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
"""
    for i, off in enumerate(offsets):
        body += f"""  %i{i} = arith.constant {i} : index
  %v{i} = arith.constant {off} : i32
  buffer.set_value %o[%i{i}], %v{i} : memref<?xi32, #buffer.space<ub>>, i32
"""
    body += """  buffer.vgather %y, %x, %o, %n : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
  buffer.copy %y to %out blocks %c1 x %n strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>"""
    return body


def test_vgather_picks_elements_at_byte_offsets() -> None:
    """dst[i] = src at byte offset offsets[i] (Gather); repeated and reversed picks."""
    x = np.arange(8, dtype=np.float32) + 1
    picks = [7, 0, 0, 3, 6, 5, 1, 2]
    body = vgather_kernel([4 * p for p in picks])
    got = run_kernel(body, "8xf32", "8xf32", x)
    np.testing.assert_array_equal(got, x[picks])
    for bad, message in (
        ([2] + [0] * 7, "non-negative multiples of 4"),
        ([32] * 8, "past the end"),
    ):
        with pytest.raises(Exception, match=message):
            run_kernel(vgather_kernel(bad), "8xf32", "8xf32", x)
    # Gather exists on Atlas A2/A3 and 310P's AI Core, not on 910 (asc-devkit Gather.md)
    with pytest.raises(Exception, match=r"vgather \(Gather\) is not available on Ascend910"):
        run_kernel(body, "8xf32", "8xf32", x, chip=COUPLED)
    got = run_kernel(body, "8xf32", "8xf32", x, chip="Ascend310P3")
    np.testing.assert_array_equal(got, x[picks])


def test_transposed_load_and_fixpipe_bf16_cast() -> None:
    """l1 -> l0b with transpose: a [3 x 5] block lands as [5 x 3]; l0c -> gm rounds the
    float32 accumulator to bf16 (nearest even), as Fixpipe's F322BF16."""
    x = (np.arange(15, dtype=np.float32) + 1) * np.float32(1.00390625)  # not bf16 values
    body = """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c15 = arith.constant 15 : index
  %c8 = arith.constant 8 : index
  %nb = arith.constant 64 : index
  %nb1 = arith.constant 128 : index
  %l1 = buffer.alloc_buf "b1" %nb1 max_bytes 128 -> memref<?xf32, #buffer.space<l1>>
  %b = buffer.alloc_buf "b2" %nb max_bytes 512 -> memref<?xf32, #buffer.space<l0b>>
  %a = buffer.alloc_buf "a2" %nb max_bytes 512 -> memref<?xf32, #buffer.space<l0a>>
  %acc = buffer.alloc_buf "co1" %nb max_bytes 64 -> memref<?xf32, #buffer.space<l0c>>
  %one = arith.constant 1.0 : f32
  buffer.set_value %a[%c0], %one : memref<?xf32, #buffer.space<l0a>>, f32
  buffer.copy %in to %l1 blocks %c3 x %c5 strides %c5, %c8 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<l1>>
  buffer.copy %l1 to %b blocks %c3 x %c5 strides %c8, %c3 transpose true : memref<?xf32, #buffer.space<l1>> to memref<?xf32, #buffer.space<l0b>>
  %false = arith.constant false
  buffer.mmad %acc, %a, %b, %c1, %c15, %c1, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<l0a>>, memref<?xf32, #buffer.space<l0b>>
  buffer.copy %acc to %out blocks %c1 x %c15 strides %c15, %c15 : memref<?xf32, #buffer.space<l0c>> to memref<?xbf16, #buffer.space<gm>>"""
    got = run_kernel(body, "15xf32", "15xbf16", x, types=("f32", "bf16"))
    want = dtypes.to_storage(x.reshape(3, 5).T.reshape(-1), dtypes.ELEMENT_TYPES["bf16"])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '%b = buffer.alloc_buf "vecin" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>\n'
            '  %l = buffer.alloc_buf "a1" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<l1>>\n'
            "  buffer.copy %b to %l blocks %c1 x %c1 strides %c1, %c1 : memref<?xf16, #buffer.space<ub>> to memref<?xf16, #buffer.space<l1>>",
            "has no ub -> l1 path",
        ),
        (
            '%b = buffer.alloc_buf "vecin" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>\n'
            "  buffer.copy %in to %b blocks %c1 x %c1 strides %c1, %c1 transpose true : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>",
            "transpose exists only on the l1 -> l0a/l0b paths",
        ),
        (
            '%b = buffer.alloc_buf "vecin" %c32 max_bytes 32 -> memref<?xf16, #buffer.space<ub>>\n'
            "  buffer.copy %in to %b blocks %c1 x %c1 strides %c1, %c1 : memref<?xf32, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>",
            "converts f32 to f16 only on l0c -> gm",
        ),
        (
            "%w = buffer.workspace %c32 : memref<?xf32, #buffer.space<gm>>",
            "must be a tiling argument",
        ),
        (
            '%b = buffer.alloc_buf "vecin" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>\n'
            "  buffer.vgather %b, %b, %b, %c1 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>",
            "vgather offsets are i32 byte offsets",
        ),
        (
            '%b = buffer.alloc_buf "vecin" %c32 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>\n'
            '  %o = buffer.alloc_buf "veccalc" %c32 max_bytes 32 -> memref<?xi32, #buffer.space<ub>>\n'
            "  buffer.vgather %b, %in, %o, %c1 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<gm>>, memref<?xi32, #buffer.space<ub>>",
            "vector operand #1 is in gm, not ub",
        ),
    ],
)
def test_dialect_additions_verify(body: str, message: str) -> None:
    text = KERNEL.replace(
        "BODY", "  %c1 = arith.constant 1 : index\n  %c32 = arith.constant 32 : index\n  " + body
    )
    text = (
        text.replace("SRC", "4xf32")
        .replace("DST", "4xf32")
        .replace("IN", "f32")
        .replace("OUT", "f32")
    )
    text = text.replace("CHIP", SPLIT)
    from xdsl.utils.exceptions import VerifyException

    from autofusion.diagnostics import UserError

    with pytest.raises((VerifyException, UserError), match=message):
        parse_module(default_context(), text, "k.mlir").verify()


def test_workspace_is_one_allocation_per_launch() -> None:
    """Block 0 writes the workspace, block 1 reads what block 0 wrote."""
    text = """
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %y = buffer.launch @k blocks(%c2) (%x) tiling(%c64) dims() : (tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
buffer.kernel @k(%in: memref<?xf32, #buffer.space<gm>>, %out: memref<?xf32, #buffer.space<gm>>, %ws_bytes: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
  %bid = buffer.block_idx
  %first = arith.cmpi eq, %bid, %c0 : index
  %b = buffer.alloc_buf "veccalc" %c8 max_bytes 32 -> memref<?xf32, #buffer.space<ub>>
  scf.if %first {
    buffer.copy %in to %b blocks %c1 x %c8 strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
    buffer.copy %b to %ws blocks %c1 x %c8 strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  } else {
    buffer.copy %ws to %b blocks %c1 x %c8 strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
    buffer.copy %b to %out blocks %c1 x %c8 strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  }
  buffer.return
}"""
    x = np.arange(8, dtype=np.float32)
    out = run_function(parse_module(default_context(), text, "w.mlir"), {"arg0": x})["out0"]
    np.testing.assert_array_equal(out, x)
