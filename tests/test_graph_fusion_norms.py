"""Norm, GELU, SiLU/SwiGLU and RoPE recognition on real models.

The corpus transformers (tests/model_corpus.py: BERT, GPT-2, Llama, ViT under both torch
exporters) and Llama through our torch frontend are imported, fused with the recognition
rules plus the rules that predate them, and checked for:

* counts derived from each model's config (never from the fused output): every norm of
  the architecture is exactly one named norm op, the ones after a residual add fused with
  it; every MLP is one graph.ffn (FFNFusionPass), with its GELU (one gelu) or Llama's
  SwiGLU inside; Llama's query/key rotations are RoPE;
* no leftover primitive of those patterns (reduce_mean, erf, sqrt, pow, ...);
* outputs that still match ONNX Runtime (or torch eager for the torch frontend), with
  the tolerances of tests/test_onnx_import.py.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from xdsl.dialects.builtin import ModuleOp, StringAttr  # noqa: E402

from autofusion.interpreter import run_function  # noqa: E402
from autofusion.mlir_io import default_context  # noqa: E402
from autofusion.passes.graph_fusion import GraphFusionPass  # noqa: E402
from frontends.onnx import import_onnx_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5

RECOGNITION = (
    "LayerNormFusionPass",
    "RmsNormFusionPass",
    "AddLayerNormFusionPass",
    "AddRmsNormFusionGraphPass",
    "GeluFusionPass",
    "SiluFusionPass",
    "SwiGluFusionPass",
    "RotaryPositionEmbeddingFusionPass",
    "FFNFusionPass",
)
# the rules that came before recognition: their interplay is part of what is tested
EARLIER = (
    "ConvBatchnormFusionPass",
    "ConvBiasAddFusionPass",
    "MatMulBiasAddFusionPass",
    "ConvActivationFusionPass",
    "MatMulActivationFusionPass",
)
RULES = RECOGNITION + EARLIER

TRANSFORMERS = ("bert", "gpt2", "llama", "vit")
NORMS = ("layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm")
# primitives that only occur inside the recognised patterns of these models
PATTERN_PRIMITIVES = {
    "graph.reduce_mean",
    "graph.erf",
    "graph.sqrt",
    "graph.rsqrt",
    "graph.reciprocal",
    "graph.pow",
    "graph.sigmoid",
    "graph.silu",
    "graph.neg",
    "graph.slice",
}
# where GELU is the tanh form, tanh is one of them too (ViT's pooler keeps its own tanh)
TANH_GELU_PRIMITIVES = PATTERN_PRIMITIVES | {"graph.tanh"}


def config_of(name: str) -> Any:
    """The transformers config a corpus model is built from."""
    module = model_corpus.MODELS[name].build()
    return next(m.config for m in module.modules() if hasattr(m, "config"))


def expected_counts(name: str, config: Any) -> Counter[str]:
    """The named ops the architecture implies, from its config.

    Each of the L blocks has two norms (before/after attention, or after attention and
    after the MLP) and there is one more (embeddings, or the final norm): 2L + 1 norms
    ("norms" below), plain or fused with the residual add before them. The add stays
    out of the norm when a projection's result is its addend (the matmul's kernel, or
    graph.ffn's residual, takes it): where the exporter puts a reshape between, or
    the sum is no residual, it fuses. The embeddings' norm reads no residual: its
    position embedding broadcasts over the batch (BERT, GPT-2, ViT) or is absent
    (Llama's first norm reads the token embedding itself).
    """
    layers = config.num_hidden_layers
    want: Counter[str] = Counter()
    want["norms"] = 2 * layers + 1
    # every MLP is one graph.ffn (its SwiGLU or GELU inside: no graph.swiglu is left)
    want["graph.ffn"] = layers
    want["graph.swiglu"] = 0
    if name == "llama":
        want["graph.rope"] = 2 * layers  # queries and keys
    else:
        want["gelu"] = layers  # one GELU per MLP: the FFN's activation
    return want


def fuse(module: ModuleOp) -> Counter[str]:
    """Run the rules on `module`; the op counts after, GELU epilogues counted as "gelu"."""
    GraphFusionPass(only=RULES).run(module)
    module.verify()
    counts = Counter(op.name for op in module.walk())
    counts["norms"] = sum(counts[f"graph.{n}"] for n in NORMS)
    counts["gelu"] = counts["graph.gelu"] + sum(
        1
        for op in module.walk()
        if isinstance(act := op.properties.get("activation"), StringAttr)
        and act.data.startswith("gelu")
    )
    return counts


def check_counts(
    label: str, counts: Counter[str], want: Counter[str], primitives: set[str]
) -> None:
    for op, n in want.items():
        assert counts[op] == n, f"{label}: {counts[op]} x {op}, expected {n}"
    leftover = {op: counts[op] for op in primitives if counts[op]}
    assert not leftover, f"{label}: pattern primitives left: {leftover}"


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
@pytest.mark.parametrize("name", TRANSFORMERS)
def test_corpus_patterns_become_named_ops(name: str, exporter: str) -> None:
    path = model_corpus.model_path(name, exporter)
    module = import_onnx_file(default_context(), path)
    counts = fuse(module)
    want = expected_counts(name, config_of(name))
    primitives = TANH_GELU_PRIMITIVES if name == "gpt2" else PATTERN_PRIMITIVES
    check_counts(f"{name}/{exporter}", counts, want, primitives)
    feeds = model_corpus.model_inputs(name)
    model_corpus.assert_matches_ort(module, path, feeds, (RTOL, ATOL), f"{name}/{exporter}")


class Block(torch.nn.Module):
    """A pre-norm block written as transformers writes it, for the torch frontend's
    decomposition: nn.LayerNorm (kept whole by the frontend), GPT-2's gelu_new spelled
    out, and Llama's RMSNorm spelled out (pow, mean, rsqrt)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(hidden)
        self.fc = torch.nn.Linear(hidden, hidden)
        self.rms_weight = torch.nn.Parameter(torch.rand(hidden) + 0.5)

    def forward(self, x: Any, residual: Any) -> Any:
        h = self.ln(x + residual)
        h = self.fc(h)
        h = 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * torch.pow(h, 3.0))))
        variance = h.pow(2).mean(-1, keepdim=True)
        return self.rms_weight * (h * torch.rsqrt(variance + 1e-6))


def torch_llama() -> Any:
    """The corpus Llama, called with token ids only (the frontend cannot import the
    attention-mask indexing the corpus wrapper passes)."""
    llama = model_corpus.MODELS["llama"].build().model  # type: ignore[attr-defined]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = llama

        def forward(self, ids: Any) -> Any:
            return self.model(ids, use_cache=False).last_hidden_state

    return Hidden().eval()


def check_against_torch(model: Any, inputs: tuple[Any, ...], module: ModuleOp) -> None:
    with torch.no_grad():
        want = model(*inputs).numpy()
    (got,) = run_function(module, {f"in{i}": t.numpy() for i, t in enumerate(inputs)}).values()
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_torch_frontend_llama() -> None:
    """Llama through our torch frontend: rsqrt norms, silu kept whole, projections as
    gemms between reshapes, cos/sin computed in the graph."""
    from frontends.torch import import_module

    model = torch_llama()
    ids = torch.from_numpy(model_corpus.model_inputs("llama")["input_ids"])
    module = import_module(model, (ids,), input_names=["in0"])
    counts = fuse(module)
    want = expected_counts("llama", model.model.config)
    check_counts("llama/torch", counts, want, PATTERN_PRIMITIVES)
    check_against_torch(model, (ids,), module)


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_torch_frontend_block() -> None:
    """nn.LayerNorm stays whole (only the residual add joins it); the spelled-out tanh
    GELU and RMS norm are recognised in the frontend's core-ATen decomposition."""
    from frontends.torch import import_module

    torch.manual_seed(0)
    model = Block(32).eval()
    inputs = (torch.randn(2, 8, 32), torch.randn(2, 8, 32))
    module = import_module(model, inputs, input_names=["in0", "in1"])
    counts = fuse(module)
    assert counts["graph.add_layer_norm"] == 1 and counts["graph.layer_norm"] == 0
    check_counts(
        "block/torch", counts, Counter({"gelu": 1, "graph.rms_norm": 1}), TANH_GELU_PRIMITIVES
    )
    check_against_torch(model, inputs, module)
