"""Attention fusion on real models: every attention becomes one graph.flash_attention.

The corpus models (BERT, GPT-2, Llama with grouped-query attention, ViT; both torch
exporters) are imported from ONNX and run through the whole `graph-fusion` pass. Each
must then hold exactly one graph.flash_attention per layer (the layer count is read
from the model's transformers config) and no graph.softmax, and its outputs must still
match ONNX Runtime on the corpus inputs. The torch frontend's expansion of
scaled_dot_product_attention and nn.MultiheadAttention is checked the same way against
torch eager, including the fully-masked-row guard, which the rule absorbs (a fully
masked row gives 0 in graph.flash_attention, as in torch).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autofusion.dialects import graph
from autofusion.interpreter import argument_names, find_function, run_function
from autofusion.mlir_io import default_context
from autofusion.passes.fusion_statistics import FusionStatistics, describe_location
from autofusion.passes.fusion_switch import GRAPH_FUSION
from autofusion.passes.graph_fusion import GraphFusionPass

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus

RTOL = ATOL = 1e-4
RULE = "FlashAttentionFusionPass"

pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")


def flash_ops(module: Any) -> list[graph.FlashAttentionOp]:
    return [op for op in module.walk() if isinstance(op, graph.FlashAttentionOp)]


def op_names(module: Any) -> list[str]:
    return [op.name for op in module.walk()]


# --------------------------------------------------------------------------------------
# ONNX corpus
# --------------------------------------------------------------------------------------


@cache
def model_config(model: str) -> Any:
    """The transformers config of a corpus model (built with random weights, no download)."""
    built = model_corpus.MODELS[model].build()
    for sub in built.modules():  # type: ignore[attr-defined]
        if hasattr(sub, "config"):
            return sub.config
    raise AssertionError(f"{model} has no transformers config")


ATTENTION_MODELS = ("bert", "gpt2", "llama", "vit")
# the layout that leaves no head transposes: Llama's RoPE runs on the projections' BSND
# q and k once RopeTransposeSinkPass moves the head transposes after it
LAYOUT = {"bert": "BSND", "gpt2": "BSND", "llama": "BSND", "vit": "BSND"}


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
@pytest.mark.parametrize("model", ATTENTION_MODELS)
def test_corpus_attention_is_fused(model: str, exporter: str) -> None:
    config = model_config(model)
    path = model_corpus.model_path(model, exporter)
    module, _ = model_corpus.graph_fused(path)

    fused = flash_ops(module)
    assert len(fused) == config.num_hidden_layers
    assert "graph.softmax" not in op_names(module)
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    for op in fused:
        p = graph.Props(op.properties, op.name)
        assert p.text("layout") == LAYOUT[model]
        head_axis = 1 if p.text("layout") == "BNSD" else 2
        # repeat_kv is gone: the key keeps its kv heads (GQA in the op itself)
        assert op.key.type.get_shape()[head_axis] == kv_heads  # type: ignore[attr-defined]
        assert op.query.type.get_shape()[head_axis] == config.num_attention_heads  # type: ignore[attr-defined]
        # the fused op keeps the locations of the nodes it replaces
        assert "softmax" in (describe_location(op.location) or "").lower()

    feeds = model_corpus.model_inputs(model)
    model_corpus.assert_matches_ort(module, path, feeds, (RTOL, ATOL))


# --------------------------------------------------------------------------------------
# torch frontend: scaled_dot_product_attention and nn.MultiheadAttention
# --------------------------------------------------------------------------------------


def fuse_torch(
    fn: Callable[..., Any], *inputs: Any, modules: tuple[Any, ...] = ()
) -> tuple[Any, FusionStatistics]:
    """Import `fn` with the torch frontend, fuse, and check against torch on new inputs."""
    torch: Any = pytest.importorskip("torch")
    from frontends.torch import import_module

    class Fn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.parts = torch.nn.ModuleList(modules)

        def forward(self, *args: Any) -> Any:
            return fn(*args)

    model = Fn().eval()
    module = import_module(model, inputs)
    stats = GraphFusionPass().run(module)
    module.verify()
    fresh = tuple(torch.randn_like(t) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        want = model(*fresh)
    names = argument_names(find_function(module))
    got = run_function(module, {n: t.numpy() for n, t in zip(names, fresh, strict=True)})
    (value,) = got.values()
    np.testing.assert_allclose(value, want.numpy(), rtol=RTOL, atol=ATOL)
    return module, stats


def flash_props(module: Any) -> tuple[bool, str, int]:
    """(causal, layout, operand count) of the module's single flash attention."""
    (op,) = flash_ops(module)
    p = graph.Props(op.properties, op.name)
    return p.flag("causal"), p.text("layout"), len(op.operands)


@pytest.fixture
def torch_mod() -> Any:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch


def test_sdpa_causal(torch_mod: Any) -> None:
    sdpa = torch_mod.nn.functional.scaled_dot_product_attention
    q, k, v = (torch_mod.randn(2, 4, 5, 8) for _ in range(3))
    module, _ = fuse_torch(lambda q, k, v: sdpa(q, k, v, is_causal=True), q, k, v)
    assert flash_props(module) == (True, "BNSD", 3)
    assert "graph.softmax" not in op_names(module)


def test_sdpa_constant_window_mask_is_an_operand(torch_mod: Any) -> None:
    # a banded mask built in forward: a constant, not causal, no row fully masked
    sdpa = torch_mod.nn.functional.scaled_dot_product_attention
    q, k, v = (torch_mod.randn(1, 2, 6, 8) for _ in range(3))

    def band(q: Any, k: Any, v: Any) -> Any:
        idx = torch_mod.arange(6)
        mask = (idx[:, None] - idx[None, :]).abs() <= 1
        return sdpa(q, k, v, attn_mask=mask)

    module, _ = fuse_torch(band, q, k, v)
    assert flash_props(module) == (False, "BNSD", 4)


def test_sdpa_grouped_query(torch_mod: Any) -> None:
    sdpa = torch_mod.nn.functional.scaled_dot_product_attention
    q, k, v = torch_mod.randn(1, 4, 3, 8), torch_mod.randn(1, 2, 5, 8), torch_mod.randn(1, 2, 5, 8)
    module, _ = fuse_torch(lambda q, k, v: sdpa(q, k, v, enable_gqa=True), q, k, v)
    (op,) = flash_ops(module)
    assert op.key.type.get_shape()[1] == 2  # type: ignore[attr-defined]
    assert "graph.expand" not in op_names(module)


def test_sdpa_runtime_mask_guard_is_absorbed(torch_mod: Any) -> None:
    # a runtime boolean mask that masks a whole row: torch gives 0 there (the frontend's
    # guard), and so does graph.flash_attention; fuse_torch checks the numbers
    sdpa = torch_mod.nn.functional.scaled_dot_product_attention
    q, k, v = (torch_mod.randn(1, 2, 3, 8) for _ in range(3))
    mask = torch_mod.tensor([[True, False, True], [False, False, False], [True, True, True]])
    module, stats = fuse_torch(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), q, k, v, mask)
    assert flash_props(module) == (False, "BNSD", 4)
    assert "graph.softmax" not in op_names(module)
    assert not stats.rules[GRAPH_FUSION][RULE].refusals


def test_multihead_attention(torch_mod: Any) -> None:
    mha = torch_mod.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch_mod.randn(2, 5, 16)
    module, _ = fuse_torch(lambda x: mha(x, x, x, need_weights=False)[0], x, modules=(mha,))
    assert flash_props(module) == (False, "BNSD", 3)
    assert "graph.softmax" not in op_names(module)


def test_multihead_attention_constant_causal_mask(torch_mod: Any) -> None:
    # the float causal mask built in forward (0 / -inf) is recognised as causal
    mha = torch_mod.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch_mod.randn(2, 6, 16)

    def causal(x: Any) -> Any:
        mask = torch_mod.nn.Transformer.generate_square_subsequent_mask(6)
        return mha(x, x, x, attn_mask=mask, need_weights=False)[0]

    module, _ = fuse_torch(causal, x, modules=(mha,))
    assert flash_props(module) == (True, "BNSD", 3)


# --------------------------------------------------------------------------------------
# Refusal reasons of the lit file's negative cases
# --------------------------------------------------------------------------------------


def test_refusal_reasons() -> None:
    from autofusion.mlir_io import parse_module

    path = Path(__file__).parent / "filecheck/passes/graph-fusion/flash-attention.mlir"
    chunks = {
        match.group(1): chunk
        for chunk in path.read_text().split("// -----")
        if (match := re.search(r"^func\.func @(\w+)\(", chunk, re.MULTILINE))
    }
    reasons: list[str] = []
    for name in ("refusals", "more_refusals"):
        module = parse_module(default_context(), chunks[name], f"{name}.mlir")
        stats = GraphFusionPass(only=(RULE,)).run(module)
        reasons += [reason for _, reason in stats.rules[GRAPH_FUSION][RULE].refusals]
    expected = [
        "the softmax is over axis 2, not the last axis",
        "the scores (graph.mul) have other users",
        "the scores are scaled after the mask is added",
        "does not swap exactly the sequence and head-dim axes",
        "2 masks apply; graph.flash_attention takes one",
        "the key operand of Q·Kᵀ is not a single-use transpose",
    ]
    assert len(reasons) == len(expected)
    for want, got in zip(expected, reasons, strict=True):
        assert want in got
