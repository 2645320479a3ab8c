"""Fusion rules, one family per module; the lists give the order the applier tries them.

Order matters only where two rules can claim the same op: recognition rules that build a
named op (GELU, norms, attention) come before the epilogue rules that absorb named ops
into a cube op, and folds into a conv (BatchNorm, bias) before its activation epilogue.
"""

from autofusion.passes.fusion_rule import FusionRule
from autofusion.passes.rules.activation_epilogue import ConvActivation, MatMulActivation
from autofusion.passes.rules.add_norm import FuseAddLayerNorm, FuseAddRmsNorm
from autofusion.passes.rules.bias_add import FoldBiasAddIntoConv, FoldBiasAddIntoMatMul
from autofusion.passes.rules.concat_split import SplitConvConcat, SplitMatMulConcat
from autofusion.passes.rules.constant_folding import FoldConstants
from autofusion.passes.rules.constant_fuse_same import FuseSameConstants
from autofusion.passes.rules.conv_batchnorm import FoldBatchNormIntoConv
from autofusion.passes.rules.ffn import FuseFfn
from autofusion.passes.rules.ffn_norm import FoldRmsNormIntoFfn
from autofusion.passes.rules.flash_attention import FuseFlashAttention
from autofusion.passes.rules.gelu import FuseGelu
from autofusion.passes.rules.horizontal_matmul import MergeSiblingMatMuls
from autofusion.passes.rules.layout_folding import (
    CascadeReshapes,
    CascadeTransposes,
    FoldLayoutOfConstant,
    RemoveNoUseReshape,
    RemoveUnchangedTranspose,
    SinkTransposeThroughElementwise,
)
from autofusion.passes.rules.norm_prologue import FoldRmsNormIntoMatMul
from autofusion.passes.rules.norm_split import SplitLayerNorm, SplitRmsNorm
from autofusion.passes.rules.norms import FuseLayerNorm, FuseRmsNorm
from autofusion.passes.rules.producer_duplicate import DuplicateProducer
from autofusion.passes.rules.rope import FusePartialRope, FuseRope, SinkTransposeThroughRope
from autofusion.passes.rules.rotary_table import FoldConcatOfScaled, OuterProductMatMulToMul
from autofusion.passes.rules.silu import FuseSilu, FuseSwiGlu
from autofusion.passes.rules.split_slices import SplitIntoSlices

GRAPH_FUSION_RULES: list[type[FusionRule]] = [
    # folding first: a constant or a shorter layout chain is what the recognisers expect
    FoldLayoutOfConstant,
    FoldConstants,
    FuseSameConstants,
    CascadeTransposes,
    RemoveUnchangedTranspose,
    CascadeReshapes,
    RemoveNoUseReshape,
    FoldBatchNormIntoConv,
    FoldBiasAddIntoConv,
    FoldBiasAddIntoMatMul,
    # the rotary tables: pos @ inv_freq as a broadcast mul, concat(freqs, freqs) folded
    OuterProductMatMulToMul,
    FoldConcatOfScaled,
    FuseLayerNorm,
    FuseRmsNorm,
    FuseAddLayerNorm,
    FuseAddRmsNorm,
    FuseGelu,
    FuseSilu,
    FuseSwiGlu,
    FuseRope,
    FusePartialRope,
    SinkTransposeThroughRope,
    # attention traces q/k/v only to the projections' head reshapes, so the QKV merge
    # (anchored on the projections, which the walk meets first) leaves it recognisable
    FuseFlashAttention,
    MergeSiblingMatMuls,
    # the FFN takes the forms the SwiGLU, activation and bias rules leave (and waits for
    # a bias add still to fold); it anchors on the down projection, after the merge,
    # which leaves a gated MLP's gate and up projections apart
    FuseFfn,
    # an RMS norm into the matmuls it feeds (phase 1: after the merge and the FFN)
    FoldRmsNormIntoMatMul,
    FoldRmsNormIntoFfn,
    ConvActivation,
    MatMulActivation,
    # last: it claims only elementwise ops whose transposes then cancel
    SinkTransposeThroughElementwise,
]

# split fusion: the rules anchor on different ops (norms, concats, cheap producers); the
# producer copy comes last so that it sees the applies a norm split leaves behind
SPLIT_FUSION_RULES: list[type[FusionRule]] = [
    SplitLayerNorm,
    SplitRmsNorm,
    SplitConvConcat,
    SplitMatMulConcat,
    SplitIntoSlices,
    DuplicateProducer,
]
