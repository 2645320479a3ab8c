"""Ascend C for cube kernels: generated, compiled with g++ and run against the graph.

Every kernel kind the cube templates produce (matmul/gemm with bias, activation and an
elementwise epilogue; flash attention, causal and masked, with GQA; conv + bn + relu)
is built by the real pipeline from graph IR (`ub-fusion,lower-to-buffer`, with
`graph-fusion` first where a rewrite makes the cube op), printed by `-t ascendc`,
compiled with `g++ -std=c++17 -Wall -Werror` against the emulation header and run; its
outputs must match the graph interpreter's on the unfused graph. On Ascend910B1 the
cube and vector stages are a mix kernel: an AIC and its two AIVs, interleaved at their
cross-core flags by the emulator, which reports a missing flag. Small base tiles are
forced (as tests/test_cube_kernels.py does) so that small shapes still run several
cores, tails in M/N/K, several L1 stages and several key/value blocks. All cases of one
chip and element type share one compiled library (cached by content hash).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.codegen.ascendc_target import emit_ascendc
from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.interpreter import run_function
from autofusion.lowering import attention_plan, matmul_tiling
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

SPLIT = "Ascend910B1"
TOLERANCE = {"f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}


@contextmanager
def small_tiles() -> Iterator[None]:
    """Base tiles of 32 x 32 x 16 with two L0 steps per L1 stage; attention 16 x 32."""
    saved = (
        matmul_tiling.MN_CANDIDATES,
        matmul_tiling.K_CANDIDATES,
        matmul_tiling.STEP_K,
        attention_plan.Q_CANDIDATES,
        attention_plan.KV_CANDIDATES,
    )
    matmul_tiling.MN_CANDIDATES = ((32, 32), (16, 16))
    matmul_tiling.K_CANDIDATES = (16,)
    matmul_tiling.STEP_K = (2,)
    attention_plan.Q_CANDIDATES = (16,)
    attention_plan.KV_CANDIDATES = (32,)
    try:
        yield
    finally:
        (
            matmul_tiling.MN_CANDIDATES,
            matmul_tiling.K_CANDIDATES,
            matmul_tiling.STEP_K,
            attention_plan.Q_CANDIDATES,
            attention_plan.KV_CANDIDATES,
        ) = saved


def T(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{elt}>"


# ---------------------------------------------------------------------------------------
# Graph-level cases: one function each
# ---------------------------------------------------------------------------------------


def matmul_cases(e: str) -> dict[str, str]:
    """matmul + bias + gelu (M/N/K tails over 4 output tiles and 5 L1 stages); gemm with
    transposed B, alpha/beta, bias, relu and a residual; a matmul whose activation
    property is silu; a batched matmul broadcasting its weight; a decode-sized matmul
    (M in one tile) whose constant weight is read once, past L2."""
    m, k, n = 37, 70, 50
    weight = _dense(np.random.default_rng(3).standard_normal((40, 72)) * 0.3)
    return {
        "mm_decode_weight": f"""
func.func @mm_decode_weight(%a: {T((4, 40), e)}, %r: {T((4, 72), e)}) -> {T((4, 72), e)} {{
  %w = graph.constant dense<{weight}> : {T((40, 72), e)}
  %mm = graph.matmul %a, %w : ({T((4, 40), e)}, {T((40, 72), e)}) -> {T((4, 72), e)}
  %y = graph.add %mm, %r : {T((4, 72), e)}
  func.return %y : {T((4, 72), e)}
}}""",
        "mm_bias_gelu": f"""
func.func @mm_bias_gelu(%a: {T((m, k), e)}, %b: {T((k, n), e)}, %c: {T((n,), e)}) -> {T((m, n), e)} {{
  %mm = graph.matmul %a, %b : ({T((m, k), e)}, {T((k, n), e)}) -> {T((m, n), e)}
  %s = graph.add %mm, %c : ({T((m, n), e)}, {T((n,), e)}) -> {T((m, n), e)}
  %y = graph.gelu %s {{approximate = "none"}} : {T((m, n), e)}
  func.return %y : {T((m, n), e)}
}}""",
        "gemm_relu_residual": f"""
func.func @gemm_relu_residual(%a: {T((40, 48), e)}, %b: {T((33, 48), e)}, %c: {T((33,), e)}, %r: {T((40, 33), e)}) -> {T((40, 33), e)} {{
  %g = graph.gemm %a, %b, %c {{trans_a = false, trans_b = true, alpha = 0.5, beta = 2.0, activation = "relu"}} : ({T((40, 48), e)}, {T((33, 48), e)}, {T((33,), e)}) -> {T((40, 33), e)}
  %y = graph.add %g, %r : {T((40, 33), e)}
  func.return %y : {T((40, 33), e)}
}}""",
        "mm_silu": f"""
func.func @mm_silu(%a: {T((20, 40), e)}, %b: {T((40, 72), e)}, %c: {T((72,), e)}) -> {T((20, 72), e)} {{
  %y = graph.matmul %a, %b, %c {{activation = "silu"}} : ({T((20, 40), e)}, {T((40, 72), e)}, {T((72,), e)}) -> {T((20, 72), e)}
  func.return %y : {T((20, 72), e)}
}}""",
        "bmm_add": f"""
func.func @bmm_add(%a: {T((2, 3, 20, 24), e)}, %b: {T((24, 40), e)}, %r: {T((20, 40), e)}) -> {T((2, 3, 20, 40), e)} {{
  %mm = graph.matmul %a, %b : ({T((2, 3, 20, 24), e)}, {T((24, 40), e)}) -> {T((2, 3, 20, 40), e)}
  %y = graph.add %mm, %r : ({T((2, 3, 20, 40), e)}, {T((20, 40), e)}) -> {T((2, 3, 20, 40), e)}
  func.return %y : {T((2, 3, 20, 40), e)}
}}""",
    }


def attention(
    name: str, dims: tuple[int, ...], layout: str, causal: bool, mask: str, e: str
) -> str:
    """flash attention (+ a residual) over [B, H, S, D] dims (b, hq, hkv, sq, skv, d, dv)."""
    b, hq, hkv, sq, skv, d, dv = dims

    def shape(h: int, s: int, x: int) -> tuple[int, ...]:
        return (b, h, s, x) if layout == "BNSD" else (b, s, h, x)

    args = [("q", T(shape(hq, sq, d), e)), ("k", T(shape(hkv, skv, d), e))]
    args.append(("v", T(shape(hkv, skv, dv), e)))
    if mask == "bool":
        args.append(("m", T((b, 1, sq, skv), "i1")))
    elif mask == "keys":
        args.append(("m", T((skv,), "i1")))
    elif mask == "float":
        args.append(("m", T((1, hq, sq, skv), e)))
    elif mask == "positions":  # a causal mask by position: the ids of the sq tokens
        args.append(("m", T((sq,), "i64")))
    out = T(shape(hq, sq, dv), e)
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    operands = ", ".join(f"%{n}" for n, _ in args)
    types = ", ".join(t for _, t in args)
    props = f'{{scale = 0.35, causal = {str(causal).lower()}, layout = "{layout}"}}'
    return f"""
func.func @{name}({sig}, %r: {out}) -> {out} {{
  %fa = graph.flash_attention {operands} {props} : ({types}) -> {out}
  %y = graph.add %fa, %r : {out}
  func.return %y : {out}
}}"""


def attention_cases(e: str) -> dict[str, str]:
    """Causal (BNSD, several query and key/value blocks); GQA with a boolean mask that
    masks some query rows fully (they give 0); BSND with an additive mask; decoding
    (one query row: the second AIV has no rows); causal with a key padding mask; GQA
    BSND with a causal mask by position (shuffled position ids)."""

    def case(name: str, dims: tuple[int, ...], layout: str, causal: bool, mask: str) -> str:
        return attention(name, dims, layout, causal, mask, e)

    return {
        "fa_causal": case("fa_causal", (2, 2, 2, 40, 40, 16, 16), "BNSD", True, "none"),
        "fa_gqa_bool": case("fa_gqa_bool", (1, 4, 2, 37, 70, 16, 32), "BNSD", True, "bool"),
        "fa_bsnd_float": case("fa_bsnd_float", (1, 2, 1, 20, 50, 32, 16), "BSND", False, "float"),
        "fa_decode": case("fa_decode", (2, 4, 1, 1, 70, 32, 32), "BSND", False, "bool"),
        "fa_keys_causal": case("fa_keys_causal", (1, 4, 1, 33, 64, 16, 16), "BSND", True, "keys"),
        "fa_positions": case("fa_positions", (2, 4, 2, 45, 45, 16, 16), "BSND", False, "positions"),
    }


def _dense(values: np.ndarray) -> str:
    if values.ndim == 0:
        return f"{float(values):.6e}"
    return "[" + ", ".join(_dense(x) for x in values) + "]"


UNIT = "strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1"
SAME = "strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], group = 1"


def conv_bn_relu(
    name: str,
    x: tuple[int, ...],
    w: tuple[int, ...],
    o: tuple[int, ...],
    geometry: str,
    e: str,
    rng: np.random.Generator,
) -> str:
    """conv + batch norm (constant weights and statistics, drawn from `rng`) + relu."""
    co = w[0]
    c = T((co,), e)
    weights = _dense(rng.standard_normal(w) * 0.3)
    scale, shift = _dense(rng.uniform(0.5, 2, co)), _dense(rng.standard_normal(co))
    mean, var = _dense(rng.standard_normal(co)), _dense(rng.uniform(0.5, 2, co))
    return f"""
func.func @{name}(%x: {T(x, e)}) -> {T(o, e)} {{
  %w = graph.constant dense<{weights}> : {T(w, e)}
  %s = graph.constant dense<{scale}> : {c}
  %b = graph.constant dense<{shift}> : {c}
  %mu = graph.constant dense<{mean}> : {c}
  %v = graph.constant dense<{var}> : {c}
  %cv = graph.conv2d %x, %w {{{geometry}}} : ({T(x, e)}, {T(w, e)}) -> {T(o, e)}
  %n = graph.batch_norm %cv, %s, %b, %mu, %v {{epsilon = 1.0e-05}} : ({T(o, e)}, {c}, {c}, {c}, {c}) -> {T(o, e)}
  %y = graph.relu %n : {T(o, e)}
  func.return %y : {T(o, e)}
}}"""


def conv_bias_relu(
    name: str, x: tuple[int, ...], co: int, conv: tuple[int, int, int, int, int], e: str
) -> str:
    """conv (kernel, stride, pad, dilation, group) with a bias input + relu."""
    k, stride, pad, dil, group = conv
    n, c, h, w = x
    oh = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
    wt, b, o = T((co, c // group, k, k), e), T((co,), e), T((n, co, oh, ow), e)
    geometry = (
        f"strides = [{stride}, {stride}], pads = [{pad}, {pad}, {pad}, {pad}], "
        f"dilations = [{dil}, {dil}], group = {group}"
    )
    return f"""
func.func @{name}(%x: {T(x, e)}, %w: {wt}, %b: {b}) -> {o} {{
  %cv = graph.conv2d %x, %w, %b {{{geometry}}} : ({T(x, e)}, {wt}, {b}) -> {o}
  %y = graph.relu %cv : {o}
  func.return %y : {o}
}}"""


def conv_cases(e: str) -> dict[str, str]:
    """conv + batch norm + relu (graph-fusion folds the constant batch norm into the
    weights and a bias; the relu becomes the conv's activation) and conv + bias + relu:

    * pointwise (1x1, unit strides): per image the GEMM W [Cout x Cin] @ X [Cin x H*W];
    * every other conv on 910B: the AIVs gather each output tile's X_col into a
      workspace slot (explicit im2col), the AIC multiplies it: 3x3 stride 1 with the
      folded batch norm (two images, 90 pixels and 40 channels: pixel and channel
      tails over several cores), 3x3 stride 2, 5x5, dilation 2 with two groups,
      depthwise, and a 1x1 stride-2 projection (a ResNet shortcut)."""
    rng = np.random.default_rng(15)

    def bn_relu(
        name: str, x: tuple[int, ...], w: tuple[int, ...], o: tuple[int, ...], geometry: str
    ) -> str:
        return conv_bn_relu(name, x, w, o, geometry, e, rng)

    def bias_relu(
        name: str, x: tuple[int, ...], co: int, k: int, stride: int, pad: int, dil: int, group: int
    ) -> str:
        return conv_bias_relu(name, x, co, (k, stride, pad, dil, group), e)

    unit, same = UNIT, SAME
    return {
        "conv_bn_relu": bn_relu("conv_bn_relu", (2, 24, 7, 9), (40, 24, 1, 1), (2, 40, 7, 9), unit),
        "conv_bias_relu": bias_relu("conv_bias_relu", (1, 16, 11, 10), 24, 1, 1, 0, 1, 1),
        "conv3x3_bn_relu": bn_relu(
            "conv3x3_bn_relu", (2, 8, 9, 10), (40, 8, 3, 3), (2, 40, 9, 10), same
        ),
        "conv3x3_s2": bias_relu("conv3x3_s2", (1, 16, 11, 10), 24, 3, 2, 1, 1, 1),
        "conv5x5": bias_relu("conv5x5", (1, 6, 9, 8), 12, 5, 1, 2, 1, 1),
        "conv_dil2_grouped": bias_relu("conv_dil2_grouped", (1, 8, 12, 11), 12, 3, 1, 2, 2, 2),
        "conv_depthwise": bias_relu("conv_depthwise", (1, 8, 9, 10), 8, 3, 1, 1, 1, 8),
        "conv1x1_s2": bias_relu("conv1x1_s2", (2, 8, 9, 9), 16, 1, 2, 0, 1, 1),
    }


CASES = sorted([*matmul_cases("f32"), *attention_cases("f32"), *conv_cases("f32")])
_LIBRARIES: dict[tuple[str, str], tuple[ModuleOp, ModuleOp, EmulatedKernels]] = {}


def module_text(elt: str) -> str:
    cases = {**matmul_cases(elt), **attention_cases(elt), **conv_cases(elt)}
    return "\n".join(cases.values())


def library(chip: str, elt: str) -> tuple[ModuleOp, ModuleOp, EmulatedKernels]:
    """(graph module, lowered module, compiled kernels) of every case for chip/elt."""
    key = (chip, elt)
    if key not in _LIBRARIES:
        text = module_text(elt) if chip == SPLIT else "\n".join(coupled_cases(elt).values())
        graph_module = parse_module(default_context(), text, "cases.mlir")
        lowered = parse_module(default_context(), text, "cases.mlir")
        with small_tiles():
            apply_pipeline(
                lowered,
                f"set-target{{chip={chip}}},graph-fusion,ub-fusion,lower-to-buffer",
            )
        _LIBRARIES[key] = (graph_module, lowered, EmulatedKernels(lowered))
    return _LIBRARIES[key]


def feeds_for(module: ModuleOp, entry: str, seed: int) -> dict[str, np.ndarray]:
    """Random inputs; boolean masks attend to their first key and mask the last query
    row fully (when they have query rows)."""
    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    rng = np.random.default_rng(seed)
    feeds = {}
    for i, t in enumerate(f.function_type.inputs.data):
        shape = tuple(t.get_shape())
        if dtypes.type_name(t.element_type) == "i1":
            value = rng.random(shape) < 0.7
            value[..., 0] = True
            if len(shape) >= 2 and shape[-2] > 1:
                value[..., -1, :] = False
            feeds[f"arg{i}"] = value
        elif dtypes.type_name(t.element_type) == "i64":  # position ids, shuffled
            feeds[f"arg{i}"] = rng.permutation(shape[0]).astype(np.int64) + 5
        else:
            feeds[f"arg{i}"] = dtypes.to_storage(rng.standard_normal(shape), t.element_type)
    return feeds


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", CASES)
def test_cube_kernels_match_the_graph(case: str, elt: str) -> None:
    compare_with_the_graph(*library(SPLIT, elt), case, elt)


def compare_with_the_graph(
    graph_module: ModuleOp, lowered: ModuleOp, kernels: EmulatedKernels, case: str, elt: str
) -> None:
    """`case` is one kernel; run emulated, it gives what the graph interpreter gives."""
    launches = [
        op
        for op in lowered.walk()
        if isinstance(op, buffer.LaunchOp) and op.parent_op().sym_name.data == case  # type: ignore[union-attr]
    ]
    assert len(launches) == 1, f"{case}: ub-fusion made {len(launches)} kernels"
    feeds = feeds_for(graph_module, case, seed=len(case))
    want = run_function(graph_module, feeds, entry=case)
    got = run_function_emulated(lowered, feeds, entry=case, kernels=kernels)
    rtol, atol = TOLERANCE[elt]
    for key, value in want.items():
        w, g = value.astype(np.float64), got[key].astype(np.float64)
        assert not np.isnan(g).any(), f"{case} {key}: NaN (an unwritten or padded lane leaked)"
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale, err_msg=f"{case} {key}")
    if "fa_gqa" in case:  # the fully masked query rows give 0 (+ the residual)
        r = feeds["arg4"].astype(np.float64)
        np.testing.assert_allclose(g[..., -1, :], r[..., -1, :], rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------
# The structure of a mix kernel
# ---------------------------------------------------------------------------------------


def kernel_file(kernels: EmulatedKernels, case: str) -> str:
    (name,) = (n for n in kernels.files if re.fullmatch(rf"op_kernel/{case}_kernel\d+\.cpp", n))
    return kernels.files[name]


def test_mix_kernel_states_its_cores_and_flags() -> None:
    """The IR says where each part runs and how the cores hand tiles over; the printed
    kernel has the AIC and AIV sections and the cross-core flags it says."""
    _, lowered, kernels = library(SPLIT, "f16")
    ir = module_to_text(default_context(), lowered)
    for needle in (
        "buffer.sub_block_idx",
        'buffer.cross_core_set 0 from "aic" after "fix"',
        'buffer.cross_core_wait 0 on "aiv"',
        'buffer.cross_core_set 1 from "aiv" after "mte2"',
        'buffer.cross_core_wait 1 on "aic"',
    ):
        assert needle in ir
    code = kernel_file(kernels, "mm_bias_gelu")
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);" in code
    assert "int64_t bid = GetBlockIdx() / GetTaskRation();" in code
    assert "int64_t sub = GetSubBlockIdx();" in code
    assert "CrossCoreSetFlag<0x2, PIPE_FIX>(0);" in code
    assert "CrossCoreWaitFlag(1);" in code
    assert re.search(r"if ASCEND_IS_AIC \{\n\s+pipe\.InitBuffer\(q_a1", code)
    assert re.search(r"if ASCEND_IS_AIV \{\n\s+Compute\(", code)
    attention = kernel_file(kernels, "fa_gqa_bool")
    for flag in range(3):
        assert f"CrossCoreWaitFlag({flag});" in attention


def test_a_weight_read_once_is_read_past_l2() -> None:
    """M fits one tile: each band of the constant weight is read once, so the kernel
    reads it past L2 (lowering/l2_hint.py); A, re-read for every N tile, and the
    residual, a graph input, use L2. The attribute and the API call say the same."""
    graph_module, lowered, kernels = library(SPLIT, "f16")
    (kernel,) = (
        op
        for op in lowered.ops
        if isinstance(op, buffer.KernelOp) and op.sym_name.data.startswith("mm_decode_weight")
    )
    assert str(kernel.attributes[buffer.L2_BYPASS_ATTR]) == "[1 : i64]"  # B, in1
    # the buffer interpreter runs it as it is (the hint changes no values)
    feeds = feeds_for(graph_module, "mm_decode_weight", seed=2)
    want = run_function(graph_module, feeds, entry="mm_decode_weight")
    got = run_function(lowered, feeds, entry="mm_decode_weight")
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=2e-3, atol=2e-3)
    code = kernel_file(kernels, "mm_decode_weight")
    assert re.findall(r"(\w+)\.SetL2CacheHint\(CacheMode::CACHE_MODE_DISABLE\);", code) == ["in1Gm"]
    for case in ("mm_bias_gelu", "bmm_add"):  # M over several tiles, a broadcast weight
        assert "SetL2CacheHint" not in kernel_file(kernels, case)


def test_missing_cross_core_flag_is_caught() -> None:
    """Without the AIC's set, the AIVs' wait never returns (the interpreter and the
    emulator report it); without the AIVs' wait, or with a set that does not wait for
    the Fixpipe, the emulator reports the AIVs reading workspace bytes the AIC writes
    without a flag between."""
    graph_module, lowered, _ = library(SPLIT, "f32")
    text = module_to_text(default_context(), lowered)
    feeds = feeds_for(graph_module, "mm_silu", seed=1)
    no_set = text.replace('buffer.cross_core_set 0 from "aic" after "fix"\n', "")
    broken = parse_module(default_context(), no_set, "broken.mlir")
    with pytest.raises(Exception, match=r"without a matching buffer\.cross_core_set"):
        run_function(broken, feeds, entry="mm_silu")
    with pytest.raises(UserError, match=r"CrossCoreWaitFlag.*without a matching CrossCoreSetFlag"):
        run_function_emulated(broken, feeds, entry="mm_silu")
    no_wait = re.sub(r'\n\s*buffer.cross_core_wait 0 on "aiv"', "", text)
    racy = parse_module(default_context(), no_wait, "racy.mlir")
    with pytest.raises(UserError, match=r"(never waited for|without a cross-core flag)"):
        run_function_emulated(racy, feeds, entry="mm_silu")
    # a set that waits for the wrong pipe does not order the Fixpipe's writes
    wrong_pipe = text.replace('0 from "aic" after "fix"', '0 from "aic" after "mte2"')
    early = parse_module(default_context(), wrong_pipe, "early.mlir")
    with pytest.raises(
        UserError, match=r"the AIV reads workspace bytes the AIC wrote on PIPE_FIX without a"
    ):
        run_function_emulated(early, feeds, entry="mm_silu")


def test_float_gemm_with_transposed_a_stays_a_library_op() -> None:
    """A transposed float A operand needs LoadData3DV2's enTranspose (not emitted): the
    matmul template refuses it, so the gemm stays a library op and the epilogue a kernel
    of its own; the buffer verifier rejects such a load in hand-written IR
    (tests/filecheck/dialects/buffer/invalid-transposed-float-a.mlir)."""
    text = f"""
func.func @main(%a: {T((48, 40), "f32")}, %b: {T((48, 32), "f32")}) -> {T((40, 32), "f32")} {{
  %g = graph.gemm %a, %b {{trans_a = true, trans_b = false, alpha = 1.0, beta = 1.0}} : ({T((48, 40), "f32")}, {T((48, 32), "f32")}) -> {T((40, 32), "f32")}
  %y = graph.relu %g : {T((40, 32), "f32")}
  func.return %y : {T((40, 32), "f32")}
}}"""
    module = parse_module(default_context(), text, "t.mlir")
    apply_pipeline(module, f"set-target{{chip={SPLIT}}},ub-fusion,lower-to-buffer")
    ir = module_to_text(default_context(), module)
    assert "graph.gemm" in ir and "l0a" not in ir
    assert "LoadData" not in emit_ascendc(module)


# ---------------------------------------------------------------------------------------
# Coupled chips (Ascend910, Ascend310P3): one AI Core, CO1 -> CO2 into UB
# ---------------------------------------------------------------------------------------

COUPLED = ("Ascend910", "Ascend310P3")


def coupled_cases(e: str) -> dict[str, str]:
    """The kinds again, in half (the coupled chips' cube has no float32) and with 32-byte
    rows (their DataCopy has no DataCopyPad): matmul + bias + gelu (M, N, K tails over
    4 output tiles), gemm with transposed B, alpha/beta, bias, relu and a residual;
    flash attention causal, GQA with a boolean mask masking a query row fully, BSND
    with an additive mask; conv + batch norm + relu 3x3 (two images, pixel and channel
    tails), conv + bias + relu 3x3 stride 2 and pointwise. The result leaves L0C by
    CO1 -> CO2 as Nz fractals, reordered into rows in UB; a conv's X_col is gathered in
    UB (Gather on 310P, the scalar unit on 910) and copied into L1 in C0 strips."""
    rng = np.random.default_rng(21)
    m, k, n = 37, 80, 48
    mm = f"""
func.func @c_mm_bias_gelu(%a: {T((m, k), e)}, %b: {T((k, n), e)}, %c: {T((n,), e)}) -> {T((m, n), e)} {{
  %mm = graph.matmul %a, %b : ({T((m, k), e)}, {T((k, n), e)}) -> {T((m, n), e)}
  %s = graph.add %mm, %c : ({T((m, n), e)}, {T((n,), e)}) -> {T((m, n), e)}
  %y = graph.gelu %s {{approximate = "none"}} : {T((m, n), e)}
  func.return %y : {T((m, n), e)}
}}"""
    gemm = f"""
func.func @c_gemm_relu_residual(%a: {T((40, 48), e)}, %b: {T((32, 48), e)}, %c: {T((32,), e)}, %r: {T((40, 32), e)}) -> {T((40, 32), e)} {{
  %g = graph.gemm %a, %b, %c {{trans_a = false, trans_b = true, alpha = 0.5, beta = 2.0, activation = "relu"}} : ({T((40, 48), e)}, {T((32, 48), e)}, {T((32,), e)}) -> {T((40, 32), e)}
  %y = graph.add %g, %r : {T((40, 32), e)}
  func.return %y : {T((40, 32), e)}
}}"""
    return {
        "c_mm_bias_gelu": mm,
        "c_gemm_relu_residual": gemm,
        "c_fa_causal": attention("c_fa_causal", (2, 2, 2, 40, 64, 16, 16), "BNSD", True, "none", e),
        "c_fa_gqa_bool": attention(
            "c_fa_gqa_bool", (1, 4, 2, 37, 64, 16, 32), "BNSD", True, "bool", e
        ),
        "c_fa_bsnd_float": attention(
            "c_fa_bsnd_float", (1, 2, 1, 20, 64, 32, 16), "BSND", False, "float", e
        ),
        "c_conv3x3_bn_relu": conv_bn_relu(
            "c_conv3x3_bn_relu", (2, 16, 6, 16), (48, 16, 3, 3), (2, 48, 6, 16), SAME, e, rng
        ),
        "c_conv3x3_s2": conv_bias_relu("c_conv3x3_s2", (1, 16, 8, 16), 32, (3, 2, 1, 1, 1), e),
        "c_conv1x1": conv_bias_relu("c_conv1x1", (2, 16, 4, 16), 32, (1, 1, 0, 1, 1), e),
    }


@pytest.mark.parametrize("chip", COUPLED)
@pytest.mark.parametrize("case", sorted(coupled_cases("f16")))
def test_coupled_cube_kernels_match_the_graph(case: str, chip: str) -> None:
    compare_with_the_graph(*library(chip, "f16"), case, "f16")


def test_coupled_kernels_move_fractals_through_ub_on_one_core() -> None:
    """The printed coupled kernels: CO1 -> CO2 with DataCopyEnhancedParams in
    BLOCK_MODE_MATRIX into a UB stage, the Nz -> ND reorder as strided DataCopy, no
    Fixpipe, DataCopyPad or workspace; a conv's X_col reaches L1 in C0 strips, gathered
    by Gather on 310P and by GetValue/SetValue on 910 (which has no Gather)."""
    for chip in COUPLED:
        _, lowered, kernels = library(chip, "f16")
        ir = module_to_text(default_context(), lowered)
        assert "buffer.workspace" not in ir and "buffer.im2col" not in ir
        code = kernel_file(kernels, "c_mm_bias_gelu")
        assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AICORE);" in code
        assert "co2Enhanced.blockMode = BlockMode::BLOCK_MODE_MATRIX;" in code
        assert re.search(r"DataCopy\(c_ub\[j \* .*\], c_out\[.*\], co2Params, co2Enhanced\);", code)
        assert re.search(r"DataCopy\(slot\[j\d* \* 16\], c_ub\[.*\], nz2ndParams\d*\);", code)
        for absent in ("Fixpipe", "DataCopyPad", "CrossCore", "ASCEND_IS_"):
            assert absent not in code
        assert ("GET_TILING_DATA" in code) == (chip != "Ascend910")
        attention_code = kernel_file(kernels, "c_fa_gqa_bool")
        assert "DataCopy(c_ub, s_c, co2Params, co2Enhanced);" in attention_code
        # 910 has only Select mode VSEL_CMPMASK_SPR: it masks with Min against +/-inf
        assert ("Select(" in attention_code) == (chip != "Ascend910")
        conv = kernel_file(kernels, "c_conv3x3_s2")
        assert "DataCopy(b1[strip * " in conv and "stripParams" in conv
        assert ("Gather(" in conv) == (chip == "Ascend310P3")
        assert ("fmap.GetValue(" in conv) == (chip == "Ascend910")


@pytest.mark.parametrize("chip", COUPLED)
def test_float32_cube_ops_stay_library_ops_on_coupled_chips(chip: str) -> None:
    """The coupled chips' cube takes half (and int8): a float32 matmul is refused
    (tests/test_cube_kernels.py checks the reason) and runs as a library op; its
    epilogue is a vector kernel."""
    text = coupled_cases("f32")["c_mm_bias_gelu"]
    module = parse_module(default_context(), text, "t.mlir")
    with small_tiles():
        apply_pipeline(module, f"set-target{{chip={chip}}},ub-fusion,lower-to-buffer")
    ir = module_to_text(default_context(), module)
    assert "graph.matmul" in ir and 'template = "matmul"' not in ir
    kernels = EmulatedKernels(module)
    graph_module = parse_module(default_context(), text, "t.mlir")
    feeds = feeds_for(graph_module, "c_mm_bias_gelu", seed=3)
    want = run_function(graph_module, feeds, entry="c_mm_bias_gelu")
    got = run_function_emulated(module, feeds, entry="c_mm_bias_gelu", kernels=kernels)
    np.testing.assert_allclose(got["out0"], want["out0"], rtol=2e-5, atol=2e-5)


GATHER = r"""
#include <cstdio>
#include <string>
#include "kernel_operator.h"
using namespace AscendC;

template <int Shift>
static void Gathers()
{
    TPipe pipe; TBuf<QuePosition::VECCALC> s, d, o;
    pipe.InitBuffer(s, 64); pipe.InitBuffer(d, 64); pipe.InitBuffer(o, 64);
    LocalTensor<float> src = s.Get<float>(), dst = d.Get<float>();
    LocalTensor<int32_t> off = o.Get<int32_t>();
    for (int i = 0; i < 16; ++i) { src.SetValue(i, static_cast<float>(i)); off.SetValue(i, (15 - i) * 4 + Shift); }
    PipeBarrier<PIPE_ALL>();
    Gather(dst, src, off.ReinterpretCast<uint32_t>(), 0, 16);
    PipeBarrier<PIPE_ALL>();
    for (int i = 0; i < 16; ++i) { std::printf("%g ", dst.GetValue(i)); }
}

int main(int argc, char** argv)
{
    const std::string name = argc > 1 ? argv[1] : "";
    if (name == "reverse") { emu::RunBlocks(1, Gathers<0>); return 0; }
    if (name == "unaligned") { emu::RunBlocks(1, Gathers<2>); return 0; }
    if (name == "outside") { emu::RunBlocks(1, Gathers<4>); return 0; }
    if (name == "on310p") {
        emu::ChipConfig c = emu::DefaultChipConfig(); c.name = "Ascend310P3"; c.arch = 2002; emu::SetChipConfig(c);
        emu::RunBlocks(1, Gathers<0>); return 0;
    }
    if (name == "on910") {
        emu::ChipConfig c = emu::DefaultChipConfig(); c.name = "Ascend910"; c.arch = 1001; emu::SetChipConfig(c);
        emu::RunBlocks(1, Gathers<0>); return 0;
    }
    return 2;
}
"""


def test_emulated_gather_checks_its_offsets(tmp_path: Path) -> None:
    """Gather (asc-devkit Gather.md): dst[i] = src at byte offset srcOffset[i]; offsets
    that are not element multiples or leave src's buffer, and 910 (no Gather; A2/A3 and
    310P's AI Core have it), abort the emulation."""
    from autofusion.codegen import emulate

    src, exe = tmp_path / "gather.cpp", tmp_path / "gather"
    src.write_text(GATHER)
    subprocess.run(
        [emulate.CXX, *emulate.CXXFLAGS, f"-I{emulate.INCLUDE_DIR}", str(src), "-o", str(exe)],
        check=True,
    )
    for chip in ("reverse", "on310p"):
        done = subprocess.run([str(exe), chip], capture_output=True, text=True, check=True)
        assert done.stdout.split() == [str(i) for i in range(15, -1, -1)]
    for case, message in (
        ("unaligned", r"Gather: srcBaseAddr \+ srcOffset\[0\] = 62 bytes is not a multiple of 4"),
        ("outside", r"Gather: an offset reaches element 16 of src, which has 16 from its address"),
        ("on910", r"Gather is not available on Ascend910 \(Atlas A2/A3 and the Atlas inference"),
    ):
        done = subprocess.run([str(exe), case], capture_output=True, text=True, check=False)
        assert done.returncode != 0 and re.search(message, done.stderr), done.stderr


CO2 = r"""
#include <string>
#include "kernel_operator.h"
using namespace AscendC;

static void Copy(const std::string& how)
{
    TPipe pipe; TBuf<QuePosition::CO1> c; TBuf<QuePosition::VECCALC> u;
    pipe.InitBuffer(c, 4096); pipe.InitBuffer(u, 4096);
    LocalTensor<float> l0c = c.Get<float>(), ub = u.Get<float>();
    DataCopyEnhancedParams e;
    e.blockMode = how == "normal" ? BlockMode::BLOCK_MODE_NORMAL
                  : how == "vector" ? BlockMode::BLOCK_MODE_VECTOR : BlockMode::BLOCK_MODE_MATRIX;
    DataCopyParams p{1, static_cast<uint16_t>(how == "overrun" ? 5 : 2), static_cast<uint16_t>(how == "stride"), 0};
    DataCopy(ub, how == "offset" ? l0c[64] : l0c, p, e);
}

static void FloatMmad()
{
    TPipe pipe; TBuf<QuePosition::CO1> c; TBuf<QuePosition::A2> a; TBuf<QuePosition::B2> b;
    pipe.InitBuffer(c, 1024); pipe.InitBuffer(a, 1024); pipe.InitBuffer(b, 1024);
    MmadParams p; p.m = 16; p.n = 16; p.k = 8;
    Mmad(c.Get<float>(), a.Get<float>(), b.Get<float>(), p);
}

int main(int argc, char** argv)
{
    const std::string name = argc > 1 ? argv[1] : "";
    if (name != "split") {
        emu::ChipConfig c = emu::DefaultChipConfig();
        c.name = "Ascend910"; c.arch = 1001; c.coupled = true; c.dataCopyPad = false;
        emu::SetChipConfig(c);
    }
    if (name == "mmad") { emu::RunBlocks(1, FloatMmad); return 0; }
    emu::RunBlocks(1, [&]() { Copy(name); });
    return 0;
}
"""


def test_emulated_co1_to_co2_checks_its_parameters(tmp_path: Path) -> None:
    """DataCopy with DataCopyEnhancedParams from CO1 to CO2 (coupled chips only): whole
    16x16 fractals in BLOCK_MODE_MATRIX from a fractal boundary, no gaps (their unit in
    that mode has no public source); a float32 Mmad on a coupled chip aborts too."""
    from autofusion.codegen import emulate

    src, exe = tmp_path / "co2.cpp", tmp_path / "co2"
    src.write_text(CO2)
    subprocess.run(
        [emulate.CXX, *emulate.CXXFLAGS, f"-I{emulate.INCLUDE_DIR}", str(src), "-o", str(exe)],
        check=True,
    )
    subprocess.run([str(exe), "ok"], capture_output=True, text=True, check=True)
    for case, message in (
        ("normal", r"CO1 -> CO2 takes blockMode BLOCK_MODE_MATRIX or BLOCK_MODE_VECTOR"),
        ("vector", r"BLOCK_MODE_VECTOR \(1x16 blocks\) is not emulated"),
        ("stride", r"srcStride/dstStride of BLOCK_MODE_MATRIX are not emulated"),
        ("offset", r"src address 256 in L0C does not start a 16x16 fractal \(1024 bytes\)"),
        ("overrun", r"src has 1024 elements from its address, the call touches 1280"),
        ("split", r"CO1 -> CO2 \(L0C -> UB\) exists on coupled chips \(910, 310P\) only"),
        ("mmad", r"Mmad: Ascend910 has no float cube"),
    ):
        done = subprocess.run([str(exe), case], capture_output=True, text=True, check=False)
        assert done.returncode != 0 and re.search(message, done.stderr), (case, done.stderr)


# ---------------------------------------------------------------------------------------
# A ResNet basic block end to end
# ---------------------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
AFC = str(Path(sys.executable).parent / "afc")


def afc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AFC, *args], capture_output=True, text=True, check=False, cwd=cwd, timeout=600
    )


def test_resnet_block_compiles_and_its_kernels_run(tmp_path: Path) -> None:
    """examples/resnet_block.afc (3x3 stride 2, 3x3 and a 1x1 stride-2 shortcut, each
    with its batch norm folded, ReLUs and the residual add fused) compiles with its
    shape-only weights; with weights from an .npz, `afc run --emulate` on the buffer IR
    it writes (three conv mix kernels) matches the interpreter on the model."""
    done = afc("compile", str(EXAMPLES / "resnet_block.afc"), "-o", "shapes", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "shapes" / "kernels" / "op_kernel").glob("*.cpp"))) == 3
    rng = np.random.default_rng(3)
    weights: dict[str, np.ndarray] = {}

    def from_npz(m: re.Match[str]) -> str:
        name, dims = m.group(1), [int(d) for d in m.group(2).split(",")]
        if name.endswith(("_var", "_scale")):
            weights[name] = rng.uniform(0.5, 2, dims).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(dims) * 0.1).astype(np.float32)
        return f'weight {name}: f32[{m.group(2)}] from "w.npz"'

    model = (EXAMPLES / "resnet_block.afc").read_text()
    (tmp_path / "rb.afc").write_text(re.sub(r"weight (\w+): f32\[([0-9, ]+)\]", from_npz, model))
    np.savez(tmp_path / "w.npz", **weights)  # type: ignore[arg-type]
    done = afc("compile", "rb.afc", "-o", "out", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ir = (tmp_path / "out" / "buffer.mlir").read_text()
    assert ir.count("buffer.launch") == 3 and ir.count("buffer.vgather") == 3
    for args in (("out/buffer.mlir", "--emulate", "-o", "emu.npz"), ("rb.afc", "-o", "ref.npz")):
        done = afc("run", *args, "--random-inputs", "0", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    got, want = np.load(tmp_path / "emu.npz"), np.load(tmp_path / "ref.npz")
    y, ref = got["y"].astype(np.float64), want["y"].astype(np.float64)
    assert y.shape == ref.shape and y.shape[1:] == (128, 28, 28)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
