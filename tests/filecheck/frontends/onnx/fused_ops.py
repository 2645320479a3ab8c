# RUN: %python %s %t
# RUN: afc import %t/attention.onnx | filecheck %s --check-prefix=ATTN
# RUN: afc import %t/attention3d.onnx | filecheck %s --check-prefix=ATTN3D
# RUN: afc import %t/rms.onnx | filecheck %s --check-prefix=RMS
# RUN: afc import %t/rope.onnx | filecheck %s --check-prefix=ROPE
# RUN: afc import %t/qk_output.onnx | filecheck %s --check-prefix=QK
# RUN: not afc import %t/stash.onnx 2>&1 | filecheck %s --check-prefix=STASH

# ONNX's opset-23/24 fused operators import directly as the fused graph ops.
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, node, inputs, outputs, opset=23):
    g = helper.make_graph([node], name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# GQA with a boolean mask, a softcap and causal attention: one graph.flash_attention
# ATTN:      %0 = graph.flash_attention %Q, %K, %V, %mask {causal = true, layout = "BNSD", {{.*}}scale = 2.500000e-01, softcap = 3.000000e+01} : (tensor<1x4x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<3x3xi1>) -> tensor<1x4x3x16xf32>
# ATTN-NEXT: func.return %0
save(
    "attention",
    helper.make_node(
        "Attention", ["Q", "K", "V", "mask"], ["Y"], is_causal=1, softcap=30.0, scale=0.25
    ),
    [
        vi("Q", F, [1, 4, 3, 16]),
        vi("K", F, [1, 2, 3, 16]),
        vi("V", F, [1, 2, 3, 16]),
        vi("mask", B, [3, 3]),
    ],
    [vi("Y", F, [1, 4, 3, 16])],
)

# 3-D inputs are split into heads (layout BSND); a KV cache is concatenated in BNSD and
# its causal frontier (offset = past length 2) becomes a boolean mask
# ATTN3D:      %0 = graph.reshape %Q {{{.*}}shape = [0, 0, 2, -1]} : tensor<1x3x16xf32> -> tensor<1x3x2x8xf32>
# ATTN3D:      graph.transpose
# ATTN3D:      %[[K:.*]] = graph.concat %past_k, %{{.*}} {axis = 2{{.*}}} : (tensor<1x2x2x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x5x8xf32>
# ATTN3D:      %[[V:.*]] = graph.concat %past_v
# ATTN3D:      %[[M:.*]] = graph.constant {{.*}} : tensor<3x5xi1>
# ATTN3D:      %[[Y:.*]] = graph.flash_attention %{{.*}}, %[[K]], %[[V]], %[[M]] {causal = false, layout = "BNSD", {{.*}}scale = 0.35355339059327373} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<3x5xi1>) -> tensor<1x2x3x8xf32>
# ATTN3D:      graph.reshape %{{.*}} {{{.*}}shape = [0, 0, -1]} : tensor<1x3x2x8xf32> -> tensor<1x3x16xf32>
# ATTN3D:      func.return %{{.*}}, %[[K]], %[[V]] : tensor<1x3x16xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>
save(
    "attention3d",
    helper.make_node(
        "Attention",
        ["Q", "K", "V", "", "past_k", "past_v"],
        ["Y", "present_k", "present_v"],
        is_causal=1,
        q_num_heads=2,
        kv_num_heads=2,
    ),
    [
        vi("Q", F, [1, 3, 16]),
        vi("K", F, [1, 3, 16]),
        vi("V", F, [1, 3, 16]),
        vi("past_k", F, [1, 2, 2, 8]),
        vi("past_v", F, [1, 2, 2, 8]),
    ],
    [vi("Y", F, [1, 3, 16]), vi("present_k", F, [1, 2, 5, 8]), vi("present_v", F, [1, 2, 5, 8])],
)

# RMS:      %0 = graph.rms_norm %X, %W {axis = 2, epsilon = 9.9999999747524271e-07{{.*}}} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
save(
    "rms",
    helper.make_node("RMSNormalization", ["X", "W"], ["Y"], axis=-1, epsilon=1e-6),
    [vi("X", F, [2, 3, 8]), vi("W", F, [8])],
    [vi("Y", F, [2, 3, 8])],
)

# position ids gather the half-width caches, which are tiled to full width
# ROPE:      graph.gather %cos, %pos {axis = 0{{.*}}} : (tensor<16x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>
# ROPE:      graph.concat {{.*}} {axis = 2{{.*}}} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
# ROPE:      graph.rope %X, %{{.*}}, %{{.*}} {interleaved = false{{.*}}} : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
save(
    "rope",
    helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"]),
    [
        vi("X", F, [1, 2, 3, 8]),
        vi("cos", F, [16, 4]),
        vi("sin", F, [16, 4]),
        vi("pos", I64, [1, 3]),
    ],
    [vi("Y", F, [1, 2, 3, 8])],
)

# the scores output (mode 3: after the softmax) is computed beside the fused op
# QK:      %[[Y:.*]] = graph.flash_attention %Q, %Q, %Q
# QK:      %[[KT:.*]] = graph.transpose %Q {{{.*}}perm = [0, 1, 3, 2]}
# QK-NEXT: %[[S:.*]] = graph.matmul %Q, %[[KT]]
# QK:      graph.softmax
# QK:      func.return %[[Y]], %{{.*}} : tensor<1x2x3x8xf32>, tensor<1x2x3x3xf32>
save(
    "qk_output",
    helper.make_node("Attention", ["Q", "Q", "Q"], ["Y", "", "", "qk"], qk_matmul_output_mode=3),
    [vi("Q", F, [1, 2, 3, 8])],
    [vi("Y", F, [1, 2, 3, 8]), vi("qk", F, [1, 2, 3, 3])],
)

# STASH: node 'RMSNormalization_0' (RMSNormalization-23): attribute stash_type=11 is not supported (afc computes the statistics in float32 (1))
save(
    "stash",
    helper.make_node("RMSNormalization", ["X", "W"], ["Y"], stash_type=11),
    [vi("X", F, [2, 8]), vi("W", F, [8])],
    [vi("Y", F, [2, 8])],
)
