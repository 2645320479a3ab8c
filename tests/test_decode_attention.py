"""The decode_attention template (flash-decoding): the keys of each query tile split over
the cores, partials combined after a SyncAll. Differential through the interpreter (graph
vs buffer IR) and the emulated Ascend C, and the cost model's choice between it and the
attention template."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from test_cube_kernels import SPLIT, attention_case, check, feeds_for, kernel_of, lowered

from autofusion.codegen.emulate import run_function_emulated
from autofusion.dialects import buffer, graph
from autofusion.hardware import get_chip
from autofusion.interpreter import run_function
from autofusion.lowering import attention_plan
from autofusion.lowering.attention_tiling import AttentionLayout, AttentionTiles
from autofusion.lowering.decode_attention_tiling import decode_tiling
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.template import group_parts
from autofusion.lowering.template_registry import plan_group
from autofusion.mlir_io import default_context, parse_module
from autofusion.passes.fusion_rule import Refusal

# (B, Hq, Hkv, Sq, Skv, D, Dv), layout, causal, mask
CASES = [
    ((1, 4, 1, 1, 600, 32, 32), "BNSD", False, "none"),  # 19 splits of one key block
    ((1, 8, 2, 2, 777, 32, 16), "BNSD", False, "bool"),  # GQA 4 x Sq 2; 9 splits, 9 keys last
    ((2, 4, 1, 1, 901, 32, 32), "BSND", False, "bool"),  # batch 2, one mask row per batch
    ((1, 4, 2, 3, 500, 16, 32), "BNSD", False, "bool_keys"),  # Dv > D, a 1-D key mask
]


@pytest.fixture
def key_blocks_of_32(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """32-key blocks: interpreter-sized key ranges still split many ways (the decode plan
    takes its key blocks from the attention plan's)."""
    monkeypatch.setattr(attention_plan, "KV_CANDIDATES", (32,))
    yield


def test_tiling_splits_the_keys_in_whole_blocks() -> None:
    """Skv = 777 in 32-key blocks over 24 cores for 2 query tiles: 12 splits wanted,
    3 blocks each, so 9 splits of 96 keys, the last one 9 keys."""
    t = decode_tiling(IntOps(), [1, 8, 2, 2, 777], AttentionTiles(16, 32), 24, _layout()).values
    assert (t["items"], t["chunk"], t["splits"], t["steps"]) == (2, 96, 9, 18)
    assert 777 - (t["splits"] - 1) * t["chunk"] == 9
    assert t["tq"] == 16 and t["slot"] == 16 * (16 + 2)
    # as many query tiles as cores: no split
    full = decode_tiling(IntOps(), [6, 8, 4, 1, 4096], AttentionTiles(16, 32), 24, _layout())
    assert full.values["splits"] == 1 and full.blocks == 24


def _layout() -> AttentionLayout:
    return AttentionLayout(16, 16, 2, True)


@pytest.mark.parametrize("elt", ["f32", "f16"])
@pytest.mark.parametrize("case", CASES)
def test_decode_attention_matches_the_graph(case: tuple, elt: str, key_blocks_of_32: None) -> None:
    text, args = attention_case(*case, elt)
    after = check(text, SPLIT, feeds_for(args, 21), elt, "decode_attention")
    kernel = kernel_of(after)
    assert sum(isinstance(op, buffer.SyncAllOp) for op in kernel.walk()) == 1


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emulation needs g++")
@pytest.mark.parametrize(("case", "elt"), [(CASES[1], "f16"), (CASES[2], "f32")])
def test_decode_attention_emulated(case: tuple, elt: str, key_blocks_of_32: None) -> None:
    """The emulated kernel (every block side by side, meeting at SyncAll; cross-core
    workspace races checked) gives the graph's numbers."""
    text, args = attention_case(*case, elt)
    after = lowered(text, SPLIT)
    assert kernel_of(after).template.data == "decode_attention"
    feeds = feeds_for(args, 22)
    want = run_function(parse_module(default_context(), text, "g.mlir"), feeds)
    got = run_function_emulated(after, feeds)
    tol = 1e-5 if elt == "f32" else 2e-3
    for key, w in want.items():
        np.testing.assert_allclose(
            got[key].astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, err_msg=key
        )


def _chosen(case: tuple, chip: str, elt: str = "f16") -> str | Refusal:
    text, _ = attention_case(*case, elt)
    module = parse_module(default_context(), text, "g.mlir")
    g = next(op for op in module.walk() if isinstance(op, graph.FusionGroupOp))
    planned = plan_group(group_parts(g), get_chip(chip))
    return planned if isinstance(planned, Refusal) else planned[0].name


QWEN_DECODE = ((1, 28, 4, 1, 2048, 128, 128), "BNSD", False, "none")


@pytest.mark.parametrize(
    ("case", "chip", "template"),
    [
        (QWEN_DECODE, SPLIT, "decode_attention"),  # 4 KV heads, 24 cores: 6 splits each
        (((1, 28, 4, 1, 2048, 128, 128), "BSND", False, "bool"), SPLIT, "decode_attention"),
        (QWEN_DECODE, "Ascend910", "attention"),  # coupled: no SyncAll<false>
        (((1, 28, 4, 1, 2048, 128, 128), "BNSD", True, "none"), SPLIT, "attention"),  # causal
        (((1, 28, 4, 32, 2048, 128, 128), "BNSD", False, "none"), SPLIT, "attention"),  # 224 rows
        (((1, 28, 4, 1, 2048, 128, 128), "BNSD", False, "float"), SPLIT, "attention"),  # per head
        (((2, 4, 1, 1, 70, 32, 32), "BSND", False, "bool"), SPLIT, "attention"),  # short keys
        (((8, 8, 8, 1, 512, 64, 64), "BNSD", False, "none"), SPLIT, "attention"),  # 64 items
        (((2, 4, 4, 6, 6, 8, 8), "BNSD", False, "none"), SPLIT, "attention"),  # one key block
    ],
)
def test_cost_model_chooses_the_template(case: tuple, chip: str, template: str) -> None:
    assert _chosen(case, chip) == template


def test_qwen_decode_shape_lowers() -> None:
    """The Qwen2.5-7B decode attention (GQA 7, 2048 keys) on 910B1: a verified kernel."""
    text, _ = attention_case(*QWEN_DECODE, "f16")
    kernel = kernel_of(lowered(text, SPLIT))
    assert kernel.template.data == "decode_attention"
    assert any(isinstance(op, buffer.SyncAllOp) for op in kernel.walk())
