# Bad ONNX input: one line naming the node, exit 1, no output file.
# RUN: %python %s %t
# RUN: not afc import %t/unsupported.onnx 2>&1 | filecheck %s --check-prefix=BADOP
# BADOP: error: node 'mix': unsupported ONNX operator SoftmaxCrossEntropyLoss (opset 18)
# RUN: not afc import %t/opset.onnx 2>&1 | filecheck %s --check-prefix=OPSET
# OPSET: error: node 'act' (Relu-1): operator version 1 is not supported: afc implements versions 6, 13, 14 of Relu; version 1 is only reached from opsets before 7 (convert the model with onnx.version_converter)
# RUN: not afc import %t/shapes.onnx 2>&1 | filecheck %s --check-prefix=SHAPES
# SHAPES: error: node 'proj' (MatMul-13): matmul contracting dimensions differ: 2x3 has K=3, 5x4 has K=5
# RUN: not afc import %t/undefined.onnx 2>&1 | filecheck %s --check-prefix=UNDEFINED
# UNDEFINED: error: node 'add' (Add): value 'bias' is not defined (no initializer, graph input or earlier node output)
# RUN: not afc import %t/training.onnx 2>&1 | filecheck %s --check-prefix=TRAINING
# TRAINING: error: node 'bn' (BatchNormalization-15): attribute training_mode=1 is not supported (only inference, training_mode=0)
# RUN: not afc import %t/symbolic.onnx 2>&1 | filecheck %s --check-prefix=SYMBOLIC
# SYMBOLIC: error: node 'positions' (Range-11): the length of the range depends on symbolic input dims; give static input shapes (afc import --input-shape NAME=D1,D2,...)
# RUN: afc import %t/symbolic.onnx --input-shape x=2,4 | filecheck %s --check-prefix=FIXED
# FIXED: func.func @main(%x: tensor<2x4xf32>
# RUN: not afc import %t/truncated.onnx 2>&1 | filecheck %s --check-prefix=TRUNCATED
# TRUNCATED: truncated.onnx: error: not a valid ONNX model (truncated or garbled file
# RUN: rm -f %t.mlir && not afc import %t/unsupported.onnx -o %t.mlir && not test -e %t.mlir
# RUN: not afc import %t/unsupported.onnx 2> %t.err; %python -c "import sys; t=open(sys.argv[1]).read(); assert t.count(chr(10)) == 1 and 'Traceback' not in t, t" %t.err
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save_model(m, str(out / f"{name}.onnx"))
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


save(
    "unsupported",
    [helper.make_node("SoftmaxCrossEntropyLoss", ["x"], ["y"], name="mix")],
    [vi("x", [2])],
    [vi("y", [2])],
)
save(
    "opset",
    [helper.make_node("Relu", ["x"], ["y"], name="act")],
    [vi("x", [2])],
    [vi("y", [2])],
    opset=5,
)
save(
    "shapes",
    [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
    [vi("x", [2, 3])],
    [vi("y", [2, 4])],
    [init("w", np.zeros((5, 4), np.float32))],
)
save(
    "undefined",
    [helper.make_node("Add", ["x", "bias"], ["y"], name="add")],
    [vi("x", [2])],
    [vi("y", [2])],
)
save(
    "training",
    [helper.make_node("BatchNormalization", list("xsbmv"), ["y"], name="bn", training_mode=1)],
    [vi("x", [1, 2, 3, 3])],
    [vi("y", [1, 2, 3, 3])],
    [init(n, np.ones(2, np.float32)) for n in "sbmv"],
    opset=15,
)
save(
    "symbolic",
    [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"], name="positions"),
        helper.make_node("Cast", ["pos"], ["pf"], to=F),
        helper.make_node("Add", ["x", "pf"], ["y"]),
    ],
    [vi("x", [2, "seq"])],
    [vi("y", [2, "seq"])],
    [init("zero", np.array(0, np.int64)), init("one", np.array(1, np.int64))],
)
good = (out / "unsupported.onnx").read_bytes()
(out / "truncated.onnx").write_bytes(good[: len(good) // 2])
