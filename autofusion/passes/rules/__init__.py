"""Fusion rules, one family per module; the lists give the order the applier tries them.

Order matters only where two rules can claim the same op: recognition rules that build a
named op (GELU, norms, attention) come before the epilogue rules that absorb named ops
into a cube op, and folds into a conv (BatchNorm, bias) before its activation epilogue.
"""

from autofusion.passes.fusion_rule import FusionRule
from autofusion.passes.rules.activation_epilogue import ConvActivation, MatMulActivation
from autofusion.passes.rules.bias_add import FoldBiasAddIntoConv, FoldBiasAddIntoMatMul
from autofusion.passes.rules.conv_batchnorm import FoldBatchNormIntoConv

GRAPH_FUSION_RULES: list[type[FusionRule]] = [
    FoldBatchNormIntoConv,
    FoldBiasAddIntoConv,
    FoldBiasAddIntoMatMul,
    ConvActivation,
    MatMulActivation,
]

SPLIT_FUSION_RULES: list[type[FusionRule]] = []
