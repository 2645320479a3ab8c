# RUN: %python %s %t
# RUN: afc import %t/swiglu.onnx | filecheck %s --check-prefix=SWIGLU
# RUN: afc import %t/center_crop_pad.onnx | filecheck %s --check-prefix=CROP
# RUN: not afc import %t/loss.onnx 2>&1 | filecheck %s --check-prefix=LOSS

# An operator afc has no converter for but ONNX defines by a function body is converted as
# that body (SwiGLU-28: Swish then Mul; CenterCropPad-18, a context-dependent function:
# a pad and a slice); the training losses, also functions, stay refused.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, opset, inits=()):
    outputs = [helper.make_tensor_value_info("y", F, None)]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    onnx.save_model(m, str(out / f"{name}.onnx"))


# SWIGLU: func.func @main(%a: tensor<2x4xf32> {{.*}}, %b: tensor<2x4xf32> {{.*}})
# SWIGLU-NEXT: %[[G:.*]] = graph.silu %a
# SWIGLU-NEXT: %[[Y:.*]] = graph.mul %[[G]], %b
# SWIGLU-NEXT: func.return %[[Y]]
save(
    "swiglu",
    [helper.make_node("SwiGLU", ["a", "b"], ["y"], name="glu")],
    [helper.make_tensor_value_info(n, F, [2, 4]) for n in "ab"],
    28,
)

# CROP: func.func @main(%x: tensor<5x6xf32> {{.*}}) -> (tensor<4x8xf32> {{.*}})
# CROP-NEXT: %[[P:.*]] = graph.pad %x {mode = "constant", pads = [0, 1, 0, 1], value = 0.000000e+00}
# CROP-NEXT: graph.slice %[[P]] {axes = [0, 1], ends = [4, 8], starts = [0, 0], steps = [1, 1]}
# CROP-NEXT: func.return
save(
    "center_crop_pad",
    [helper.make_node("CenterCropPad", ["x", "s"], ["y"], name="crop")],
    [helper.make_tensor_value_info("x", F, [5, 6])],
    18,
    [numpy_helper.from_array(np.array([4, 8], np.int64), "s")],
)

# LOSS: error: node 'loss': unsupported ONNX operator NegativeLogLikelihoodLoss (opset 22)
save(
    "loss",
    [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], name="loss")],
    [
        helper.make_tensor_value_info("x", F, [2, 3]),
        helper.make_tensor_value_info("t", TensorProto.INT64, [2]),
    ],
    22,
)
