"""ONNX import speed on both model corpora, and the 28-layer Qwen text model's.

For each model and exporter of tests/model_corpus.py (pinned opsets) and of
tests/export_corpus.py (issue 11's real-export corpus, torch's default opset): the ONNX
node count, the import time (the best of three, in-process, a fresh context each time)
and the number of graph ops it gives. Times are CPU time (time.process_time), so that a
shared machine's load does not count. The corpora are exported on first use (a few
minutes; cached under .cache/afc-corpus/ and .cache/export-corpus/).
docs/onnx-frontend.md records the figures the import speed is held to.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
REPEATS = 3


def best_of(run: Callable[[], Any]) -> tuple[float, Any]:
    """(the smallest CPU time of REPEATS runs of `run`, in ms; its last result)."""
    best = float("inf")
    result: Any = None
    for _ in range(REPEATS):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return best * 1e3, result


def graph_ops(module: Any) -> int:
    return sum(1 for op in module.walk() if op.name.startswith("graph."))


def qwen_import() -> None:
    """The 28-layer Qwen2.5-7B-shaped text model (shape-only weights): import time, ops."""
    from autofusion.mlir_io import default_context
    from frontends.text import parse_text_model

    path = ROOT / "examples" / "qwen2_5_7b.afc"
    text = path.read_text()
    ms, module = best_of(lambda: parse_text_model(default_context(), text, str(path)))
    print(f"{'qwen2.5-7b':16} {'text':8} {'-':>10} {ms:10.1f} {graph_ops(module):10d}")


def corpus_imports(corpus: ModuleType, total: list[float]) -> None:
    """One row per (model, exporter) of `corpus` (model_corpus or export_corpus)."""
    import onnx

    from autofusion.mlir_io import default_context
    from frontends.onnx import import_onnx_file

    for model, exporter in corpus.entries():
        path = corpus.model_path(model, exporter)
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        ms, module = best_of(lambda p=path: import_onnx_file(default_context(), p))
        total[0] += ms
        print(f"{model:16} {exporter:8} {nodes:10d} {ms:10.1f} {graph_ops(module):10d}")


def main() -> None:
    """Print one row per (model, exporter) of each corpus, then the Qwen text model."""
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"import_models: skipped ({e.name} is not installed)")
        return
    import export_corpus

    import model_corpus

    header = f"{'model':16} {'exporter':8} {'onnx nodes':>10} {'import ms':>10} {'graph ops':>10}"
    for title, corpus in (
        ("model corpus (tests/model_corpus.py)", model_corpus),
        ("export corpus (tests/export_corpus.py)", export_corpus),
    ):
        total = [0.0]
        print(f"Model import, CPU ms (best of {REPEATS}): {title}")
        print(header)
        corpus_imports(corpus, total)
        print(f"{'total':16} {'':8} {'':>10} {total[0]:10.1f}")
    qwen_import()


if __name__ == "__main__":
    main()
