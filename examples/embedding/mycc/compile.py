"""mycc's compiler as a library call: parse -> afc's passes and mycc's -> MLIR text.

python -m mycc.compile model.mlir [chip]
"""

from __future__ import annotations

import sys
from pathlib import Path

from xdsl.passes import PassPipeline

import autofusion
from mycc.fold_unary_pairs import FoldUnaryPairsPass


def compile_text(text: str, name: str, chip: str = "Ascend910B1") -> str:
    """The graph-level model in `text`, fused into kernels for `chip`, as MLIR text."""
    ctx = autofusion.default_context()
    module = autofusion.parse_module(ctx, text, name)  # verified, with located errors
    pipeline = PassPipeline(
        (
            autofusion.SetTargetPass(chip=chip),
            autofusion.GraphFusionPass(),
            FoldUnaryPairsPass(),
            autofusion.UbFusionPass(),
        )
    )
    pipeline.apply(ctx, module)
    module.verify()
    # module_to_text, not str(module): it keeps the weights' dense_resource blobs
    return autofusion.module_to_text(ctx, module)


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    try:
        sys.stdout.write(compile_text(path.read_text(), str(path), *argv[1:2]))
    except autofusion.UserError as e:  # afc's errors are one line with a location
        print(f"mycc: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
