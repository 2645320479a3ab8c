"""mycc-opt: afc-opt plus mycc's own pass (`python -m mycc.opt`).

python -m mycc.opt model.mlir -p 'set-target{chip=Ascend910B1},graph-fusion,fold-unary-pairs,ub-fusion'
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.passes import ModulePass

from autofusion import AfcOptMain, run_opt


def _fold_unary_pairs() -> type[ModulePass]:
    from mycc.fold_unary_pairs import FoldUnaryPairsPass

    return FoldUnaryPairsPass


class MyccOptMain(AfcOptMain):
    """afc's dialects, passes and targets (AfcOptMain registers them), and mycc's pass."""

    version_format = "mycc-opt 0.1 (xdsl {xdsl_version})"

    def register_all_passes(self) -> None:
        super().register_all_passes()
        self.register_pass("fold-unary-pairs", _fold_unary_pairs)


def main(argv: Sequence[str] | None = None) -> int:
    return run_opt(MyccOptMain, "mycc-opt", argv)


if __name__ == "__main__":
    sys.exit(main())
