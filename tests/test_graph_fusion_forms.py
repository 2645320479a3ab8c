"""Fusion forms of current exports: transformers 5.x models at their default attention
implementation (SDPA), exported by torch's two exporters at their default opsets.

Each model is built from a small config with random weights (no download), exported,
imported and run through the whole `graph-fusion` pass. Afterwards each attention is one
graph.flash_attention (torch's SDPA decomposition: the NaN guard after the softmax, Kᵀ
transposed on [B*H, S, D], repeat_kv flattened at once; T5's position bias without a
scale), each MLP the expected fused op (Phi's tanh GELU in a parallel block and T5's gated
tanh GELU: graph.ffn), and the outputs still match ONNX Runtime with its optimizations
disabled.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_corpus

import model_corpus
from model_corpus import VOCAB, ModelSpec, _bert, _gpt2, _HiddenStates, _llama, _token_inputs

pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")


def _phi() -> object:
    """Phi: a parallel block (attention and a tanh-GELU MLP read one norm's output)."""
    import torch
    from transformers import PhiConfig, PhiModel

    torch.manual_seed(0)
    config = PhiConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
    )
    return _HiddenStates.wrap(PhiModel(config).eval(), ("input_ids", "attention_mask"))


def _whisper_encoder() -> object:
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    torch.manual_seed(0)
    config = WhisperConfig(
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=4,
        encoder_ffn_dim=64,
        num_mel_bins=8,
        max_source_positions=8,
    )
    encoder = WhisperEncoder(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            return self.encoder(features, return_dict=True)[0]

    return Encoder().eval()


def _features() -> dict[str, np.ndarray]:
    # [B, mel bins, frames]: two stride-2 convs bring 16 frames to max_source_positions
    return {"input_features": np.random.default_rng(0).standard_normal((2, 8, 16), np.float32)}


def _spec(name: str, build: Any, types: bool = False) -> ModelSpec:
    return ModelSpec(name, build, lambda: _token_inputs(True, types), 0, default_opsets=True)


SPECS = {
    s.name: s
    for s in (
        _spec("gpt2_sdpa", lambda: _gpt2("sdpa")),
        _spec("llama_sdpa", lambda: _llama("sdpa")),
        _spec("bert_sdpa", lambda: _bert("sdpa"), types=True),
        # the export corpus's T5 v1.1 encoder (eager attention: the dynamo exporter fails
        # on T5's SDPA path, a non-viewable reshape)
        _spec("t5_encoder", export_corpus._t5_encoder),
        _spec("phi", _phi),
        ModelSpec("whisper_encoder", _whisper_encoder, _features, 0, default_opsets=True),
    )
}
# fused op counts after graph-fusion: 2 layers each
EXPECTED: dict[str, dict[str, int]] = {
    "gpt2_sdpa": {"graph.flash_attention": 2, "graph.ffn": 2},
    "llama_sdpa": {"graph.flash_attention": 2, "graph.ffn": 2},
    "bert_sdpa": {"graph.flash_attention": 2, "graph.ffn": 2},
    # the gated tanh-GELU MLP: graph.ffn geglu_tanh
    "t5_encoder": {"graph.flash_attention": 2, "graph.ffn": 2},
    "phi": {"graph.flash_attention": 2, "graph.ffn": 2},
    "whisper_encoder": {"graph.flash_attention": 2, "graph.ffn": 2},
}
# pieces of a decomposed attention that must not survive
PIECES = ("graph.softmax", "graph.is_nan", "graph.erf", "graph.tanh")


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_current_export_forms_fuse(model: str, exporter: str) -> None:
    pytest.importorskip("transformers")
    path = model_corpus.spec_path(SPECS[model], exporter)
    module, ops = model_corpus.graph_fused(path)
    assert {name: ops[name] for name in EXPECTED[model]} == EXPECTED[model], ops
    assert not any(ops[p] for p in PIECES), {p: ops[p] for p in PIECES if ops[p]}
    model_corpus.assert_matches_ort(module, path, SPECS[model].inputs())
