"""Decode with a KV cache: Qwen2.5-7B (28 layers, batch 1, past length 2048) on Ascend910B1.

One decode step (examples/make_qwen2_5_7b.py --decode: each layer appends its new key and
value to a 2048-position cache and attends one token over 2049 keys) with every op its
own kernel and after afc's fusion (graph-fusion, split-fusion, ub-fusion), from the
fusion report (autofusion/report.py): the estimated time per token (the cost model's
roofline per kernel, launches included), tokens/s, and the HBM bytes per token (the L2
traffic model). Printed next to the seed article's decode numbers (CANN graph
autofusion: 34 -> 89 tokens/s, 2.6x; HBM traffic -85%).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from qwen_fusion import CHIP, _import, _pipeline, _run_pass  # noqa: E402

LAYERS = 28
SEED_TOKENS_PER_S = (34.0, 89.0)  # the seed article's decode, before -> after fusion
SEED_HBM_CUT = 0.85


@dataclass(frozen=True)
class DecodeStep:
    """One decode step's estimate: kernels, microseconds and HBM bytes per token, and the
    templates of its kernels."""

    kernels: int
    us: float
    hbm_bytes: int
    templates: dict[str, int]
    lookup_us: float  # the embedding lookup (graph.gather), charged its whole table

    @property
    def tokens_per_s(self) -> float:
        return 1e6 / self.us


def _step(module: object) -> DecodeStep:
    from autofusion.hardware import get_chip
    from autofusion.report import build_report

    report = build_report(module, get_chip(CHIP), dynamic_size=1)  # type: ignore[arg-type]
    totals = report.totals()
    templates: dict[str, int] = {}
    for k in report.kernels:
        templates[k.template] = templates.get(k.template, 0) + 1
    lookup = sum(k.time_us for k in report.kernels if k.ops[0].startswith("graph.gather"))
    return DecodeStep(
        totals["kernels"], totals["time_us_after"], totals["hbm_bytes_after"], templates, lookup
    )


def measure(layers: int = LAYERS, past: int | None = None) -> tuple[DecodeStep, DecodeStep]:
    """(every op its own kernel, fused by afc) for a decode step of `layers` layers."""
    import make_qwen2_5_7b

    from autofusion.driver.compile import CompileOptions, one_kernel_per_op

    text = make_qwen2_5_7b.decode_model_text(layers, past or make_qwen2_5_7b.PAST)
    ctx, module = _import(text)
    unfused = _step(one_kernel_per_op(module, CompileOptions(dynamic_size=1)))
    for name in _pipeline():
        if name == "lower-to-buffer":
            break
        _run_pass(ctx, module, name)
    return unfused, _step(module)


def main() -> None:
    import make_qwen2_5_7b

    before, after = measure()
    print()
    print(
        f"Qwen2.5-7B decode ({LAYERS} layers, batch 1, past {make_qwen2_5_7b.PAST}, f16) on "
        f"{CHIP}: estimated per token"
    )
    print(f"{'':24}{'kernels':>9}{'us/token':>11}{'tokens/s':>10}{'HBM MB/token':>14}")
    for label, s in (("unfused (op per kernel)", before), ("fused (afc)", after)):
        print(
            f"{label:24}{s.kernels:9d}{s.us:11.1f}{s.tokens_per_s:10.1f}{s.hbm_bytes / 1e6:14.1f}"
        )
    speedup = after.tokens_per_s / before.tokens_per_s
    seed = SEED_TOKENS_PER_S[1] / SEED_TOKENS_PER_S[0]
    cut = 1 - after.hbm_bytes / before.hbm_bytes
    print(
        f"speed-up afc {speedup:.2f}x vs the seed article's {SEED_TOKENS_PER_S[0]:.0f} -> "
        f"{SEED_TOKENS_PER_S[1]:.0f} tokens/s ({seed:.1f}x): afc / seed = {speedup / seed:.2f}"
    )
    print(f"HBM per token: afc {-cut:+.1%} vs the seed article's {-SEED_HBM_CUT:+.0%}")
    print(f"fused kernels by template: {dict(sorted(after.templates.items()))}")
    if after.templates.get("none"):
        print(
            f"  'none': {after.templates['none']} fusion groups no template builds at their "
            "recorded tiling (lower-to-buffer stops there); costed as their ops unfused"
        )
    print(
        f"  the embedding lookup is charged its whole table (one read of every input): "
        f"{after.lookup_us:.0f} us of each estimate"
    )


if __name__ == "__main__":
    main()
