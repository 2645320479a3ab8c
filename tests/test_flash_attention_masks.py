"""graph.flash_attention's mask forms: an i1 mask true where a key is hidden
(mask_polarity = "hide", HF eager's `where(m, -inf, s)` without a `not` copy) and a fully
masked query row that gives NaN (masked_row = "nan", the unguarded softmax's value).

Differential at every level, fully masked rows included (NaN positions must match):
the rule (interpreter before == after), the attention and decode-attention kernels
(graph interpreter == buffer interpreter, and the emulated Ascend C), and the ONNX export
(ONNX Runtime == the interpreter).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_cube_kernels import SPLIT, attention_case, feeds_for, kernel_of, lowered, small_tiles
from test_decode_attention import key_blocks_of_32
from xdsl.dialects.builtin import ModuleOp

from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering.attention_plan import SATURATING_ARCHS
from autofusion.lowering.template import group_parts
from autofusion.lowering.template_registry import plan_group
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_rule import Refusal

from differential import check_pass

__all__ = ["key_blocks_of_32", "small_tiles"]  # fixtures used by name

FUSION = "graph-fusion{only=FlashAttentionFusionPass}"
TOLERANCE = {"f32": 1e-5, "f16": 2e-3}


# ---- the rule ------------------------------------------------------------------------

SCORES = """func.func @main(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4x{mask}>) -> tensor<1x2x4x8xf32> {{
  %ninf = graph.constant dense<"0x000080FF"> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %kt = graph.transpose %k {{perm = [0, 1, 3, 2]}} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = graph.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
{masking}
  %p = graph.softmax %sm {{axis = -1}} : tensor<1x2x4x4xf32>
{guard}
  %o = graph.matmul {probs}, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}}"""

MASKINGS = {
    # HF eager: true = hidden
    "inverted": "  %sm = graph.where %m, %ninf, %s : (tensor<1x1x4x4xi1>, tensor<f32>, "
    "tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>",
    # a single-use not of a true-is-hidden mask
    "not": "  %keep = graph.not %m : tensor<1x1x4x4xi1>\n"
    "  %sm = graph.where %keep, %s, %ninf : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, "
    "tensor<f32>) -> tensor<1x2x4x4xf32>",
    # an additive mask of 0 and -inf
    "additive": "  %sm = graph.add %s, %m : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> "
    "tensor<1x2x4x4xf32>",
}
GUARD = """  %mx = graph.reduce_max %sm {axes = [-1], keepdims = true} : tensor<1x2x4x4xf32> -> tensor<1x2x4x1xf32>
  %all = graph.equal %mx, %ninf : (tensor<1x2x4x1xf32>, tensor<f32>) -> tensor<1x2x4x1xi1>
  %pg = graph.where %all, %zero, %p : (tensor<1x2x4x1xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>"""


def _scores(mask: str, masking: str, guarded: bool) -> str:
    return SCORES.format(
        mask=mask,
        masking=MASKINGS[masking],
        guard=GUARD if guarded else "",
        probs="%pg" if guarded else "%p",
    )


def _hidden() -> np.ndarray:
    """[1, 1, 4, 4], true where a key is hidden: query 1 sees no key, the others some."""
    hidden = np.random.default_rng(3).random((1, 1, 4, 4)) < 0.5
    hidden[..., 0] = False
    hidden[..., 1, :] = True
    return hidden


def _rule_feeds(mask: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    feeds = {f"arg{i}": rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for i in range(3)}
    return {**feeds, "arg3": mask}


@pytest.mark.parametrize("masking", sorted(MASKINGS))
@pytest.mark.parametrize("guarded", [False, True])
def test_rule_keeps_the_fully_masked_rows(masking: str, guarded: bool) -> None:
    """Interpreter before == after the rewrite, NaN positions included: the unguarded
    softmax gives NaN on the fully masked query row, the guarded one 0, and the fused
    op says which (masked_row); the inverted mask is read as it is (mask_polarity)."""
    hidden = _hidden()
    additive = masking == "additive"
    mask = np.where(hidden, -np.inf, 0).astype(np.float32) if additive else hidden
    text = _scores("f32" if additive else "i1", masking, guarded)
    feeds = _rule_feeds(mask)
    want = run_function(parse_module(default_context(), text, "before.mlir"), feeds)["out0"]
    nan_rows = np.isnan(want).any(axis=-1)
    assert nan_rows[..., 1].all() != guarded and nan_rows.sum() == (0 if guarded else 2)
    fused = check_pass(text, FUSION, inputs=feeds)
    assert "graph.softmax" not in fused and "graph.not" not in fused
    assert ('masked_row = "nan"' in fused) != guarded
    assert ('mask_polarity = "hide"' in fused) == (masking in ("inverted", "not"))


def test_rule_without_a_masked_row_keeps_the_default() -> None:
    """where(not(m), s, -inf) with the guard: the polarity is "hide" and masked_row the
    default; the op's accessors say so."""
    text = _scores("i1", "not", guarded=True)
    fused = check_pass(text, FUSION, inputs=_rule_feeds(_hidden()))
    module = parse_module(default_context(), fused, "after.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, graph.FlashAttentionOp)]
    assert op.mask_hides and not op.nan_rows


# ---- the kernels ---------------------------------------------------------------------


def _graph(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "g.mlir")


def _with_forms(text: str, hide: bool, nan: bool) -> str:
    forms = ', mask_polarity = "hide"' * hide + ', masked_row = "nan"' * nan
    return text.replace('layout = "BNSD"}', f'layout = "BNSD"{forms}}}').replace(
        'layout = "BSND"}', f'layout = "BSND"{forms}}}'
    )


def _case(
    dims: tuple[int, ...], layout: str, mask: str, elt: str, forms: tuple[bool, bool], seed: int
) -> tuple[str, dict[str, np.ndarray]]:
    """An attention group with the mask forms and its inputs: feeds_for's masks (the last
    query row masked fully), inverted where true hides."""
    text, args = attention_case(dims, layout, False, mask, elt)
    feeds = feeds_for(args, seed)
    if forms[0]:
        feeds["arg3"] = ~feeds["arg3"]
    return _with_forms(text, *forms), feeds


def _compare(want: dict[str, np.ndarray], got: dict[str, np.ndarray], elt: str, nan: bool) -> None:
    """Same numbers and the same NaNs; NaN (or 0) exactly on the fully masked last row."""
    tol = TOLERANCE[elt]
    for key, w in want.items():
        w64, g64 = w.astype(np.float64), got[key].astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64), err_msg=f"{key}: NaNs")
        scale = max(1.0, float(np.nanmax(np.abs(w64))))
        np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * scale, err_msg=key)
        assert np.isnan(w64).any() == nan


# (chip, layout): the split chip's Compare + Select, 910's Min bounds, 310P3's coupled
# Compare + Select
KERNEL_CASES = [
    (SPLIT, (1, 4, 2, 37, 70, 16, 32), "BNSD", "f32"),
    (SPLIT, (2, 4, 2, 21, 50, 16, 16), "BNSD", "f16"),
    ("Ascend910", (1, 2, 1, 20, 64, 32, 32), "BNSD", "f16"),
    ("Ascend310P3", (1, 2, 1, 20, 64, 32, 32), "BNSD", "f16"),
]


@pytest.mark.parametrize(("chip", "dims", "layout", "elt"), KERNEL_CASES)
@pytest.mark.parametrize(("hide", "nan"), [(True, True), (True, False), (False, True)])
def test_attention_kernel_honours_the_mask_forms(
    chip: str,
    dims: tuple[int, ...],
    layout: str,
    elt: str,
    hide: bool,
    nan: bool,
    small_tiles: None,
) -> None:
    text, feeds = _case(dims, layout, "bool", elt, (hide, nan), 31)
    text = text.replace("{\n    %fa", 'plan {template = "attention"} {\n    %fa', 1)
    if nan and get_chip(chip).arch in SATURATING_ARCHS:  # NaN becomes 0 there: refused
        group = next(o for o in _graph(text).walk() if isinstance(o, graph.FusionGroupOp))
        refusal = plan_group(group_parts(group), get_chip(chip))
        assert isinstance(refusal, Refusal) and "saturation mode" in str(refusal)
        return
    after = lowered(text, chip)
    assert kernel_of(after).template.data == "attention"
    want = run_function(_graph(text), feeds)
    _compare(want, run_function(after, feeds), elt, nan)


@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_decode_attention_honours_the_mask_forms(elt: str, key_blocks_of_32: None) -> None:
    """GQA 4 x Sq 2 over 9 key splits: the second query row of each head is fully
    masked; the combine gives NaN there (l = 0 over every split)."""
    text, feeds = _case((1, 8, 2, 2, 777, 32, 16), "BNSD", "bool", elt, (True, True), 32)
    after = lowered(text, SPLIT)
    assert kernel_of(after).template.data == "decode_attention"
    want = run_function(_graph(text), feeds)
    _compare(want, run_function(after, feeds), elt, True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize("chip", [SPLIT, "Ascend910"])
def test_emulated_kernel_honours_the_mask_forms(chip: str, small_tiles: None) -> None:
    """The printed Ascend C (Compare EQ, or Min with -inf bounds on 910; the NaN select on
    the row's factor on 910B1) compiled against the emulator gives the interpreter's
    numbers."""
    dims = (1, 4, 2, 37, 70, 16, 32) if chip == SPLIT else (1, 2, 1, 20, 64, 32, 32)
    nan = chip == SPLIT  # 910 computes in saturation mode: masked_row nan is refused
    text, feeds = _case(dims, "BNSD", "bool", "f16", (True, nan), 33)
    text = text.replace("{\n    %fa", 'plan {template = "attention"} {\n    %fa', 1)
    after = lowered(text, chip)
    want = run_function(_graph(text), feeds)
    _compare(want, run_function_emulated(after, feeds), "f16", nan)


# ---- the ONNX export -----------------------------------------------------------------


@pytest.mark.parametrize("opset", [17, 23])
@pytest.mark.parametrize(("hide", "nan"), [(False, False), (True, False), (True, True)])
def test_onnx_export_honours_the_mask_forms(opset: int, hide: bool, nan: bool) -> None:
    """ONNX Runtime runs the export (the function, or Attention-23 where masked_row is
    zero) and gives the interpreter's numbers, NaN rows included."""
    pytest.importorskip("onnxruntime")
    from test_onnx_export import export_module, run_ort

    t, m = "tensor<1x2x4x8xf32>", "tensor<1x1x4x4xi1>"
    props = _with_forms('{causal = false, layout = "BNSD"}', hide, nan).replace(
        "{", "{scale = 0.35, ", 1
    )
    text = (
        f"func.func @main(%q: {t}, %k: {t}, %v: {t}, %m: {m}) -> {t} {{\n"
        f"  %r = graph.flash_attention %q, %k, %v, %m {props} : ({t}, {t}, {t}, {m}) -> {t}\n"
        f"  func.return %r : {t}\n}}"
    )
    module = parse_module(default_context(), text, "a.mlir")
    rng = np.random.default_rng(5)
    feeds = {f"arg{i}": rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for i in range(3)}
    feeds["arg3"] = _hidden() if hide else ~_hidden()
    want = run_function(module, feeds)
    model = export_module(module, opset)
    ops = [n.op_type for n in model.graph.node]
    assert ("Attention" in ops) == (opset >= 23 and not nan)
    assert ("Not" in ops) == (hide and "Attention" in ops)
    got = run_ort(model, feeds, {k: v.shape for k, v in want.items()})
    _compare(want, got, "f32", nan)
