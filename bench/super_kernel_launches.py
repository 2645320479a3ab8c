"""Launch overhead a super kernel saves: Qwen2.5-7B (28 layers) at batch 1, decode and prefill.

Every kernel and library op is one launch, charged the chip's launch overhead by the
cost model (hardware/chips.toml `launch_overhead_us`). With super kernels
(`--super-kernel`, codegen/super_kernel.py) each run of generated kernels between
library ops is one launch. Prefill is examples/qwen2_5_7b.afc (2048 tokens); decode
is the same model over one token (the sequence length set to 1; no KV cache, so the
attention reads only the new token: the kernels and launches are decode's, the
attention's traffic is not). Times are the cost model's estimates, per forward pass.

    python bench/super_kernel_launches.py [--layers N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

CHIP = "Ascend910B1"


def model_text(layers: int, seq: int) -> str:
    """examples/make_qwen2_5_7b.py's model with `layers` layers over `seq` tokens."""
    import make_qwen2_5_7b

    text = make_qwen2_5_7b.model_text(layers)
    if seq == make_qwen2_5_7b.SEQ:
        return text
    # the sequence length is the only dimension written as 2048 (hidden 3584, FFN 18944)
    return text.replace(str(make_qwen2_5_7b.SEQ), str(seq))


def launch_figures(text: str, name: str) -> tuple[dict[str, object], float]:
    """The launches of the compiled model (report.launch_overhead) and its estimated
    time without super kernels, at batch 1."""
    from autofusion.driver.pipeline import CompileOptions, fuse_and_lower
    from autofusion.hardware import get_chip
    from autofusion.mlir_io import default_context
    from autofusion.report import build_report, launch_overhead
    from frontends.text import parse_text_model

    chip = get_chip(CHIP)
    ctx = default_context()
    module = parse_text_model(ctx, text, name, chip=CHIP)
    options = CompileOptions(chip=CHIP, dynamic_size=1, super_kernel=True)
    lowered = fuse_and_lower(ctx, module, options)
    report = build_report(module, chip, dynamic_size=1)
    return launch_overhead(report, lowered, chip).to_json(), report.totals()["time_us_after"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=28)
    args = parser.parse_args()
    print(
        f"Qwen2.5-7B, {args.layers} layers, batch 1, on {CHIP}: launches and launch "
        "overhead per forward pass, without and with super kernels"
    )
    print(
        f"{'':<16}{'launches':>9}{'super':>7}{'after':>7}{'overhead us':>13}{'after us':>10}"
        f"{'saved us':>10}{'est. time us':>14}{'saved':>8}"
    )
    for label, seq in (("decode (1 tok)", 1), ("prefill (2048)", 2048)):
        launches, time_us = launch_figures(model_text(args.layers, seq), f"qwen_{seq}.afc")
        saved = float(launches["saved_us"])  # type: ignore[arg-type]
        supers = len(launches["super_kernels"])  # type: ignore[arg-type]
        print(
            f"{label:<16}{launches['launches']:>9}{supers:>7}{launches['launches_after']:>7}"
            f"{launches['overhead_us']:>13,.1f}{launches['overhead_us_after']:>10,.1f}"
            f"{saved:>10,.1f}{time_us:>14,.1f}{100 * saved / time_us:>7.1f}%"
        )


if __name__ == "__main__":
    main()
