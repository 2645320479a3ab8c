# RUN: %python %s %t
# RUN: afc import %t/mlp.onnx | filecheck %s --check-prefix=MLP
# RUN: afc import %t/shape.onnx | filecheck %s --check-prefix=SHAPE
# RUN: afc import %t/dynamic.onnx | filecheck %s --check-prefix=DYN
# RUN: afc import %t/dynamic.onnx --input-shape x=2,3,6 | filecheck %s --check-prefix=STATIC
# RUN: afc-opt %t/names.onnx --print-debuginfo | filecheck %s --check-prefix=NAMES

# Tiny ONNX models built with onnx.helper, imported by `afc import`.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# MLP-LABEL: builtin.module attributes {graph.opset = 17 : i64}
# MLP:       func.func @main(%x: tensor<4x8xf32> {graph.name = "x"}) -> (tensor<4x2xf32> {graph.name = "probs"})
# MLP-NEXT:    %fc1.w = graph.constant {name = "fc1.w"} dense_resource<fc1.w> : tensor<16x8xf32>
# MLP-NEXT:    %fc1.b = graph.constant {name = "fc1.b"} dense_resource<fc1.b> : tensor<16xf32>
# MLP-NEXT:    %0 = graph.gemm %x, %fc1.w, %fc1.b {alpha = 1.000000e+00, beta = 1.000000e+00, trans_a = false, trans_b = true}
# MLP-NEXT:    %1 = graph.clip %0 {max = 6.000000e+00, min = 0.000000e+00} : tensor<4x16xf32>
# MLP-NEXT:    %fc2.w = graph.constant {name = "fc2.w"} dense_resource<fc2.w> : tensor<16x2xf32>
# MLP-NEXT:    %2 = graph.matmul %1, %fc2.w : (tensor<4x16xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
# MLP-NEXT:    %3 = graph.softmax %2 {axis = -1} : tensor<4x2xf32>
# MLP-NEXT:    func.return %3 : tensor<4x2xf32>
# MLP:       dialect_resources
# MLP:         fc1.w: "0x10000000
rng = np.random.default_rng(0)
save(
    "mlp",
    [
        helper.make_node("Gemm", ["x", "fc1.w", "fc1.b"], ["h"], transB=1),
        helper.make_node("Clip", ["h", "zero", "six"], ["r"]),
        helper.make_node("MatMul", ["r", "fc2.w"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ],
    [vi("x", F, [4, 8])],
    [vi("probs", F, [4, 2])],
    [
        init("fc1.w", rng.standard_normal((16, 8)).astype(np.float32)),
        init("fc1.b", np.zeros(16, np.float32)),
        init("zero", np.array(0, np.float32)),
        init("six", np.array(6, np.float32)),
        init("fc2.w", rng.standard_normal((16, 2)).astype(np.float32)),
    ],
    opset=17,
)

# Shape arithmetic on static shapes folds away; a folded constant of a few elements is dense.
# SHAPE-LABEL: func.func @main
# SHAPE-NOT:     graph.constant
# SHAPE:         %0 = graph.reshape %x {shape = [2, 3, -1]} : tensor<2x6xf32> -> tensor<2x3x2xf32>
# SHAPE-NEXT:    %1 = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
# SHAPE-NEXT:    %2 = graph.add %0, %1 : (tensor<2x3x2xf32>, tensor<2xf32>) -> tensor<2x3x2xf32>
save(
    "shape",
    [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Concat", ["b1", "tail"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Range", ["one", "three", "one"], ["rng"]),
        helper.make_node("Cast", ["rng"], ["bias"], to=F),
        helper.make_node("Add", ["r", "bias"], ["y"]),
    ],
    [vi("x", F, [2, 6])],
    [vi("y", F, [2, 3, 2])],
    [
        init("zero", np.array(0, np.int64)),
        init("one", np.array(1, np.int64)),
        init("three", np.array(3, np.int64)),
        init("axes0", np.array([0], np.int64)),
        init("tail", np.array([3, -1], np.int64)),
    ],
)

# Symbolic dims: shape arithmetic on them becomes reshape's 0 (copy) and -1 (infer).
# DYN-LABEL: func.func @main(%x: tensor<?x?x6xf32> {graph.name = "x", graph.dims = ["batch", "seq", ""]})
# DYN:         graph.reshape %x {shape = [0, 0, 2, 3]} : tensor<?x?x6xf32> -> tensor<?x?x2x3xf32>
# DYN:         graph.reshape %{{.*}} {{{.*}}shape = [0, -1]} : tensor<?x?x2x3xf32> -> tensor<?x?xf32>
# STATIC-LABEL: func.func @main(%x: tensor<2x3x6xf32> {graph.name = "x"})
# STATIC:         graph.reshape %x {shape = [2, 3, 2, 3]} : tensor<2x3x6xf32> -> tensor<2x3x2x3xf32>
# STATIC:         graph.reshape %{{.*}} {{{.*}}shape = [2, 18]}
save(
    "dynamic",
    [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "st", "en"], ["bs"]),
        helper.make_node("Concat", ["bs", "tail"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Flatten", ["r"], ["y"], axis=1),
    ],
    [vi("x", F, ["batch", "seq", 6])],
    [vi("y", F, ["batch", None])],
    [
        init("st", np.array([0], np.int64)),
        init("en", np.array([2], np.int64)),
        init("tail", np.array([2, 3], np.int64)),
    ],
)

# Node names become op locations; unnamed nodes are named <OpType>_<index>.
# NAMES: graph.relu {{.*}} loc("first_relu")
# NAMES: graph.neg {{.*}} loc("Neg_1")
save(
    "names",
    [
        helper.make_node("Relu", ["x"], ["a"], name="first_relu"),
        helper.make_node("Neg", ["a"], ["y"]),
    ],
    [vi("x", F, [3])],
    [vi("y", F, [3])],
)
