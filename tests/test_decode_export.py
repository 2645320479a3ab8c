"""The export corpus's decode steps (tests/export_corpus.py) update their KV cache the
ways exporters write it: a DynamicCache by Concat, a StaticCache by a scatter at the
position (ScatterND from dynamo, ScatterElements from the legacy exporter). Their
`afc compile --check` is tests/test_export_corpus.py's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_corpus

pytest.importorskip("transformers")
onnx = pytest.importorskip("onnx")

# (model, exporter) -> the ops that must write the new key and value into the cache
UPDATE = {
    ("llama_decode", "dynamo"): "Concat",
    ("llama_decode", "legacy"): "Concat",
    ("qwen2_decode", "dynamo"): "Concat",
    ("qwen2_decode", "legacy"): "Concat",
    ("llama_decode_static", "dynamo"): "ScatterND",
    ("llama_decode_static", "legacy"): "ScatterElements",
}


@pytest.mark.parametrize(("model", "exporter"), sorted(UPDATE))
def test_cache_outputs_come_from_the_update(model: str, exporter: str) -> None:
    graph = onnx.load(str(export_corpus.model_path(model, exporter))).graph
    producer = {out: node for node in graph.node for out in node.output}
    cache_outputs = graph.output[1:]  # the hidden state, then each layer's keys, values
    assert len(cache_outputs) == 2 * 2
    for out in cache_outputs:
        seen, todo = set(), [out.name]
        while todo:  # the producers up to the graph inputs
            node = producer.get(todo.pop())
            if node is not None and node.name not in seen:
                seen.add(node.name)
                todo.extend(node.input)
        ops = {n.op_type for n in graph.node if n.name in seen}
        assert UPDATE[model, exporter] in ops, (out.name, sorted(ops))
        dims = [d.dim_value for d in out.type.tensor_type.shape.dim]
        assert dims[2] in (export_corpus.PAST + 1, 0), dims  # PAST + 1 positions (or symbolic)
