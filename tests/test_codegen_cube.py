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
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from autofusion import dtypes
from autofusion.codegen.ascendc import emit_ascendc
from autofusion.codegen.emulate import EmulatedKernels, run_function_emulated
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.interpreter import run_function
from autofusion.lowering import attention_kernel, matmul_kernel
from autofusion.mlir_io import default_context, module_to_text, parse_module

from differential import apply_pipeline

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")

SPLIT = "Ascend910B1"
TOLERANCE = {"f32": (2e-5, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}


@contextmanager
def small_tiles() -> Iterator[None]:
    """Base tiles of 32 x 32 x 16 with two L0 steps per L1 stage; attention 16 x 32."""
    saved = (
        matmul_kernel.MN_CANDIDATES,
        matmul_kernel.K_CANDIDATES,
        matmul_kernel.STEP_K,
        attention_kernel.Q_CANDIDATES,
        attention_kernel.KV_CANDIDATES,
    )
    matmul_kernel.MN_CANDIDATES = ((32, 32), (16, 16))
    matmul_kernel.K_CANDIDATES = (16,)
    matmul_kernel.STEP_K = (2,)
    attention_kernel.Q_CANDIDATES = (16,)
    attention_kernel.KV_CANDIDATES = (32,)
    try:
        yield
    finally:
        (
            matmul_kernel.MN_CANDIDATES,
            matmul_kernel.K_CANDIDATES,
            matmul_kernel.STEP_K,
            attention_kernel.Q_CANDIDATES,
            attention_kernel.KV_CANDIDATES,
        ) = saved


def T(shape: tuple[int, ...], elt: str) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{elt}>"


# ---------------------------------------------------------------------------------------
# Graph-level cases: one function each
# ---------------------------------------------------------------------------------------


def matmul_cases(e: str) -> dict[str, str]:
    """matmul + bias + gelu (M/N/K tails over 4 output tiles and 5 L1 stages); gemm with
    transposed B, alpha/beta, bias, relu and a residual; a matmul whose activation
    property is silu; a batched matmul broadcasting its weight."""
    m, k, n = 37, 70, 50
    return {
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


def attention_cases(e: str) -> dict[str, str]:
    """Causal (BNSD, several query and key/value blocks); GQA with a boolean mask that
    masks some query rows fully (they give 0); BSND with an additive mask; decoding
    (one query row: the second AIV has no rows); causal with a key padding mask."""

    def case(name: str, dims: tuple[int, ...], layout: str, causal: bool, mask: str) -> str:
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

    return {
        "fa_causal": case("fa_causal", (2, 2, 2, 40, 40, 16, 16), "BNSD", True, "none"),
        "fa_gqa_bool": case("fa_gqa_bool", (1, 4, 2, 37, 70, 16, 32), "BNSD", True, "bool"),
        "fa_bsnd_float": case("fa_bsnd_float", (1, 2, 1, 20, 50, 32, 16), "BSND", False, "float"),
        "fa_decode": case("fa_decode", (2, 4, 1, 1, 70, 32, 32), "BSND", False, "bool"),
        "fa_keys_causal": case("fa_keys_causal", (1, 4, 1, 33, 64, 16, 16), "BSND", True, "keys"),
    }


def _dense(values: np.ndarray) -> str:
    if values.ndim == 0:
        return f"{float(values):.6e}"
    return "[" + ", ".join(_dense(x) for x in values) + "]"


def conv_cases(e: str) -> dict[str, str]:
    """conv + batch norm + relu (graph-fusion folds the constant batch norm into the
    weights and a bias) and conv + bias + relu, pointwise: per image the GEMM
    W [Cout x Cin] @ X [Cin x H*W] (several pixel tiles with a tail, output channels
    with a tail). A conv with a larger kernel needs LoadData3DV2 (see the error test)."""
    rng = np.random.default_rng(15)
    w = _dense(rng.standard_normal((40, 24, 1, 1)) * 0.3)
    scale, shift = _dense(rng.uniform(0.5, 2, 40)), _dense(rng.standard_normal(40))
    mean, var = _dense(rng.standard_normal(40)), _dense(rng.uniform(0.5, 2, 40))
    x, o, c = T((2, 24, 7, 9), e), T((2, 40, 7, 9), e), T((40,), e)
    geometry = "strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1"
    return {
        "conv_bn_relu": f"""
func.func @conv_bn_relu(%x: {x}) -> {o} {{
  %w = graph.constant dense<{w}> : {T((40, 24, 1, 1), e)}
  %s = graph.constant dense<{scale}> : {c}
  %b = graph.constant dense<{shift}> : {c}
  %mu = graph.constant dense<{mean}> : {c}
  %v = graph.constant dense<{var}> : {c}
  %cv = graph.conv2d %x, %w {{{geometry}}} : ({x}, {T((40, 24, 1, 1), e)}) -> {o}
  %n = graph.batch_norm %cv, %s, %b, %mu, %v {{epsilon = 1.0e-05}} : ({o}, {c}, {c}, {c}, {c}) -> {o}
  %y = graph.relu %n : {o}
  func.return %y : {o}
}}""",
        "conv_bias_relu": f"""
func.func @conv_bias_relu(%x: {T((1, 16, 11, 10), e)}, %w: {T((24, 16, 1, 1), e)}, %b: {T((24,), e)}) -> {T((1, 24, 11, 10), e)} {{
  %cv = graph.conv2d %x, %w, %b {{{geometry}}} : ({T((1, 16, 11, 10), e)}, {T((24, 16, 1, 1), e)}, {T((24,), e)}) -> {T((1, 24, 11, 10), e)}
  %y = graph.relu %cv : {T((1, 24, 11, 10), e)}
  func.return %y : {T((1, 24, 11, 10), e)}
}}""",
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
        text = module_text(elt)
        graph_module = parse_module(default_context(), text, "cases.mlir")
        lowered = parse_module(default_context(), text, "cases.mlir")
        with small_tiles():
            apply_pipeline(
                lowered,
                f"graph-fusion,ub-fusion{{chip={chip}}},lower-to-buffer{{chip={chip}}}",
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
        else:
            feeds[f"arg{i}"] = dtypes.to_storage(rng.standard_normal(shape), t.element_type)
    return feeds


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("case", CASES)
def test_cube_kernels_match_the_graph(case: str, elt: str) -> None:
    graph_module, lowered, kernels = library(SPLIT, elt)
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
    if case.startswith("fa_gqa"):  # the fully masked query rows give 0 (+ the residual)
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


def test_float_gemm_with_transposed_a_is_a_clear_error() -> None:
    """A transposed float A operand needs LoadData3DV2's enTranspose (not printed)."""
    text = f"""
func.func @main(%a: {T((48, 40), "f32")}, %b: {T((48, 32), "f32")}) -> {T((40, 32), "f32")} {{
  %g = graph.gemm %a, %b {{trans_a = true, trans_b = false, alpha = 1.0, beta = 1.0}} : ({T((48, 40), "f32")}, {T((48, 32), "f32")}) -> {T((40, 32), "f32")}
  %y = graph.relu %g : {T((40, 32), "f32")}
  func.return %y : {T((40, 32), "f32")}
}}"""
    module = parse_module(default_context(), text, "t.mlir")
    apply_pipeline(module, f"ub-fusion{{chip={SPLIT}}},lower-to-buffer{{chip={SPLIT}}}")
    with pytest.raises(UserError, match="a transposed float A operand") as info:
        emit_ascendc(module)
    assert "\n" not in str(info.value)
