# RUN: %python %s %t
# RUN: afc import %t/if.onnx | filecheck %s --check-prefix=IF
# RUN: afc import %t/loop.onnx | filecheck %s --check-prefix=LOOP
# RUN: afc import %t/rnn.onnx | filecheck %s --check-prefix=RNN
# RUN: not afc import %t/if_input.onnx 2>&1 | filecheck %s --check-prefix=IFINPUT
# RUN: not afc import %t/loop_input.onnx 2>&1 | filecheck %s --check-prefix=LOOPINPUT
# RUN: not afc import %t/rnn_dynamic.onnx 2>&1 | filecheck %s --check-prefix=RNNDYN

# Control flow and recurrent layers through `afc import`: an If with a compile-time
# condition is its chosen branch, a Loop with a constant trip count is its body unrolled,
# an RNN is its steps unrolled into matmul/add/tanh; what is known only at run time is a
# one-line error naming the node.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, inits=()):
    outputs = [helper.make_tensor_value_info("y", F, None)]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, shape, elt=F):
    return helper.make_tensor_value_info(name, elt, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def branch(name, op):
    node = helper.make_node(op, ["x"], [f"{name}_y"], name=f"{name}_op")
    return helper.make_graph([node], name, [], [vi(f"{name}_y", None)])


def if_node(cond):
    return helper.make_node(
        "If",
        [cond],
        ["y"],
        name="choose",
        then_branch=branch("then", "Relu"),
        else_branch=branch("else", "Neg"),
    )


# The condition (the batch is 2) comes from Shape, a constant: only the then-branch's
# Relu is left.
# IF:      func.func @main(%x: tensor<2x3xf32> {graph.name = "x"}) -> (tensor<2x3xf32> {graph.name = "y"})
# IF-NEXT:   %0 = graph.relu %x : tensor<2x3xf32>
# IF-NEXT:   func.return %0 : tensor<2x3xf32>
save(
    "if",
    [
        helper.make_node("Shape", ["x"], ["s"], end=1),
        helper.make_node("Equal", ["s", "two"], ["c"]),
        if_node("c"),
    ],
    [vi("x", [2, 3])],
    [init("two", np.asarray([2], np.int64))],
)

# M = 3: the body (acc = acc * x + i) three times; the iteration number is a constant
# of each copy, and the first copy's `+ 0` is still an add.
# LOOP:      func.func @main(%x: tensor<2xf32> {graph.name = "x"})
# LOOP-NEXT:   %[[M0:.*]] = graph.mul %x, %x : tensor<2xf32>
# LOOP-NEXT:   %[[I0:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
# LOOP-NEXT:   %[[A0:.*]] = graph.add %[[M0]], %[[I0]]
# LOOP-NEXT:   %[[M1:.*]] = graph.mul %[[A0]], %x : tensor<2xf32>
# LOOP-NEXT:   %[[I1:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
# LOOP-NEXT:   %[[A1:.*]] = graph.add %[[M1]], %[[I1]]
# LOOP-NEXT:   %[[M2:.*]] = graph.mul %[[A1]], %x : tensor<2xf32>
# LOOP-NEXT:   %[[I2:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
# LOOP-NEXT:   %[[A2:.*]] = graph.add %[[M2]], %[[I2]]
# LOOP-NEXT:   func.return %[[A2]]
body = helper.make_graph(
    [
        helper.make_node("Identity", ["c"], ["c_out"], name="keep"),
        helper.make_node("Cast", ["i"], ["fi"], to=F, name="cast"),
        helper.make_node("Mul", ["acc", "x"], ["ax"], name="mul"),
        helper.make_node("Add", ["ax", "fi"], ["acc_out"], name="add"),
    ],
    "body",
    [vi("i", [], I64), vi("c", [], BOOL), vi("acc", [2])],
    [vi("c_out", [], BOOL), vi("acc_out", None)],
)
save(
    "loop",
    [helper.make_node("Loop", ["m", "", "x"], ["y"], body=body, name="repeat")],
    [vi("x", [2])],
    [init("m", np.asarray(3, np.int64))],
)

# An RNN over 2 steps: one matmul of the whole sequence by W, then per step a slice, the
# matmul by R (left out at step 0, whose initial state is zero) and the tanh; Y stacks
# the steps.
# RNN:      func.func @main(%x: tensor<2x1x3xf32> {graph.name = "x"}) -> (tensor<2x1x1x2xf32>
# RNN:        %[[XW:.*]] = graph.matmul %x, %{{.*}} {{.*}}: (tensor<2x1x3xf32>, tensor<3x2xf32>) -> tensor<2x1x2xf32>
# RNN-NEXT:   %[[S0:.*]] = graph.slice %[[XW]] {axes = [0], ends = [1], {{.*}}starts = [0], steps = [1]}
# RNN-NEXT:   %[[X0:.*]] = graph.reshape %[[S0]] {{{.*}}shape = [1, 2]}
# RNN-NEXT:   %[[H0:.*]] = graph.tanh %[[X0]] {{.*}}: tensor<1x2xf32>
# RNN-NEXT:   %[[S1:.*]] = graph.slice %[[XW]] {axes = [0], ends = [2], {{.*}}starts = [1], steps = [1]}
# RNN-NEXT:   %[[X1:.*]] = graph.reshape %[[S1]] {{{.*}}shape = [1, 2]}
# RNN-NEXT:   %[[R:.*]] = graph.constant
# RNN-NEXT:   %[[HR:.*]] = graph.matmul %[[H0]], %[[R]] {{.*}}: (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
# RNN-NEXT:   %[[P1:.*]] = graph.add %[[X1]], %[[HR]]
# RNN-NEXT:   %[[H1:.*]] = graph.tanh %[[P1]]
# RNN:        graph.concat
# RNN-NOT:    graph.tanh
rng = np.random.default_rng(0)
save(
    "rnn",
    [helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=2, name="cell")],
    [vi("x", [2, 1, 3])],
    [
        init("w", rng.standard_normal((1, 2, 3)).astype(np.float32)),
        init("r", rng.standard_normal((1, 2, 2)).astype(np.float32)),
    ],
)

# IFINPUT: error: node 'choose' (If-19): the condition (input #0) must be a constant, but it is computed at run time (afc resolves If only when it is known at compile time)
save("if_input", [if_node("c")], [vi("c", [], BOOL), vi("x", [2])])

# LOOPINPUT: error: node 'repeat' (Loop-19): the trip count M (input #0) must be a constant, but it is computed at run time (afc resolves Loop only when it is known at compile time)
save(
    "loop_input",
    [helper.make_node("Loop", ["m", "", "x"], ["y"], body=body, name="repeat")],
    [vi("m", [], I64), vi("x", [2])],
)

# RNNDYN: error: node 'cell' (RNN-14): the sequence length (dim 0 of X, or dim 1 with layout=1) depends on symbolic input dims; give static input shapes (afc import --input-shape NAME=D1,D2,...)
save(
    "rnn_dynamic",
    [helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=2, name="cell")],
    [vi("x", ["T", 1, 3])],
    [
        init("w", np.ones((1, 2, 3), np.float32)),
        init("r", np.ones((1, 2, 2), np.float32)),
    ],
)
