"""Why a module has no `buffer.kernel`, as one line naming the real cause.

"Run lower-to-buffer first" helps only when there are fusion groups to lower. Otherwise
the module is at an earlier stage (ub-fusion has not grouped its ops yet) or it has
nothing ub-fusion makes a kernel of (only library ops: views, ops without a vector kernel,
ops on empty tensors; or no graph ops at all), and no pass will give the printer a kernel.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from autofusion.dialects import graph
from autofusion.fusion.cost import is_view


def _computes(op: Operation) -> bool:
    structural = isinstance(op, graph.ConstantOp | graph.YieldOp | graph.FusionGroupOp)
    return op.dialect_name() == "graph" and not structural and not is_view(op)


def no_kernel_reason(module: ModuleOp) -> str:
    """The cause of `module` having no buffer.kernel, and what (if anything) fixes it."""
    from autofusion.passes.fusion_statistics import describe_op
    from autofusion.passes.ub_fusion import UbFusionPass

    groups = sum(isinstance(op, graph.FusionGroupOp) for op in module.walk())
    if groups:
        return (
            f"the module has no buffer.kernel: its {groups} graph.fusion_group op(s) are "
            "not lowered yet (run lower-to-buffer first)"
        )
    if not any(_computes(op) for op in module.walk()):
        return "the module has no buffer.kernel, and no graph op that computes (nothing to fuse)"
    result = UbFusionPass().run(module.clone())
    if result.groups:
        return (
            "the module has no buffer.kernel: its graph ops are not grouped into kernels "
            "yet (run ub-fusion,lower-to-buffer first)"
        )
    op, why = next((o, r) for o, r in result.library_ops if _computes(o))
    return (
        "the module has no buffer.kernel, and ub-fusion makes none: every op stays a "
        f"library op ({describe_op(op)}: {why})"
    )
