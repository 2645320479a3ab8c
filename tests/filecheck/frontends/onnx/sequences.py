# RUN: %python %s %t
# RUN: afc import %t/split_concat.onnx | filecheck %s --check-prefix=SPLIT
# RUN: afc import %t/map.onnx | filecheck %s --check-prefix=MAP
# RUN: not afc import %t/seq_output.onnx 2>&1 | filecheck %s --check-prefix=SEQOUT
# RUN: not afc import %t/seq_input.onnx 2>&1 | filecheck %s --check-prefix=SEQIN
# RUN: not afc import %t/position.onnx 2>&1 | filecheck %s --check-prefix=POSITION
# RUN: not afc import %t/symbolic.onnx 2>&1 | filecheck %s --check-prefix=SYMBOLIC

# ONNX sequences through `afc import`: a sequence is resolved at compile time, so only its
# tensors reach the graph (SplitToSequence a graph.split, ConcatFromSequence a graph.concat,
# SequenceMap its body once per element); a sequence graph input or output, a run-time
# position and a symbolic sequence length are one-line errors naming the value or node.
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs=None, inits=()):
    outputs = outputs or [helper.make_tensor_value_info("y", F, None)]
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, shape, elt=F):
    return helper.make_tensor_value_info(name, elt, shape)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value, np.int64), name)


# Split into [1, 3] along dim 0, drop the first part, append a Relu of the second, and
# concatenate: split, relu, concat; the sequence itself leaves nothing in the IR.
# SPLIT:      func.func @main(%x: tensor<4x2xf32> {graph.name = "x"})
# SPLIT-NEXT:   %{{.*}}, %[[P1:.*]] = graph.split %x {axis = 0, sizes = [1, 3]}
# SPLIT-NEXT:   %[[R:.*]] = graph.relu %[[P1]] : tensor<3x2xf32>
# SPLIT-NEXT:   %[[Y:.*]] = graph.concat %[[P1]], %[[R]] {axis = 0}
# SPLIT-SAME:     -> tensor<6x2xf32>
# SPLIT-NEXT:   func.return %[[Y]]
save(
    "split_concat",
    [
        node("SplitToSequence", ["x", "sizes"], ["s"]),
        node("SequenceErase", ["s", "zero"], ["s1"]),
        node("SequenceAt", ["s1", "zero"], ["t"]),
        node("Relu", ["t"], ["r"]),
        node("SequenceInsert", ["s1", "r"], ["s2"]),
        node("ConcatFromSequence", ["s2"], ["y"], axis=0),
    ],
    [vi("x", [4, 2])],
    inits=[init("sizes", [1, 3]), init("zero", 0)],
)

# SequenceMap of Neg over a sequence of three: three graph.neg, stacked on a new axis.
# MAP:      func.func @main(%x: tensor<3x2xf32> {graph.name = "x"})
# MAP:        graph.split %x {axis = 0, sizes = [1, 1, 1]}
# MAP-COUNT-3: graph.neg
# MAP-NOT:    graph.neg
# MAP:        graph.concat
body = helper.make_graph([node("Neg", ["a"], ["b"])], "body", [vi("a", None)], [vi("b", None)])
save(
    "map",
    [
        node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=1),
        node("SequenceMap", ["s"], ["m"], body=body),
        node("ConcatFromSequence", ["m"], ["y"], axis=0, new_axis=1),
    ],
    [vi("x", [3, 2])],
)

# SEQOUT: error: graph output 's' is a sequence; afc compiles models whose outputs are tensors
save(
    "seq_output",
    [node("SplitToSequence", ["x"], ["s"])],
    [vi("x", [3, 2])],
    [helper.make_tensor_sequence_value_info("s", F, None)],
)

# SEQIN: error: input 's' is a sequence, not a tensor (afc imports tensor inputs only: it resolves sequences and optionals at compile time)
save(
    "seq_input",
    [node("ConcatFromSequence", ["s"], ["y"], axis=0)],
    [helper.make_tensor_sequence_value_info("s", F, None)],
)

# POSITION: error: node 'y' (SequenceAt-11): the position (input #1) must be a constant, but it is computed
save(
    "position",
    [node("SplitToSequence", ["x"], ["s"]), node("SequenceAt", ["s", "p"], ["y"])],
    [vi("x", [3, 2]), vi("p", [], I64)],
)

# SYMBOLIC: error: node 's' (SplitToSequence-11): the sequence length (dim 0 of the input) depends on symbolic input dims
save(
    "symbolic",
    [node("SplitToSequence", ["x"], ["s"]), node("ConcatFromSequence", ["s"], ["y"], axis=0)],
    [vi("x", ["n", 2])],
)
