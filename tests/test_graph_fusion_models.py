"""The whole graph-fusion pass on the real-model corpus (issue 4, point 5).

Every corpus model under both torch exporters goes through `graph-fusion` with all
rules on. Afterwards: every norm is one named norm op and no piece of a decomposed norm
or GELU is left (transformers), every BatchNormalization has disappeared into a
convolution (ResNet), and the outputs still match ONNX Runtime with its
optimizations disabled. tests/test_graph_fusion_attention.py checks the attention half.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from autofusion.mlir_io import default_context

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus

pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")

# norms per corpus transformer: one per sub-layer (2 per layer, 2 layers) plus the
# embedding norm (BERT, ViT: final; GPT-2, Llama: final norm)
NORMS = {"bert": 5, "gpt2": 5, "llama": 5, "vit": 5}
NORM_OPS = ("graph.layer_norm", "graph.rms_norm", "graph.add_layer_norm", "graph.add_rms_norm")
# what a decomposed norm or GELU is made of; none may survive
PIECES = ("graph.reduce_mean", "graph.erf", "graph.sqrt", "graph.rsqrt", "graph.pow")
# the corpus models that keep explicit BatchNormalization nodes (MobileNetV2 and
# resnet_fused are exported with BN already folded)
CONV_MODELS = ("resnet",)


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
@pytest.mark.parametrize("model", sorted(NORMS))
def test_every_norm_and_gelu_is_one_op(model: str, exporter: str) -> None:
    module, ops = model_corpus.graph_fused(model_corpus.model_path(model, exporter))
    # a norm folded into the matmuls it feeds leaves its statistics; one folded into a
    # graph.ffn, the ffn's norm_epsilon
    normed_ffns = sum(
        1 for op in module.walk() if op.name == "graph.ffn" and "norm_epsilon" in op.properties
    )
    folded = ops["graph.rms_norm_stats"] + normed_ffns
    assert sum(ops[n] for n in NORM_OPS) + folded == NORMS[model], ops
    assert not any(ops[p] for p in PIECES), {p: ops[p] for p in PIECES if ops[p]}
    # each layer's MLP is one graph.ffn (SwiGLU for Llama, GELU for the others)
    assert ops["graph.ffn"] == 2 and ops["graph.swiglu"] == 0, ops
    if model in ("bert", "vit", "gpt2"):
        # each MLP's GELU is one op: a graph.gelu or the activation epilogue of its matmul
        # (here: of its graph.ffn)
        gelus = ops["graph.gelu"] + sum(
            1
            for op in module.walk()
            if "activation" in op.properties and "gelu" in str(op.properties["activation"])
        )
        assert gelus == 2
    model_corpus.assert_matches_ort(
        module, model_corpus.model_path(model, exporter), model_corpus.model_inputs(model)
    )


@pytest.mark.parametrize("exporter", model_corpus.EXPORTERS)
@pytest.mark.parametrize("model", CONV_MODELS)
def test_batch_norm_disappears_into_the_convs(model: str, exporter: str) -> None:
    from frontends.onnx import import_onnx_file

    before = Counter(
        op.name
        for op in import_onnx_file(
            default_context(), model_corpus.model_path(model, exporter)
        ).walk()
    )
    assert before["graph.batch_norm"] > 0
    module, after = model_corpus.graph_fused(model_corpus.model_path(model, exporter))
    assert after["graph.batch_norm"] == 0
    assert after["graph.conv2d"] == before["graph.conv2d"]
    model_corpus.assert_matches_ort(
        module, model_corpus.model_path(model, exporter), model_corpus.model_inputs(model)
    )
