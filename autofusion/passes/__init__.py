"""afc's passes by name, each behind a factory so that importing this is cheap."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _graph_fusion() -> type[ModulePass]:
    from autofusion.passes.graph_fusion import GraphFusionPass

    return GraphFusionPass


def _lower_to_buffer() -> type[ModulePass]:
    from autofusion.passes.lower_to_buffer import LowerToBufferPass

    return LowerToBufferPass


def _set_target() -> type[ModulePass]:
    from autofusion.passes.set_target import SetTargetPass

    return SetTargetPass


def _split_fusion() -> type[ModulePass]:
    from autofusion.passes.split_fusion import SplitFusionPass

    return SplitFusionPass


def _super_kernel() -> type[ModulePass]:
    from autofusion.passes.super_kernel import SuperKernelPass

    return SuperKernelPass


def _ub_fusion() -> type[ModulePass]:
    from autofusion.passes.ub_fusion import UbFusionPass

    return UbFusionPass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """afc's passes by their pipeline names."""
    return {
        "set-target": _set_target,
        "graph-fusion": _graph_fusion,
        "split-fusion": _split_fusion,
        "ub-fusion": _ub_fusion,
        "lower-to-buffer": _lower_to_buffer,
        "super-kernel": _super_kernel,
    }
