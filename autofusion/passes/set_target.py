"""`set-target`: write the chip the module is compiled for as its afc.target attribute.

    afc-opt model.mlir -p 'set-target{chip=Ascend310P3},graph-fusion,ub-fusion,lower-to-buffer'

Every later pass, the report and the Ascend C printer read the chip from the attribute
(autofusion/dialects/target.py). A module that already has a different target is an
error: its fusion groups or kernels were planned for that chip.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from autofusion.dialects.target import set_target


@dataclass(frozen=True)
class SetTargetPass(ModulePass):
    """Set the module's target chip."""

    name = "set-target"

    chip: str
    """The SoC by its CANN name, matched case-insensitively (autofusion/hardware/chips.toml)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        set_target(op, self.chip)
