"""`super-kernel`: mark runs of launches that the Ascend C printer emits as ONE launch.

    afc-opt model.mlir -p 'set-target{chip=Ascend910B1},graph-fusion,ub-fusion,lower-to-buffer,super-kernel' -t ascendc

On buffer-level IR. Every maximal run of two or more consecutive `buffer.launch`es of
a host function (only host scalar code between them; codegen/super_kernel.py) gets
`afc.super_kernel = "<function>_super<i>"`. The printer then emits the run as one op
whose kernel runs each launch's kernel as a stage, with SyncAll<false> between
dependent stages (CANN's SuperKernel: one launch per layer or model instead of one per
kernel). A library op between two launches ends a run; runs are deterministic
(program order). The IR's meaning is unchanged: the interpreter still runs each launch.

The module's chip must have the hard SyncAll (Atlas A2/A3): elsewhere the pass is a
one-line error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from autofusion.codegen.kernel_interface import kernels_of
from autofusion.codegen.super_kernel import SUPER_ATTR, launch_runs, syncs_all_chip
from autofusion.diagnostics import UserError
from autofusion.dialects.target import resolve_target


@dataclass(frozen=True)
class SuperKernelPass(ModulePass):
    """Mark each run of launches that one super kernel can run."""

    name = "super-kernel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        chip = resolve_target(op, self.name)
        if not syncs_all_chip(chip):
            raise UserError(
                f"super-kernel: the stages of a super kernel wait for each other at "
                f"SyncAll<false>, the hard all-core sync of Atlas A2/A3, which {chip.name} "
                "does not have"
            )
        kernels = {k.sym_name.data: k for k in kernels_of(op)}
        taken = set(kernels) | {f.sym_name.data for f in op.ops if isinstance(f, func.FuncOp)}
        for f in op.ops:
            if not isinstance(f, func.FuncOp) or not f.body.blocks:
                continue
            for i, run in enumerate(launch_runs(f.body.block, kernels)):
                name = f"{f.sym_name.data}_super{i}"
                while name in taken:
                    name += "_"
                taken.add(name)
                for launch in run:
                    launch.attributes[SUPER_ATTR] = StringAttr(name)
