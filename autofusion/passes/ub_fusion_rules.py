"""The UBFusion rules of `ub-fusion`: which fusion-kind pairs may share a kernel.

Each rule is a legality rule of the grouping, named after the CANN UB-fusion pass that
allows the same combination (hiascend "Graph Fusion and UB Fusion Patterns" list, see
shared/reference/ascend.md section 3.4); the UBFusion section of a fusion switch file
turns them off one by one. "AutomaticUbFusion" is the grouping itself: off, every op is
its own kernel.
"""

from __future__ import annotations

AUTOMATIC_UB_FUSION = "AutomaticUbFusion"

# rule name -> what it allows (data, read by ub-fusion's legality check and the docs)
UB_FUSION_RULES: dict[str, str] = {
    AUTOMATIC_UB_FUSION: "group ops into kernels at all (off: one op per kernel)",
    "TbeEltwiseFusionPass": "elementwise and broadcast ops fuse with each other",
    "TbeReduceElemwiseFusionPass": "a reduce (reductions, norms, softmax) fuses with the "
    "elementwise ops that feed it and follow it",
    "TbeInjectiveElemwiseFusionPass": "injective ops (reshape, transpose, slice, concat, "
    "gather, pad) fuse with elementwise ops",
    "ATbeMatMulElemwiseFusionPass": "matmul/gemm fuse forward into an elementwise epilogue",
    "TbeConvElemwiseFusionPass": "conv fuses forward into an elementwise epilogue",
    "TbeMultiOutputFusionPass": "a kernel may also write an intermediate value other kernels read",
}

UB_FUSION_RULE_NAMES = tuple(UB_FUSION_RULES)
