# RUN: %python %s %t
# RUN: afc import %t/resize.onnx | filecheck %s --check-prefix=RESIZE
# RUN: afc import %t/deconv.onnx | filecheck %s --check-prefix=DECONV
# RUN: afc import %t/einsum.onnx | filecheck %s --check-prefix=EINSUM
# RUN: afc import %t/lppool.onnx | filecheck %s --check-prefix=LPPOOL
# RUN: afc import %t/col2im.onnx | filecheck %s --check-prefix=COL2IM
# RUN: afc import %t/affine.onnx | filecheck %s --check-prefix=AFFINE

# Vision operators and Einsum through `afc import`: what graph ops each becomes.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, inits=(), opset=19):
    outputs = [helper.make_tensor_value_info("y", F, None)]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# A symbolic batch stays `?`; the scales become the op's property, the axes left alone 1.
# RESIZE:      func.func @main(%x: tensor<?x3x4x6xf32> {graph.name = "x", graph.dims = ["N", "", "", ""]}) -> (tensor<?x3x8x9xf32> {graph.name = "y"})
# RESIZE-NEXT:   %0 = graph.resize %x {antialias = false, coordinate_transformation_mode = "half_pixel", cubic_coeff_a = -7.500000e-01, exclude_outside = false, extrapolation_value = 0.000000e+00, mode = "linear", nearest_mode = "round_prefer_floor", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 1.500000e+00>} : tensor<?x3x4x6xf32> -> tensor<?x3x8x9xf32>
save(
    "resize",
    [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
    [vi("x", ["N", 3, 4, 6])],
    [init("scales", np.asarray([1, 1, 2, 1.5], np.float32))],
)

# output_shape becomes explicit pads (the odd one at the beginning); the bias stays an operand.
# DECONV:      %0 = graph.conv_transpose %x, %w, %b {dilations = [1, 1], group = 1, output_padding = [0, 0], pads = [1, 1, 0, 0], strides = [2, 2]} : (tensor<1x4x5x5xf32>, tensor<4x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x9x9xf32>
save(
    "deconv",
    [
        helper.make_node(
            "ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], output_shape=[9, 9]
        )
    ],
    [vi("x", [1, 4, 5, 5])],
    [init("w", np.ones((4, 2, 2, 2), np.float32)), init("b", np.zeros(2, np.float32))],
)

# A batched contraction is one matmul between two transposes; no einsum op exists.
# EINSUM:      %0 = graph.transpose %b {{{.*}}perm = [0, 2, 1]} : tensor<2x5x4xf32> -> tensor<2x4x5xf32>
# EINSUM-NEXT: %1 = graph.matmul %a, %0 {{.*}}: (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
# EINSUM-NEXT: %2 = graph.transpose %1 {{{.*}}perm = [0, 2, 1]} : tensor<2x3x5xf32> -> tensor<2x5x3xf32>
save(
    "einsum",
    [helper.make_node("Einsum", ["a", "b"], ["y"], equation="bij,bkj->bki")],
    [vi("a", [2, 3, 4]), vi("b", [2, 5, 4])],
)

# LpPool is one graph.lp_pool (exported back as LpPool); Col2Im and AffineGrid are one op
# each, their constant shape inputs properties.
# LPPOOL:      %0 = graph.lp_pool %x {dilations = [1, 1], kernel_shape = [2, 2], p = 3, pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<1x2x5x5xf32> -> tensor<1x2x2x2xf32>
# LPPOOL-NEXT: func.return %0
save(
    "lppool",
    [helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], p=3)],
    [vi("x", [1, 2, 5, 5])],
)

# COL2IM:      %0 = graph.col2im %x {block_shape = [2, 2], dilations = [1, 1], image_shape = [3, 4], pads = [0, 0, 0, 0], strides = [1, 1]} : tensor<?x12x6xf32> -> tensor<?x3x3x4xf32>
# COL2IM-NEXT: func.return %0
save(
    "col2im",
    [helper.make_node("Col2Im", ["x", "image", "block"], ["y"])],
    [vi("x", ["N", 12, 6])],
    [init("image", np.asarray([3, 4], np.int64)), init("block", np.asarray([2, 2], np.int64))],
)

# AFFINE:      %0 = graph.affine_grid %t {align_corners = true, size = [2, 1, 5, 7]} : tensor<?x2x3xf32> -> tensor<?x5x7x2xf32>
# AFFINE-NEXT: func.return %0
save(
    "affine",
    [helper.make_node("AffineGrid", ["t", "size"], ["y"], align_corners=1)],
    [vi("t", ["N", 2, 3])],
    [init("size", np.asarray([2, 1, 5, 7], np.int64))],
    opset=20,
)
