# RUN: %python %s %t
# RUN: afc import %t/qdq.onnx | filecheck %s --check-prefix=QDQ
# RUN: afc import %t/mmi.onnx | filecheck %s --check-prefix=MMI
# RUN: afc import %t/f8.onnx | filecheck %s --check-prefix=F8
# RUN: not afc import %t/f6.onnx 2>&1 | filecheck %s --check-prefix=F6

# Quantization operators through `afc import`: real integer tensors, zero points as operands.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=(), opset=21):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# Per-axis int8 quantization; the omitted zero point of the blocked
# DequantizeLinear becomes an i8 zero constant of the scale's shape.
# QDQ:      func.func @main(%x: tensor<2x4xf32> {graph.name = "x"}) -> (tensor<2x4xi8> {graph.name = "q"}, tensor<2x4xf32> {graph.name = "y"})
# QDQ:        %[[Q:.*]] = graph.quantize_linear %x, %{{.*}}, %{{.*}} {axis = 1, block_size = 0} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xi8>) -> tensor<2x4xi8>
# QDQ:        %[[Z:.*]] = graph.constant {{.*}}dense<0> : tensor<2x2xi8>
# QDQ:        graph.dequantize_linear %[[Q]], %{{.*}}, %[[Z]] {axis = 1, block_size = 2{{.*}}} : (tensor<2x4xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x4xf32>
save(
    "qdq",
    [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "sb"], ["y"], axis=1, block_size=2),
    ],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [
        helper.make_tensor_value_info("q", TensorProto.INT8, None),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
    ],
    [
        init("s", np.asarray([0.1, 0.2, 0.3, 0.4], np.float32)),
        init("z", np.asarray([0, 1, -1, 2], np.int8)),
        init("sb", np.asarray([[0.5, 0.25], [2.0, 4.0]], np.float32)),
    ],
)

# MatMulInteger accumulates in i32 on ui8 operands; omitted zero points are ui8 zeros.
# MMI:        graph.matmul_integer %a, %b, %{{.*}}, %{{.*}} : (tensor<2x3xui8>, tensor<3x5xui8>, tensor<ui8>, tensor<ui8>) -> tensor<2x5xi32>
save(
    "mmi",
    [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
    [
        helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 3]),
        helper.make_tensor_value_info("b", TensorProto.UINT8, [3, 5]),
    ],
    [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
)

# A float8 output without saturation: the zero point is a zero of the output type and
# saturate = false is the op's property.
# F8:       %[[Z:.*]] = graph.constant {{.*}}dense<0.000000e+00> : tensor<f8E4M3FN>
# F8:       graph.quantize_linear %x, %{{.*}}, %[[Z]] {axis = 1, block_size = 0, {{.*}}saturate = false} : (tensor<4xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<4xf8E4M3FN>
save(
    "f8",
    [
        helper.make_node(
            "QuantizeLinear",
            ["x", "s"],
            ["y"],
            name="q8",
            output_dtype=TensorProto.FLOAT8E4M3FN,
            saturate=0,
        )
    ],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, None)],
    [init("s", np.float32(0.5))],
)

# A float6 output type is refused naming the node, the attribute and the type.
# F6: error: node 'q6' (QuantizeLinear-21): attribute output_dtype has element type FLOAT6E2M3, which afc does not support
save(
    "f6",
    [
        helper.make_node(
            "QuantizeLinear", ["x", "s"], ["y"], name="q6", output_dtype=TensorProto.FLOAT6E2M3
        )
    ],
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT6E2M3, None)],
    [init("s", np.float32(0.5))],
)
