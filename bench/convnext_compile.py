"""`afc compile` time per stage on ConvNeXt-T at 224x224, a CNN whose passes plan many
kernels: transformers' ConvNextModel at ConvNeXt-T's sizes (channels 96, 192, 384, 768;
3, 3, 9 and 3 blocks; random weights), exported with torch's default exporter and cached
under `.cache/afc-compile-bench/` (gitignored).

The table gives, for `afc compile` in-process on the Ascend910B1 chip (no --check, no
files written), each stage's seconds and the whole compile's wall and CPU seconds, each
the best of three. Repeated blocks plan as one (lowering/fitted_tiling.py): split-fusion
and ub-fusion should stay small beside lower-to-buffer and the Ascend C printer, which
build every kernel.

    python bench/convnext_compile.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from check_speed import CHIP, cached_export

IMAGE = (1, 3, 224, 224)


def convnext_t() -> object:
    """ConvNeXt-T's backbone (its pooled features out), random weights: the export
    corpus's ConvNeXt (tests/export_corpus.py) at ConvNeXt-T's sizes."""
    import export_corpus

    build = export_corpus._vision(
        "ConvNextConfig", "ConvNextModel", hidden_sizes=[96, 192, 384, 768], depths=[3, 3, 9, 3]
    )
    return build()


def timed_compile(model: Path) -> tuple[dict[str, float], float, float]:
    """One in-process compile: seconds per stage, wall seconds, CPU seconds."""
    from autofusion.driver.compile import CompileOptions, compile_model

    start, cpu = time.perf_counter(), time.process_time()
    c = compile_model(str(model), CompileOptions(chip=CHIP))
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    return {s.name: s.seconds for s in c.stages}, wall, used


def main() -> None:
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"convnext_compile: skipped ({e.name} is not installed)")
        return
    path = cached_export("afc-compile-bench", "convnext_t_224", convnext_t, IMAGE)
    runs = [timed_compile(path) for _ in range(3)]
    stages = list(runs[0][0])
    print(f"afc compile ConvNeXt-T 224x224 ({CHIP}; seconds, best of 3)")
    print(" ".join(f"{s:>15}" for s in stages) + f" {'wall':>7} {'cpu':>7}")
    best = [min(r[0][s] for r in runs) for s in stages]
    wall, cpu = min(r[1] for r in runs), min(r[2] for r in runs)
    print(" ".join(f"{t:15.2f}" for t in best) + f" {wall:7.1f} {cpu:7.1f}")


if __name__ == "__main__":
    main()
