"""The PyTorch frontend: imported modules interpreted against torch eager.

Every test imports a small module through `frontends.torch.import_module`, runs the
result with the reference interpreter and compares with the module run by torch (f32,
rtol = atol = 1e-5). Float inputs are drawn afresh for the comparison, so a value
baked into the graph at import time cannot pass by accident.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import torch
import torch.nn.functional as F
from torch import nn
from xdsl.context import Context
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp, NameLoc

from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.interpreter import (
    argument_names,
    find_function,
    result_names,
    run_function,
)
from frontends.torch import TORCH_MISSING, import_exported_program, import_module, import_pt2

# torch.export warns about its own pytree internals; not ours to fix
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel:UserWarning"),
]


@pytest.fixture(autouse=True)
def _seed() -> None:
    """Deterministic random inputs and weights in every test."""
    torch.manual_seed(0)


class Fn(nn.Module):
    """A module whose forward is `fn` (for one-op tests)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def randn(*shape: int) -> Any:
    return torch.randn(*shape)


def _flatten(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [t for v in value for t in _flatten(v)]


def _fresh(t: Any) -> Any:
    """A new random tensor like `t` for float tensors; other tensors are kept."""
    return torch.randn_like(t) if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def check(
    model: Any,
    *inputs: Any,
    kwargs: dict[str, Any] | None = None,
    fresh: bool = True,
    tol: float = 1e-5,
) -> ModuleOp:
    """Import `model`, then check the interpreter against torch eager; return the IR."""
    model = model.eval()
    kwargs = kwargs or {}
    module = import_module(model, inputs, example_kwargs=kwargs)
    if fresh:
        inputs = tuple(_fresh(t) for t in inputs)
        kwargs = {k: _fresh(v) for k, v in kwargs.items()}
    with torch.no_grad():
        expected = _flatten(model(*inputs, **kwargs))
    feeds = [t for t in (*inputs, *kwargs.values()) if isinstance(t, torch.Tensor)]
    names = argument_names(find_function(module))
    got = run_function(module, {n: t.numpy() for n, t in zip(names, feeds, strict=True)})
    assert len(got) == len(expected)
    for (name, value), want in zip(got.items(), expected, strict=True):
        ref = want.numpy()
        assert value.shape == ref.shape, name
        assert value.dtype == ref.dtype, name
        np.testing.assert_allclose(value, ref, rtol=tol, atol=tol, err_msg=name)
    return module


def randomize_statistics(bn: Any) -> None:
    """Give a batch norm non-trivial running statistics."""
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2.0)


def ops(module: ModuleOp) -> list[str]:
    """The names of the ops in @main, in order."""
    return [op.name for op in find_function(module).body.block.ops]


# --------------------------------------------------------------------------------------
# Modules from the coverage list
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 8), (2, 3, 8), (8,), (2, 2, 2, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape: tuple[int, ...], bias: bool) -> None:
    module = check(nn.Linear(8, 5, bias=bias), randn(*shape))
    assert ops(module).count("graph.gemm") == 1
    assert "graph.transpose" not in ops(module)  # the weight keeps torch's layout


CONV_CASES: dict[str, dict[str, Any]] = {
    "plain": dict(kernel_size=3),
    "stride": dict(kernel_size=3, stride=2, padding=1),
    "asymmetric": dict(kernel_size=(3, 1), stride=(2, 1), padding=(1, 0)),
    "same_odd": dict(kernel_size=3, padding="same"),
    "same_even": dict(kernel_size=(2, 4), padding="same", dilation=(1, 2)),
    "valid": dict(kernel_size=2, padding="valid"),
    "dilation": dict(kernel_size=3, dilation=2, padding=2),
    "groups": dict(kernel_size=3, groups=2, padding=1),
    "depthwise": dict(kernel_size=3, groups=4, padding=1, out_channels=8),
    "no_bias": dict(kernel_size=3, bias=False, stride=2),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d(case: str) -> None:
    kw = dict(CONV_CASES[case])
    out_channels: int = kw.pop("out_channels", 6)
    check(nn.Conv2d(4, out_channels, **kw), randn(2, 4, 9, 10))


def test_conv1d() -> None:
    module = check(nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=1), randn(2, 3, 11))
    assert "graph.conv2d" in ops(module)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm2d(affine: bool) -> None:
    bn = nn.BatchNorm2d(3, eps=1e-3, affine=affine)
    randomize_statistics(bn)
    if affine:
        bn.weight.data.normal_()
        bn.bias.data.normal_()
    module = check(bn, randn(2, 3, 4, 5))
    assert ops(module).count("graph.batch_norm") == 1


@pytest.mark.parametrize(
    "kw",
    [
        dict(normalized_shape=8),
        dict(normalized_shape=8, elementwise_affine=False),
        dict(normalized_shape=8, bias=False),
        dict(normalized_shape=(4, 8), eps=1e-3),
    ],
    ids=["affine", "no_affine", "no_bias", "two_dims"],
)
def test_layer_norm(kw: dict[str, Any]) -> None:
    ln = nn.LayerNorm(**kw)
    if ln.weight is not None:
        ln.weight.data.normal_()
    module = check(ln, randn(2, 4, 8))
    assert ops(module).count("graph.layer_norm") == 1


def test_rms_norm() -> None:
    check(nn.RMSNorm(8), randn(3, 8))
    check(nn.RMSNorm([2, 8], eps=1e-4), randn(3, 2, 8))


ACTIVATIONS = {
    "relu": (nn.ReLU(), "graph.relu"),
    "gelu": (nn.GELU(), "graph.gelu"),
    "gelu_tanh": (nn.GELU(approximate="tanh"), "graph.gelu"),
    "silu": (nn.SiLU(), "graph.silu"),
    "sigmoid": (nn.Sigmoid(), "graph.sigmoid"),
    "tanh": (nn.Tanh(), "graph.tanh"),
    "relu6": (nn.ReLU6(), "graph.clip"),
    "hardtanh": (nn.Hardtanh(-0.5, 0.25), "graph.clip"),
    "leaky_relu": (nn.LeakyReLU(0.2), "graph.where"),
    "hardswish": (nn.Hardswish(), "graph.clip"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name: str) -> None:
    module, op = ACTIVATIONS[name]
    assert op in ops(check(module, randn(3, 7) * 4))


def test_gelu_approximation_property() -> None:
    module = check(nn.GELU(approximate="tanh"), randn(5))
    (gelu,) = [op for op in find_function(module).body.block.ops if isinstance(op, graph.GeluOp)]
    assert gelu.approximate.data == "tanh"


def test_unary_math() -> None:
    check(
        Fn(lambda x: torch.exp(x) + torch.log(x.abs() + 1) + torch.sqrt(x.abs()) - x.neg()),
        randn(3, 4),
    )
    check(Fn(lambda x: torch.rsqrt(x.abs() + 1) * torch.erf(x) + x.sin() * x.cos()), randn(6))
    check(Fn(lambda x: x.reciprocal() + x.clamp(-0.5, 0.5) + x.clamp(min=0.1)), randn(6) + 3)
    check(
        Fn(lambda x, lo: x.clamp(min=lo) + x.clamp(max=lo) + x.clamp(lo, lo + 1)),
        randn(6),
        randn(6),
    )


# --------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------


class MHA(nn.Module):
    """nn.MultiheadAttention returning its output (and weights when asked)."""

    def __init__(self, batch_first: bool, need_weights: bool, **kw: Any) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=batch_first, **kw)
        self.need_weights = need_weights

    def forward(self, q: Any, k: Any, v: Any, mask: Any = None, padding: Any = None) -> Any:
        out, weights = self.mha(
            q, k, v, attn_mask=mask, key_padding_mask=padding, need_weights=self.need_weights
        )
        return (out, weights) if self.need_weights else out


def _qkv(batch_first: bool, length: int = 3, source: int = 4) -> tuple[Any, Any, Any]:
    def make(n: int) -> Any:
        return randn(2, n, 8) if batch_first else randn(n, 2, 8)

    return make(length), make(source), make(source)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention(batch_first: bool, need_weights: bool) -> None:
    check(MHA(batch_first, need_weights), *_qkv(batch_first))


def test_multihead_self_attention() -> None:
    # query is key is value: torch takes the packed-projection path, traced as such
    mha = nn.MultiheadAttention(8, 4, batch_first=True).eval()
    check(Fn(lambda x: mha(x, x, x)), randn(2, 5, 8))


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_multihead_attention_attn_mask(kind: str, need_weights: bool) -> None:
    q, k, v = _qkv(True)
    mask = torch.rand(3, 4) < 0.4
    mask[:, 0] = False  # no fully masked rows (torch gives NaN for them with weights)
    if kind == "float":
        mask = torch.randn(3, 4)
    check(MHA(True, need_weights), q, k, v, mask, fresh=True)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_key_padding_mask(batch_first: bool) -> None:
    padding = torch.tensor([[False, False, True, True], [False, False, False, True]])
    check(MHA(batch_first, False), *_qkv(batch_first), None, padding)


def test_multihead_attention_kdim_vdim() -> None:
    model = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=True)
    check(Fn(model.eval()), randn(2, 3, 8), randn(2, 4, 6), randn(2, 4, 5))


SDPA_CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "plain": lambda: {},
    "causal": lambda: {"is_causal": True},
    "scale": lambda: {"scale": 0.3},
    "causal_scale": lambda: {"is_causal": True, "scale": 2.0},
    "bool_mask": lambda: {"attn_mask": torch.rand(3, 5) < 0.5},
    "float_mask": lambda: {"attn_mask": torch.randn(2, 1, 3, 5)},
    "bool_mask_row_masked": lambda: {
        "attn_mask": torch.tensor([[True] * 5, [False] * 5, [True, False] * 2 + [True]])
    },
}


@pytest.mark.parametrize("case", sorted(SDPA_CASES))
def test_scaled_dot_product_attention(case: str) -> None:
    kw = SDPA_CASES[case]()
    mask = kw.pop("attn_mask", None)
    q, k, v = randn(2, 2, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 6)
    if mask is None:
        module = check(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw)), q, k, v)
    else:
        # the mask as an input (a runtime mask) and as a constant of the module
        check(
            Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)),
            q,
            k,
            v,
            mask,
        )
        module = check(
            Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)),
            q,
            k,
            v,
        )
    assert ops(module).count("graph.softmax") == 1
    assert ops(module).count("graph.matmul") == 2


def test_sdpa_constant_masks_need_no_row_guard() -> None:
    # a causal mask never masks a whole row: no reduce_max/where guard after softmax
    q = randn(1, 2, 4, 8)
    module = check(Fn(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True)), q)
    assert "graph.reduce_max" not in ops(module)


def test_sdpa_grouped_query() -> None:
    q, k, v = randn(1, 4, 3, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    check(Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)), q, k, v)


# --------------------------------------------------------------------------------------
# Arithmetic, matrix products, softmax
# --------------------------------------------------------------------------------------


def test_matmul_family() -> None:
    a, b = randn(2, 3, 4), randn(2, 4, 5)
    check(Fn(torch.bmm), a, b)
    check(Fn(lambda a, b: a @ b), a, b)
    check(Fn(torch.matmul), randn(3, 4), randn(2, 4, 5))  # broadcast
    check(Fn(lambda a, b: a @ b), randn(4), randn(2, 4, 5))  # 1-D operand
    check(Fn(torch.mm), randn(3, 4), randn(4, 2))
    check(
        Fn(lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0)),
        randn(2),
        *[randn(3, 4), randn(4, 2)],
    )


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax(dim: int) -> None:
    module = check(Fn(lambda x: torch.softmax(x, dim)), randn(3, 4, 5))
    assert ops(module) == ["graph.softmax", "func.return"]


def test_add_mul_scalars_and_broadcasting() -> None:
    check(Fn(lambda x: 2 * x + 1 - x / 3), randn(3, 4))
    check(Fn(lambda x, y: x * y + y), randn(3, 1, 4), randn(5, 1))
    check(
        Fn(lambda x, y: torch.add(x, y, alpha=2.5) - torch.sub(x, y, alpha=0.5)), randn(4), randn(4)
    )
    check(Fn(lambda x: 1 - x + torch.rsub(x, 2, alpha=3)), randn(4))
    aten = torch.ops.aten
    check(
        Fn(
            lambda x: (
                aten.add.Scalar(x, 2) * aten.mul.Scalar(x, 3)
                - aten.div.Scalar(x, 2)
                - aten.sub.Scalar(x, 1, alpha=2)
            )
        ),
        randn(4),
    )
    check(Fn(lambda x: torch.maximum(x, -x) + torch.minimum(x, x * 2)), randn(5))
    check(Fn(lambda x: x**2 + x.abs() ** 0.5 + 2**x), randn(5))
    check(Fn(lambda x, y: x.abs() ** y), randn(5), randn(5))


def test_integer_arithmetic_and_promotion() -> None:
    ints = torch.randint(-5, 5, (6,))
    check(Fn(lambda i: i * 3 + 1), ints)  # stays int64
    check(Fn(lambda i: i / 2), ints)  # true division: float
    check(Fn(lambda i, x: i + x), ints, randn(6))  # int64 + f32 -> f32
    check(Fn(lambda i: i.sum() + i.sum(0)), ints)


def test_comparisons_and_logic() -> None:
    x = randn(4, 5)
    x[0, 0] = 1.0  # equality cases
    check(Fn(lambda x: ((x <= 0) | (x >= 1) & (x != 2)).float()), x, fresh=False)
    check(Fn(lambda x, y: torch.stack([x < y, x > y, x == y], 0)), x, x.round(), fresh=False)
    check(Fn(lambda x: torch.where(x > 0, x, 0.5) + (~(x < 0)).float()), x)
    check(Fn(lambda x: torch.logical_xor(x > 0, x > 1).to(torch.int32)), x)
    check(
        Fn(
            lambda x, y: torch.logical_and(x > 0, y) | torch.logical_or(x, y) ^ torch.logical_not(y)
        ),
        x,
        x.round(),
        fresh=False,
    )
    check(Fn(lambda x, y: x.eq(1) | x.ne(y) & x.ge(y) | x.le(y)), x, x.round(), fresh=False)
    check(Fn(lambda x, m: x.masked_fill(m, -1.0)), x, x > 0, fresh=False)


def test_reductions() -> None:
    x = randn(2, 3, 4)
    check(Fn(lambda x: x.sum(-1) + x.mean((0, 2), keepdim=True).squeeze(-1)), x)
    check(Fn(lambda x: x.amax(1) - x.amin(1) + x.sum()), x)
    check(Fn(lambda x: x.mean()), x)
    check(Fn(lambda x: x.max(1).values + x.max(-1, keepdim=True)[0]), randn(4, 4))
    check(Fn(lambda x: x.log_softmax(-1) + F.log_softmax(x * 30, 0)), randn(4, 4))


# --------------------------------------------------------------------------------------
# Shapes, indexing and glue
# --------------------------------------------------------------------------------------


def test_view_reshape_flatten() -> None:
    x = randn(2, 3, 4)
    check(Fn(lambda x: x.view(6, 4).reshape(4, 6) + 1), x)
    check(Fn(lambda x: torch.flatten(x, 1)), x)
    check(nn.Flatten(0), x)
    check(Fn(lambda x: x.unflatten(-1, (2, 2)).flatten()), x)


def test_permute_transpose() -> None:
    x = randn(2, 3, 4)
    module = check(Fn(lambda x: x.permute(2, 0, 1).transpose(0, 1).contiguous()), x)
    assert ops(module).count("graph.transpose") == 2
    check(Fn(lambda x: x.t() @ x), randn(3, 4))
    check(Fn(lambda x: x.mT), x)


def test_embedding() -> None:
    emb = nn.Embedding(10, 4, padding_idx=0)
    ids = torch.tensor([[1, 2, 0], [9, 3, 3]])
    module = check(emb, ids)
    assert "graph.gather" in ops(module)
    check(Fn(lambda w, i: F.embedding(i, w)), randn(5, 3), torch.tensor([4, 0, 2]))


def test_expand_unsqueeze_squeeze() -> None:
    x = randn(3, 1)
    check(Fn(lambda x: x.expand(2, 3, 4) + x.unsqueeze(0).squeeze(-1).unsqueeze(-1)), x)
    check(Fn(lambda x: x.expand(-1, 5).squeeze()), x)


def test_cat_split_chunk() -> None:
    x = randn(2, 6, 3)
    check(Fn(lambda x: torch.cat([*x.split([1, 2, 3], 1)][::-1], 1)), x)
    check(Fn(lambda x: torch.cat(x.chunk(3, dim=1)[:2], -1)), x)
    check(Fn(lambda x: x.split(4, dim=1)), x)
    check(Fn(lambda x, y: torch.cat([x, y.to(torch.float16)], 0)), x, randn(1, 6, 3))
    check(Fn(lambda x: torch.stack([x, x + 1], 1)), x)


def test_repeat() -> None:
    x = randn(2, 3)
    check(Fn(lambda x: x.repeat(2, 1) + 1), x)
    check(Fn(lambda x: x.repeat(2, 3, 1)), x)
    check(Fn(lambda x: x.repeat(1, 1)), x)


def test_slice_select_index() -> None:
    x = randn(4, 5, 6)
    check(Fn(lambda x: x[1:, ::2, -1]), x)
    check(Fn(lambda x: x[:, 1:-1, 2:5:2] * 2), x)
    check(Fn(lambda x: x[..., None, 0] + x[-1]), x)
    check(Fn(lambda x: x.unbind(1)[2]), x)
    idx = torch.tensor([3, 0, 3])
    check(Fn(lambda x, i: x[i]), x, idx)
    check(Fn(lambda x, i: x[:, i]), x, idx)
    check(Fn(lambda x, i: x[:, :, i]), x, idx)
    check(Fn(lambda x, i: x.index_select(1, i)), x, idx)


def test_contiguous_dropout_detach_are_identities() -> None:
    x = randn(3, 4)
    module = check(nn.Sequential(nn.Dropout(0.5), Fn(lambda x: x.contiguous().detach())), x)
    assert ops(module) == ["func.return"]


def test_dtype_casts() -> None:
    x = randn(3, 4) * 4
    check(Fn(lambda x: x.to(torch.float16).to(torch.float32)), x)
    check(Fn(lambda x: x.long().float() + x.int().float()), x)
    check(Fn(lambda x: x.bool().to(torch.int64) + (x > 0).long()), x)
    check(Fn(lambda x: x.to(torch.float16) * 3), x, tol=1e-3)
    check(Fn(lambda x: x.to(torch.bfloat16).float() + x.type_as(x)), x)


def test_literal_constants_are_folded() -> None:
    x = randn(2, 8)
    model = Fn(
        lambda x: (
            x
            + torch.arange(8.0)
            + torch.ones(8) * torch.full((8,), 2.0)
            + torch.zeros_like(x)
            + torch.tensor([1.0, 2.0] * 4)
            + torch.triu(torch.ones(8, 8))[2]
        )
    )
    module = check(model, x)
    body = ops(module)
    assert body.count("graph.constant") == 5  # arange, ones*full, zeros_like, tensor, triu[2]
    assert set(body) == {"graph.constant", "graph.add", "func.return"}


def test_pooling_and_padding() -> None:
    x = randn(1, 3, 9, 9)
    check(nn.MaxPool2d(2, ceil_mode=True), x)
    check(nn.MaxPool2d(3, stride=2, padding=1, dilation=1), x)
    check(nn.AvgPool2d(2, padding=1), x)
    check(nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), x)
    check(nn.AdaptiveAvgPool2d(1), x)
    check(nn.AdaptiveAvgPool2d((3, 1)), x)
    check(Fn(lambda x: F.pad(x, (1, 2, 0, 1), value=0.5)), x)
    check(Fn(lambda x: F.pad(x, (1, -2, 0, 1))), x)
    check(Fn(lambda x: F.pad(x, (1, 2, 0, 1), mode="reflect")), x)
    check(Fn(lambda x: F.pad(x, (2, 1, 3, 0), mode="replicate")), x)
    check(Fn(lambda x: F.pad(x, (2, 1), mode="reflect")), randn(2, 3, 5))
    check(Fn(lambda x: F.pad(x, (0, 3), mode="replicate")), randn(2, 3, 5))
    check(nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect"), x)


# --------------------------------------------------------------------------------------
# Composite models
# --------------------------------------------------------------------------------------


class EncoderBlock(nn.Module):
    """A pre-norm transformer encoder block written out by hand."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(0.1)

    def forward(self, x: Any) -> Any:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.mlp(self.norm2(x)))


def test_transformer_encoder_block() -> None:
    module = check(EncoderBlock(), randn(2, 5, 16))
    body = ops(module)
    assert body.count("graph.gemm") == 4
    assert body.count("graph.layer_norm") == 2


@pytest.mark.parametrize("norm_first", [False, True])
def test_torch_transformer_encoder_layer(norm_first: bool) -> None:
    layer = nn.TransformerEncoderLayer(
        16, 2, dim_feedforward=32, batch_first=True, norm_first=norm_first, activation="gelu"
    ).eval()
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    check(Fn(lambda x: layer(x, src_mask=mask, is_causal=True)), randn(2, 5, 16))


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2, padding="valid"),
            nn.BatchNorm2d(16),
            nn.SiLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, image: Any) -> Any:
        return self.head(torch.flatten(self.features(image), 1)).softmax(-1)


def test_tiny_cnn() -> None:
    model = TinyCNN()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            randomize_statistics(m)
    module = check(model, randn(2, 3, 16, 16))
    body = ops(module)
    assert body.count("graph.conv2d") == 2 and body.count("graph.batch_norm") == 2


def _tiny_hf_model(name: str) -> Any:
    transformers = pytest.importorskip("transformers")
    common = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
    common.update(intermediate_size=64, max_position_embeddings=16)
    if name == "bert":
        return transformers.BertModel(transformers.BertConfig(**common), add_pooling_layer=False)
    config = transformers.LlamaConfig(**common, num_key_value_heads=2, use_cache=False)
    return transformers.LlamaModel(config)


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_transformers_models(name: str) -> None:
    # randomly initialised tiny configurations (no download): BERT exercises torch.gather
    # on buffers (evaluated at import time), Llama grouped-query attention, RoPE, RMSNorm
    torch.manual_seed(0)
    model = _tiny_hf_model(name).eval()
    check(Fn(lambda ids: model(ids).last_hidden_state), torch.randint(0, 64, (2, 8)))


def test_ops_on_weights_without_converter_are_evaluated() -> None:
    class Lookup(nn.Module):
        table: torch.Tensor
        index: torch.Tensor

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("table", torch.randn(2, 5))
            self.register_buffer("index", torch.tensor([[4, 0, 1], [2, 2, 3]]))

        def forward(self, x: Any) -> Any:
            return x + torch.gather(self.table, 1, self.index)  # no graph op for gather

    module = check(Lookup(), randn(2, 3))
    assert "graph.add" in ops(module)


# --------------------------------------------------------------------------------------
# The function's interface: names, constants, locations
# --------------------------------------------------------------------------------------


def test_default_names() -> None:
    class TwoOut(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, tokens: Any, scale: Any) -> Any:
            y = self.fc(tokens)
            return y, y * scale, None

    module = import_module(TwoOut().eval(), (randn(2, 4), randn(4)))
    main = find_function(module)
    assert main.sym_name.data == "main"
    assert argument_names(main) == ["tokens", "scale"]
    assert result_names(main) == ["output", "output_1"]


def test_given_names() -> None:
    module = import_module(
        Fn(lambda a, b: (a + b, a - b)).eval(),
        (randn(3), randn(3)),
        input_names=["lhs", "rhs"],
        output_names=["sum", "difference"],
    )
    main = find_function(module)
    assert argument_names(main) == ["lhs", "rhs"]
    assert result_names(main) == ["sum", "difference"]


def test_keyword_inputs() -> None:
    class Scale(nn.Module):
        def forward(self, x: Any, *, factor: Any) -> Any:
            return x * factor

    module = check(Scale(), randn(3), kwargs={"factor": randn(3)})
    assert argument_names(find_function(module)) == ["x", "factor"]


def test_weights_are_named_resources_and_ops_located() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
            self.register_buffer("offset", torch.ones(4), persistent=False)
            self.table = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a plain tensor attribute

        def forward(self, x: Any) -> Any:
            return self.block(x) + self.offset + self.table

    module = check(Net(), randn(3, 4))
    constants = {
        op.attributes["name"].data: op  # type: ignore[attr-defined]
        for op in find_function(module).body.block.ops
        if isinstance(op, graph.ConstantOp) and "name" in op.attributes
    }
    assert set(constants) == {
        "block.0.weight",
        "block.0.bias",
        "block.1.weight",
        "block.1.bias",
        "block.1.running_mean",
        "block.1.running_var",
        "offset",
        "table",
    }  # num_batches_tracked is not used: not imported
    weight = constants["block.0.weight"]
    assert isinstance(weight.value, DenseResourceAttr)
    for op in find_function(module).body.block.ops:
        assert isinstance(op.location, NameLoc), op
    locations = {
        op.location.desc.data
        for op in find_function(module).body.block.ops
        if isinstance(op, graph.GemmOp) and isinstance(op.location, NameLoc)
    }
    assert locations == {"linear"}


def test_ctx_loads_dialects_and_prints() -> None:
    from autofusion.mlir_io import module_to_text, parse_module

    ctx = Context()
    module = import_module(nn.Linear(2, 3).eval(), (randn(1, 2),), ctx=ctx)
    text = module_to_text(ctx, module)
    assert "graph.gemm" in text and "dialect_resources" in text
    assert parse_module(ctx, text.split("{-#")[0]) is not None


def test_output_shared_with_input() -> None:
    module = check(Fn(lambda x: (x, x + 1)), randn(2))
    assert result_names(find_function(module)) == ["output", "output_1"]


def test_exported_program_and_pt2_file() -> None:
    import io

    model = nn.Sequential(nn.Linear(4, 3), nn.GELU()).eval()
    x = randn(2, 4)
    program = torch.export.export(model, (x,))
    module = import_exported_program(program, input_names=["features"])
    got = run_function(module, {"features": x.numpy()})["output"]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)

    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    module = import_pt2(Context(), buffer.getvalue(), "model.pt2")
    got = run_function(module, {"input": x.numpy()})["output"]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(UserError, match=r"^model\.pt2: not a torch\.export program"):
        import_pt2(Context(), b"not a zip file", "model.pt2")


def test_afc_import_pt2_file(tmp_path) -> None:
    """`afc import` picks the torch frontend for .pt2; a bad file is one line, no traceback."""
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
    torch.export.save(torch.export.export(model, (randn(2, 4),)), tmp_path / "m.pt2")
    out = tmp_path / "m.mlir"
    afc = [str(Path(sys.executable).parent / "afc"), "import"]
    done = subprocess.run(
        [*afc, str(tmp_path / "m.pt2"), "-o", str(out)], check=False, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert "graph.gemm" in out.read_text() and "graph.relu" in out.read_text()
    (tmp_path / "bad.pt2").write_bytes(b"garbage")
    bad = subprocess.run(
        [*afc, str(tmp_path / "bad.pt2"), "-o", str(tmp_path / "b.mlir")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        f"{tmp_path / 'bad.pt2'}: error: not a torch.export program (.pt2): File is not a zip file"
    ]
    assert not (tmp_path / "b.mlir").exists()


def test_readme_lists_the_converters() -> None:
    import re
    from pathlib import Path

    from frontends.torch.aten import CONVERTERS

    readme = Path(__file__).parents[1] / "frontends" / "torch" / "README.md"
    rows = [
        line.split("|")[1]
        for line in readme.read_text().splitlines()
        if line.startswith("| `aten.")
    ]
    listed = {name for row in rows for name in re.findall(r"`(aten\.[\w.]+)`", row)}
    assert listed == set(CONVERTERS)


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_unsupported_op() -> None:
    with pytest.raises(
        UserError,
        match=r"^unsupported PyTorch op aten\.cumsum\.default "
        r"\(node 'cumsum'\)$",
    ):
        import_module(Fn(lambda x: torch.cumsum(x, 0)).eval(), (randn(4),))


def test_unsupported_argument() -> None:
    with pytest.raises(UserError, match=r"divisor_override=2 is not supported"):
        import_module(
            Fn(lambda x: F.avg_pool2d(x, 2, divisor_override=2)).eval(), (randn(1, 1, 4, 4),)
        )


def test_unsupported_result() -> None:
    with pytest.raises(UserError, match=r"result #1 of aten\.max_pool2d_with_indices"):
        import_module(
            Fn(lambda x: F.max_pool2d(x, 2, return_indices=True)).eval(), (randn(1, 1, 4, 4),)
        )
    with pytest.raises(
        UserError, match=r"^result #1 of aten\.max\.dim \(node 'max_1'\) is not supported"
    ):
        import_module(Fn(lambda x: x.max(0).indices).eval(), (randn(3, 2),))


def test_circular_padding_is_unsupported() -> None:
    conv = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular").eval()
    with pytest.raises(UserError, match=r"^unsupported PyTorch op aten\.empty\.memory_format"):
        import_module(conv, (randn(1, 1, 5, 5),))


def test_training_mode_is_an_error() -> None:
    with pytest.raises(UserError, match=r"^the model is in training mode; call model\.eval\(\)"):
        import_module(nn.Linear(2, 2), (randn(1, 2),))
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout()).eval()
    model[1].train()
    with pytest.raises(UserError, match=r"^submodule '1' of the model is in training mode"):
        import_module(model, (randn(1, 2),))
    # a module the model only captures (not a submodule): found by its training-mode op
    dropout = nn.Dropout()
    with pytest.raises(
        UserError,
        match=r"^unsupported PyTorch op aten\.native_dropout\.default \(node 'native_dropout'\); "
        r"it comes from a module in training mode",
    ):
        # the lambda keeps dropout out of the module tree (Fn(dropout) would register it)
        import_module(Fn(lambda x: dropout(x)).eval(), (randn(1, 2),))  # noqa: PLW0108


def test_in_place_input_update_is_an_error() -> None:
    def bump(x: Any) -> Any:
        x.add_(1)
        return x * 2

    with pytest.raises(UserError, match=r"updates its input 'args_0' in place"):
        import_module(Fn(bump).eval(), (randn(2),), input_names=None)


def test_aliased_example_inputs() -> None:
    # torch.export would trace the two arguments as one tensor
    x = randn(3)
    with pytest.raises(
        UserError, match=r"^example inputs 'args\[0\]' and 'args\[1\]' are the same"
    ):
        import_module(Fn(lambda a, b: a + b).eval(), (x, x))


def test_wrong_number_of_names() -> None:
    with pytest.raises(UserError, match=r"1 input names given, but the model has 2"):
        import_module(Fn(lambda a, b: a + b).eval(), (randn(2), randn(2)), input_names=["a"])


def test_export_failure_is_a_user_error() -> None:
    def data_dependent(x: Any) -> Any:
        return x if x.sum() > 0 else -x

    with pytest.raises(UserError, match=r"^torch\.export failed: "):
        import_module(Fn(data_dependent).eval(), (randn(4),))


def test_unsupported_dtype() -> None:
    with pytest.raises(UserError, match=r"^tensors of dtype uint8 are not supported"):
        import_module(Fn(lambda x: x + 1).eval(), (torch.zeros(3, dtype=torch.uint8),))


def test_torch_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(UserError) as info:
        import_module(object(), ())
    assert str(info.value) == TORCH_MISSING
    assert TORCH_MISSING == (
        "the PyTorch frontend needs torch: pip install torch==2.13.0 (the CPU build)"
    )


def test_package_imports_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import frontends.torch, frontends.torch.importer, frontends.torch.aten\n"
        "import frontends.torch.program\n"
        "from autofusion.diagnostics import UserError\n"
        "try:\n"
        "    frontends.torch.import_module(None, ())\n"
        "except UserError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == TORCH_MISSING
