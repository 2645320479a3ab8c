"""Named fused ops against independent numpy formulations of the subgraphs they replace."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

RNG = np.random.default_rng(7)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def run(text: str, **inputs: np.ndarray) -> dict[str, np.ndarray]:
    module = parse_module(default_context(), text, "fused.mlir")
    return run_function(module, {f"arg{i}": v for i, v in enumerate(inputs.values())})


def sdpa_reference(q, k, v, mask, scale, causal):  # type: ignore[no-untyped-def]
    """torch-style SDPA in float64 with explicit repeat_kv, one head at a time."""
    b, hq, sq, _ = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    out = np.zeros((b, hq, sq, v.shape[-1]))
    for n in range(b):
        for h in range(hq):
            kv = h // (hq // hkv)
            s = scale * q[n, h].astype(np.float64) @ k[n, kv].T.astype(np.float64)
            if mask is not None:
                m = np.broadcast_to(mask, (b, hq, sq, skv))[n, h]
                s = np.where(m, s, -np.inf) if mask.dtype == bool else s + m
            if causal:
                s = np.where(np.tril(np.ones((sq, skv), bool)), s, -np.inf)
            p = np.exp(s - s.max(-1, keepdims=True))
            out[n, h] = (p / p.sum(-1, keepdims=True)) @ v[n, kv]
    return out


@pytest.mark.parametrize("hkv", [4, 2, 1])
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "positions"])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(hkv: int, mask_kind: str, causal: bool) -> None:
    q, k, v = f32(2, 4, 5, 8), f32(2, hkv, 5, 8), f32(2, hkv, 5, 6)
    mask = None
    mtype = ""
    if mask_kind == "bool":
        mask = RNG.random((2, 1, 1, 5)) < 0.7
        mask[..., 0] = True  # no fully masked row
        mtype = "tensor<2x1x1x5xi1>"
    elif mask_kind == "float":
        mask = f32(1, 4, 5, 5)
        mtype = "tensor<1x4x5x5xf32>"
    elif mask_kind == "positions":  # ids in shuffled order: key j hidden where ids[j] > ids[i]
        mask = RNG.permutation(5).astype(np.int64) * 3
        mtype = "tensor<5xi64>"
    kt, vt = f"tensor<2x{hkv}x5x8xf32>", f"tensor<2x{hkv}x5x6xf32>"
    operands = "%q, %k, %v" + (", %m" if mask is not None else "")
    types = f"tensor<2x4x5x8xf32>, {kt}, {vt}" + (f", {mtype}" if mask is not None else "")
    args = f"%q: tensor<2x4x5x8xf32>, %k: {kt}, %v: {vt}" + (
        f", %m: {mtype}" if mask is not None else ""
    )
    text = f"""
func.func @main({args}) -> tensor<2x4x5x6xf32> {{
  %r = graph.flash_attention {operands} {{scale = 0.35, causal = {str(causal).lower()}, layout = "BNSD"}} : ({types}) -> tensor<2x4x5x6xf32>
  func.return %r : tensor<2x4x5x6xf32>
}}"""
    feeds = {"q": q, "k": k, "v": v} | ({"m": mask} if mask is not None else {})
    got = run(text, **feeds)["out0"]
    if mask_kind == "positions":  # the boolean mask the ids stand for
        mask = mask[None, :] <= mask[:, None]
    np.testing.assert_allclose(
        got, sdpa_reference(q, k, v, mask, 0.35, causal), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_flash_attention_fully_masked_row_is_zero(kind: str) -> None:
    """A query row whose keys are all masked attends to nothing: 0, as torch SDPA gives
    (a plain softmax of all -inf would be NaN); the other rows are unchanged."""
    q, k, v = f32(1, 2, 3, 8), f32(1, 2, 4, 8), f32(1, 2, 4, 6)
    keep = np.array([[True, False, True, True], [False] * 4, [True, True, False, True]])
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf).astype(np.float32)
    mtype = "tensor<3x4xi1>" if kind == "bool" else "tensor<3x4xf32>"
    text = f"""
func.func @main(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x6xf32>, %m: {mtype}) -> tensor<1x2x3x6xf32> {{
  %r = graph.flash_attention %q, %k, %v, %m {{scale = 0.35, causal = false, layout = "BNSD"}} : (tensor<1x2x3x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x6xf32>, {mtype}) -> tensor<1x2x3x6xf32>
  func.return %r : tensor<1x2x3x6xf32>
}}"""
    got = run(text, q=q, k=k, v=v, m=mask)["out0"]
    assert np.all(got[:, :, 1] == 0)
    want = sdpa_reference(q, k, v, keep, 0.35, False)
    np.testing.assert_allclose(got[:, :, [0, 2]], want[:, :, [0, 2]], rtol=1e-5, atol=1e-5)


def test_flash_attention_bsnd_is_bnsd_transposed() -> None:
    q, k, v = f32(1, 6, 4, 8), f32(1, 6, 2, 8), f32(1, 6, 2, 8)
    text = """
func.func @main(%q: tensor<1x6x4x8xf32>, %k: tensor<1x6x2x8xf32>, %v: tensor<1x6x2x8xf32>) -> tensor<1x6x4x8xf32> {
  %r = graph.flash_attention %q, %k, %v {scale = 0.25, causal = true, layout = "BSND"} : (tensor<1x6x4x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x6x4x8xf32>
  func.return %r : tensor<1x6x4x8xf32>
}"""
    got = run(text, q=q, k=k, v=v)["out0"]
    t = (0, 2, 1, 3)
    want = sdpa_reference(
        q.transpose(t), k.transpose(t), v.transpose(t), None, 0.25, True
    ).transpose(t)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope(interleaved: bool) -> None:
    x, ang = f32(1, 2, 3, 8), f32(3, 8)
    cos, sin = np.cos(ang), np.sin(ang)
    text = f"""
func.func @main(%x: tensor<1x2x3x8xf32>, %c: tensor<3x8xf32>, %s: tensor<3x8xf32>) -> tensor<1x2x3x8xf32> {{
  %r = graph.rope %x, %c, %s {{interleaved = {str(interleaved).lower()}}} : (tensor<1x2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %r : tensor<1x2x3x8xf32>
}}"""
    got = run(text, x=x, c=cos, s=sin)["out0"]
    if interleaved:
        rot = np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)
    else:
        rot = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
    np.testing.assert_allclose(got, x * cos + rot * sin, rtol=1e-6, atol=1e-6)


def test_swiglu_and_epilogues() -> None:
    a, w, b = f32(4, 8), f32(8, 6), f32(6)
    text = """
func.func @main(%a: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %g = graph.matmul %a, %w, %b {activation = "gelu_tanh"} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %c = graph.gemm %a, %w, %b {trans_a = false, trans_b = false, alpha = 1.0, beta = 1.0, activation = "clip", clip_min = 0.0, clip_max = 0.5} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %s = graph.swiglu %g, %c : tensor<4x6xf32>
  func.return %g, %c, %s : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}"""
    out = run(text, a=a, w=w, b=b)
    y = a.astype(np.float64) @ w + b
    gelu = 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y**3)))
    clip = np.clip(y, 0, 0.5)
    np.testing.assert_allclose(out["out0"], gelu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["out1"], clip, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["out2"], gelu / (1 + np.exp(-gelu)) * clip, rtol=1e-5, atol=1e-5)


def test_add_norms_and_split_norms_match_unfused_norms() -> None:
    x, r, g, b = f32(2, 3, 16), f32(2, 3, 16), f32(16), f32(16)
    text = """
func.func @main(%x: tensor<2x3x16xf32>, %r: tensor<2x3x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>)
    -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>) {
  %s = graph.add %x, %r : tensor<2x3x16xf32>
  %ln = graph.layer_norm %s, %g, %b {axis = -1, epsilon = 1.0e-05} : (tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %rms = graph.rms_norm %s, %g {axis = -1, epsilon = 1.0e-06} : (tensor<2x3x16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %aln, %sum = graph.add_layer_norm %x, %r, %g, %b {axis = -1, epsilon = 1.0e-05} : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>)
  %arms, %sum2 = graph.add_rms_norm %x, %r, %g {axis = -1, epsilon = 1.0e-06} : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3x16xf32>)
  %m, %rs = graph.layer_norm_stats %s {axis = -1, epsilon = 1.0e-05} : tensor<2x3x16xf32> -> (tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  %sln = graph.layer_norm_apply %s, %m, %rs, %g, %b {axis = -1} : (tensor<2x3x16xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %rr = graph.rms_norm_stats %s {axis = -1, epsilon = 1.0e-06} : tensor<2x3x16xf32> -> tensor<2x3x1xf32>
  %srms = graph.rms_norm_apply %s, %rr, %g {axis = -1} : (tensor<2x3x16xf32>, tensor<2x3x1xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  func.return %ln, %aln, %sln, %rms, %arms, %srms : tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>
}"""
    out = run(text, x=x, r=r, g=g, b=b)
    for fused in ("out1", "out2"):
        np.testing.assert_allclose(out[fused], out["out0"], rtol=1e-5, atol=1e-5)
    for fused in ("out4", "out5"):
        np.testing.assert_allclose(out[fused], out["out3"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("act", "merged"),
    [
        ("swiglu", False),
        ("geglu", True),
        ("geglu_tanh", False),
        ("reglu", False),
        ("gelu_tanh", False),
    ],
)
def test_ffn(act: str, merged: bool) -> None:
    """graph.ffn in float32 against numpy: [residual +] act(x @ W1 + b1) @ W2 + b2, a
    merged gate/up weight holding the gate in its first half."""
    x, r, w2, b2 = f32(3, 5, 8), f32(3, 5, 6), f32(16, 6), f32(6)
    gated = act in ("swiglu", "geglu", "geglu_tanh", "reglu")
    w1s = [f32(8, 32)] if merged else [f32(8, 16), f32(8, 16)] if gated else [f32(8, 16)]
    b1s = [f32(w.shape[1]) for w in w1s]
    h = [x @ w + b for w, b in zip(w1s, b1s)]
    gate, up = (np.split(h[0], 2, axis=-1) if merged else h) if gated else (h[0], None)
    erf = np.vectorize(math.erf)
    gelu_tanh = lambda g: 0.5 * g * (1 + np.tanh(0.7978845608 * (g + 0.044715 * g**3)))  # noqa: E731
    acts = {
        "swiglu": lambda g: g / (1 + np.exp(-g)),
        "geglu": lambda g: 0.5 * g * (1 + erf(g / math.sqrt(2))),
        "geglu_tanh": gelu_tanh,
        "reglu": lambda g: np.maximum(g, 0),
        "gelu_tanh": gelu_tanh,
    }
    g = acts[act](gate) * up if up is not None else acts[act](gate)
    want = r + g @ w2 + b2
    t = {n: f"tensor<{'x'.join(map(str, a.shape))}xf32>" for n, a in (("x", x), ("r", r))}
    w1t = [f"tensor<8x{w.shape[1]}xf32>" for w in w1s]
    b1t = [f"tensor<{w.shape[1]}xf32>" for w in w1s]
    names = [f"%w{i}" for i in range(len(w1s))] + ["%v"] + [f"%b{i}" for i in range(len(w1s))]
    sig = [f"%w{i}: {ty}" for i, ty in enumerate(w1t)] + ["%v: tensor<16x6xf32>"]
    sig += [f"%b{i}: {ty}" for i, ty in enumerate(b1t)] + ["%c: tensor<6xf32>"]
    types = ", ".join([t["x"], *w1t, "tensor<16x6xf32>", *b1t, "tensor<6xf32>", t["r"]])
    segments = f"1, {len(w1s)}, 1, {len(w1s)}, 1, 1"
    text = f"""
func.func @main(%x: {t["x"]}, {", ".join(sig)}, %r: {t["r"]}) -> {t["r"]} {{
  %y = graph.ffn %x, {", ".join(names)}, %c, %r {{activation = "{act}", operandSegmentSizes = array<i32: {segments}>}} : ({types}) -> {t["r"]}
  func.return %y : {t["r"]}
}}"""
    got = run(
        text,
        x=x,
        **{f"w{i}": w for i, w in enumerate(w1s)},
        v=w2,
        **{f"b{i}": b for i, b in enumerate(b1s)},
        c=b2,
        r=r,
    )["out0"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
