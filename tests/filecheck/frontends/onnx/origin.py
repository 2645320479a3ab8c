# RUN: %python %s %t
# RUN: afc import %t/hardswish.onnx | filecheck %s --check-prefix=TAG
# RUN: afc import %t/hardswish.onnx | afc-opt | afc-opt --print-op-generic | afc-opt -t onnx | filecheck %s --check-prefix=BACK
# RUN: afc import %t/addnorm.onnx | afc-opt -t onnx | filecheck %s --check-prefix=WHOLE
# RUN: afc import %t/addnorm.onnx | afc-opt -p graph-fusion -t onnx | filecheck %s --check-prefix=PARTS
# RUN: afc import %t/lstm.onnx | filecheck %s --check-prefix=REF
# RUN: afc import %t/lstm.onnx | afc-opt | afc-opt -t onnx | filecheck %s --check-prefix=REFBACK
# RUN: afc import %t/lstm.onnx | afc-opt -p dce -t onnx | filecheck %s --check-prefix=REFPARTS

# Origin groups (frontends/onnx/origin.py): the ops a node became carry `onnx.origin`;
# the group's head also holds the node, and every member its operand/result links and
# a digest. The tags print and parse (custom and generic form), and the export writes
# the node again.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

F = TensorProto.FLOAT
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


# TAG:      graph.relu %x : tensor<4x8xf32>
# TAG-NEXT: graph.constant {onnx.origin = {id = 1 : i64, op = "HardSwish", version = 14 : i64, node = "{{[A-Za-z0-9+/=]+}}", count = 6 : i64, inputs = [0 : i64], constants = {}, operands = [], results = [-1 : i64], digest = "{{[0-9a-f]+}}"}}
# TAG-NEXT: graph.mul %0, %{{.*}} {onnx.origin = {id = 1 : i64, operands = [0 : i64, -1 : i64], results = [-1 : i64], digest = "{{[0-9a-f]+}}"}}
# TAG:      graph.mul %0, %{{.*}} {onnx.origin = {id = 1 : i64, operands = [0 : i64, -1 : i64], results = [0 : i64], digest = "{{[0-9a-f]+}}"}}
# BACK:      relu = Relu (x)
# BACK-NEXT: y = HardSwish (relu)
save(
    "hardswish",
    [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("HardSwish", ["r"], ["y"])],
    [vi("x", [4, 8])],
    [vi("y", [4, 8])],
)

# Add -> InstanceNormalization exports as itself, but after graph fusion has made the Add
# and the instance norm's layer_norm one add_layer_norm, the group is incomplete and its
# remaining ops (the scale's Mul and the bias's Add) are written.
# WHOLE:      add = Add (x, r)
# WHOLE-NEXT: y = InstanceNormalization (add, scale, bias)
# PARTS:      ai.afc.AddLayerNorm (x, r,
# PARTS-NEXT: Mul
# PARTS-NEXT: y = Add
# PARTS-NOT:  InstanceNormalization
rng = np.random.default_rng(0)
save(
    "addnorm",
    [
        helper.make_node("Add", ["x", "r"], ["s"]),
        helper.make_node("InstanceNormalization", ["s", "scale", "bias"], ["y"]),
    ],
    [vi("x", [2, 4, 8]), vi("r", [2, 4, 8])],
    [vi("y", [2, 4, 8])],
    [
        helper.make_tensor("scale", F, [4], rng.standard_normal(4).tolist()),
        helper.make_tensor("bias", F, [4], rng.standard_normal(4).tolist()),
    ],
)

# An LSTM whose weights are over the tag's constant limit (4800 and 6400 values): the
# graph.constant ops of its initializers join the group, each naming the node input it
# holds (`input`, link -3), and the export writes the LSTM with them as initializers.
# When a pass drops the (unread) weight constants, the group is incomplete: the parts.
# REF:      %W = graph.constant {name = "W", onnx.origin = {id = 1 : i64, input = 1 : i64, operands = [], results = [-1 : i64], digest = "{{[0-9a-f]+}}"}} dense_resource<W> : tensor<1x160x30xf32>
# REF-NEXT: %R = graph.constant {name = "R", onnx.origin = {id = 1 : i64, input = 2 : i64, operands = [], results = [-1 : i64], digest = "{{[0-9a-f]+}}"}} dense_resource<R> : tensor<1x160x40xf32>
# REFBACK:  "", y = LSTM <hidden_size: int = 40> (x, W, R)
# REFPARTS:     MatMul (x,
# REFPARTS-NOT: LSTM
save(
    "lstm",
    [helper.make_node("LSTM", ["x", "W", "R"], ["", "y"], hidden_size=40)],
    [vi("x", [2, 1, 30])],
    [vi("y", [1, 1, 40])],
    [
        helper.make_tensor("W", F, [1, 160, 30], rng.standard_normal(4800).tolist()),
        helper.make_tensor("R", F, [1, 160, 40], rng.standard_normal(6400).tolist()),
    ],
)
