"""ONNX import speed on the real-model corpus (tests/model_corpus.py).

For each corpus model and exporter: the ONNX node count, the import time (best of
three, in-process, a fresh context each time) and the number of graph ops it gives.
The corpus is exported on first use (a few minutes; cached under .cache/afc-corpus/).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def qwen_import() -> None:
    """The 28-layer Qwen2.5-7B-shaped text model (shape-only weights): import time, ops."""
    from autofusion.mlir_io import default_context
    from frontends.text import parse_text_model

    path = ROOT / "examples" / "qwen2_5_7b.afc"
    text = path.read_text()
    best = float("inf")
    count = 0
    for _ in range(3):
        start = time.perf_counter()
        module = parse_text_model(default_context(), text, str(path))
        best = min(best, time.perf_counter() - start)
        count = sum(1 for op in module.walk() if op.name.startswith("graph."))
    print(f"{'qwen2.5-7b':14} {'text':8} {'-':>10} {best * 1e3:10.1f} {count:10d}")


def main() -> None:
    """Print one row per (model, exporter), then the Qwen text model."""
    try:
        import onnx
        import torch  # noqa: F401
    except ImportError as e:
        print(f"import_models: skipped ({e.name} is not installed)")
        return
    import onnx

    from autofusion.mlir_io import default_context
    from frontends.onnx import import_onnx_file

    import model_corpus

    print("Model import (best of 3)")
    print(f"{'model':14} {'exporter':8} {'onnx nodes':>10} {'import ms':>10} {'graph ops':>10}")
    for model, exporter in model_corpus.entries():
        path = model_corpus.model_path(model, exporter)
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        best = float("inf")
        count = 0
        for _ in range(3):
            start = time.perf_counter()
            module = import_onnx_file(default_context(), path)
            best = min(best, time.perf_counter() - start)
            count = sum(1 for op in module.walk() if op.name.startswith("graph."))
        print(f"{model:14} {exporter:8} {nodes:10d} {best * 1e3:10.1f} {count:10d}")
    qwen_import()


if __name__ == "__main__":
    main()
