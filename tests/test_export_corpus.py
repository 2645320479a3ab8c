"""The real-export corpus through `afc compile --check` (issue 11, point 4).

Every architecture of tests/export_corpus.py, exported by torch at its default opset
and settings, is compiled in memory with `--check`: the fused graph, the buffer kernels
and fused.onnx (in ONNX Runtime) must match the original, and fused.onnx must match
ONNX Runtime on the original .onnx file. Then the fusions each architecture should get
are counted and compared with `EXPECT`: attention -> graph.flash_attention, norms ->
norm ops, GELU -> graph.gelu (or the activation of a graph.ffn).

Where afc misses a fusion today, `GAPS` holds today's count and the reason, so the
test fails both when a fusion regresses and when a gap closes (update the table then);
a model whose `afc compile --check` fails today is in `FAILS` with the exact failure.
Each model's compile with --check must finish in under 60 s (the issue's budget).

Each architecture runs with both exporters, dynamo (torch's default) and TorchScript
(`legacy`); `AFC_EXPORT_CORPUS=dynamo` (or `legacy`) runs one of them (`all`: both):

    AFC_EXPORT_CORPUS=dynamo pytest tests/test_export_corpus.py
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from autofusion.dialects import graph
from autofusion.driver.compile import CompileOptions, compile_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_corpus

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")

# the exporters to run: both, unless AFC_EXPORT_CORPUS names one
EXPORTERS = tuple(
    e for e in export_corpus.EXPORTERS if os.environ.get("AFC_EXPORT_CORPUS", "all") in ("all", e)
)
# the budget for one model's `afc compile --check` on a 2-core machine
SECONDS = 60.0

# a norm split by split-fusion counts once, by its stats half
NORM_OPS = (
    "graph.layer_norm",
    "graph.rms_norm",
    "graph.add_layer_norm",
    "graph.add_rms_norm",
    "graph.layer_norm_stats",
    "graph.rms_norm_stats",
)
GELU_FFN = ("gelu", "gelu_tanh", "geglu", "geglu_tanh")

# What full fusion gives each architecture after `afc compile`: flash attentions, norm ops,
# GELUs (graph.gelu, or a graph.ffn with a GELU activation) and FFN kernels (graph.ffn).
# Transformers have one attention and one MLP per layer (2 layers) and two norms per layer
# plus a final (or embedding) norm; Phi one norm per layer (parallel attention and MLP).
_LAYERS2 = {"attention": 2, "norm": 5, "ffn": 2}
_CNN = {"attention": 0, "norm": 0, "gelu": 0, "ffn": 0}
EXPECT: dict[str, dict[str, int]] = {
    "bert": {**_LAYERS2, "gelu": 2},
    "roberta": {**_LAYERS2, "gelu": 2},
    "distilbert": {**_LAYERS2, "gelu": 2},
    "gpt2": {**_LAYERS2, "gelu": 2},  # gelu_new: the tanh form
    "llama": {**_LAYERS2, "gelu": 0},
    "qwen2": {**_LAYERS2, "gelu": 0},
    "mistral": {**_LAYERS2, "gelu": 0},
    "phi": {**_LAYERS2, "norm": 3, "gelu": 2},
    "gemma": {**_LAYERS2, "gelu": 2},  # gelu_pytorch_tanh in a gated MLP (geglu_tanh)
    "t5_encoder": {**_LAYERS2, "gelu": 2},  # gated-gelu: gelu_new, gated (geglu_tanh)
    "whisper_encoder": {**_LAYERS2, "gelu": 4},  # two after the conv stem, two in the MLPs
    "vit": {**_LAYERS2, "gelu": 2},
    "deit": {**_LAYERS2, "gelu": 2},
    # 3 blocks; 2 norms each, the patch-embedding, the patch-merging and the final norm
    "swin": {"attention": 3, "norm": 9, "gelu": 3, "ffn": 3},
    # LayerNorm after the stem, in each block, before the downsampling conv, in the pooler
    "convnext": {"attention": 0, "norm": 5, "gelu": 2, "ffn": 2},
    "resnet": _CNN,  # BatchNorm folds into the convolutions
    "mobilenet_v2": _CNN,
    "efficientnet": _CNN,
    "unet_block": {**_CNN, "norm": 2},  # GroupNormalization imports as graph.layer_norm
    "lstm": _CNN,
    "llama_decode": {**_LAYERS2, "gelu": 0},
    "qwen2_decode": {**_LAYERS2, "gelu": 0},
    "llama_decode_static": {**_LAYERS2, "gelu": 0},  # the cache written by ScatterND
}

# (model, exporter) -> (the counts that differ from EXPECT today, why); this table records
# what afc does today
GAPS: dict[tuple[str, str], tuple[dict[str, int], str]] = {}

# (model, exporter) -> the exact failure of `afc compile --check` today (strict xfail)
FAILS: dict[tuple[str, str], str] = {}

# model -> the transposes left as library ops after fusion, both exporters (a regression
# and a fix both fail: update it then). ConvNeXt's are all gone (issue 15): 2 cancel
# across the residual add (ElementwiseTransposeSinkPass), the 6 that move the innermost
# axis next to a conv or a norm are the rows kernels' channel-major addressing
# (lowering/row_transpose.py). Phi's head transposes sink through its partial rotary
# (PartialRotaryFusionPass)
LIBRARY_TRANSPOSES = {"convnext": 0, "phi": 0}

# decoder model -> its generated kernels, both exporters (issue 15): four per layer (input
# norm statistics + QKV + ropes, attention, o_proj + residual, norm + FFN + residual; the
# rotary tables fold to one constant each: ConstantFuseSamePass) and the final norm.
# Gemma scales its embeddings first: that rows kernel takes layer 0's norm statistics
DECODER_KERNELS = {"llama": 9, "qwen2": 9, "mistral": 9, "gemma": 10}

# model -> ops none of its kernels leaves to the library: Phi's partial ropes are rows
# kernels (lowering/row_rope.py) that read the merged QKV through views (no split)
NO_LIBRARY_OPS = {"phi": ("graph.rope", "graph.split")}


def fusion_counts(module: object) -> dict[str, int]:
    """The attention, norm, GELU and FFN counts of a fused graph module."""
    from autofusion.dialects.graph_fused import FfnOp

    ops = list(module.walk())  # type: ignore[attr-defined]
    names = Counter(op.name for op in ops)
    ffns = [op for op in ops if isinstance(op, FfnOp)]
    return {
        "attention": names["graph.flash_attention"],
        # a norm the ffn normalises its input by (its norm_epsilon) counts as one
        "norm": sum(names[n] for n in NORM_OPS)
        + sum(1 for op in ffns if op.norm_epsilon is not None),
        "gelu": names["graph.gelu"] + sum(1 for op in ffns if op.activation.data in GELU_FFN),
        "ffn": len(ffns),
    }


def library_transposes(module: object) -> int:
    """The graph.transpose ops of a fused graph module that no kernel holds."""
    return sum(
        1
        for op in module.walk()  # type: ignore[attr-defined]
        if isinstance(op, graph.TransposeOp) and not isinstance(op.parent_op(), graph.FusionGroupOp)
    )


def expected(model: str, exporter: str) -> dict[str, int]:
    gap = GAPS.get((model, exporter))
    return {**EXPECT[model], **(gap[0] if gap else {})}


def _params() -> list[object]:
    out: list[object] = []
    for model in export_corpus.MODELS:
        for exporter in EXPORTERS:
            why = FAILS.get((model, exporter))
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            out.append(pytest.param(model, exporter, id=f"{model}-{exporter}", marks=marks))
    return out


def test_tables_name_corpus_models() -> None:
    assert set(EXPECT) == set(export_corpus.MODELS)
    for model, exporter in [*GAPS, *FAILS]:
        assert model in export_corpus.MODELS and exporter in export_corpus.EXPORTERS
    assert EXPORTERS, f"AFC_EXPORT_CORPUS names none of {export_corpus.EXPORTERS}"
    assert len(export_corpus.MODELS) >= 20


@pytest.mark.parametrize(("model", "exporter"), _params())
def test_export_compiles_checks_and_fuses(model: str, exporter: str) -> None:
    path = export_corpus.model_path(model, exporter)
    start = time.perf_counter()
    c = compile_model(str(path), CompileOptions(check=True))
    seconds = time.perf_counter() - start
    assert c.fused is not None and c.check is not None
    bad = [f"{r['what']}: {r.get('result', '')}" for r in c.check["comparisons"] if not r["ok"]]
    assert c.check["ok"], f"{c.check['verdict']}; {bad}"
    checked = {r["what"] for r in c.check["comparisons"]}
    assert "ONNX Runtime: fused.onnx vs original .onnx" in checked, c.check
    got = fusion_counts(c.fused)
    want = expected(model, exporter)
    if (model, exporter) in GAPS and got != want:
        pytest.fail(f"{got} != {want}: a known gap changed; update GAPS ({GAPS[model, exporter]})")
    assert got == want
    if model in LIBRARY_TRANSPOSES:
        assert library_transposes(c.fused) == LIBRARY_TRANSPOSES[model]
    if model in NO_LIBRARY_OPS:
        assert c.ub_result is not None
        left = [op.name for op, _ in c.ub_result.library_ops]
        assert not set(left) & set(NO_LIBRARY_OPS[model]), left
    if model in DECODER_KERNELS:
        assert c.after is not None
        assert c.after.totals()["fused_kernels"] == DECODER_KERNELS[model]
    assert seconds < SECONDS, f"afc compile --check took {seconds:.1f}s"
