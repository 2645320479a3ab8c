# Bad ONNX input, node by node: operators of other domains, operator versions the
# model's opset does not have, attributes outside the spec and missing or extra inputs
# each give one line naming the node, and exit 1.
# RUN: %python %s %t
# RUN: not afc import %t/future.onnx 2>&1 | filecheck %s --check-prefix=FUTURE
# FUTURE: error: the model uses ONNX opset 99, newer than the installed onnx {{.*}} knows ({{[0-9]+}}); afc imports opsets up to {{[0-9]+}}
# RUN: not afc import %t/domain.onnx 2>&1 | filecheck %s --check-prefix=DOMAIN
# DOMAIN: error: node 'f' (com.microsoft.FusedGemm): operator domain 'com.microsoft' is not supported (afc imports the default ONNX domain only)
# RUN: not afc import %t/later.onnx 2>&1 | filecheck %s --check-prefix=LATER
# LATER: error: node 'act': ONNX operator Gelu does not exist in opset 18 (the model's); it was introduced in opset 20
# RUN: not afc import %t/unknown.onnx 2>&1 | filecheck %s --check-prefix=UNKNOWN
# UNKNOWN: error: node 'u': Frobnicate is not an ONNX operator (opset 18)
# RUN: not afc import %t/attr_name.onnx 2>&1 | filecheck %s --check-prefix=ATTR-NAME
# ATTR-NAME: error: node 'sm' (Softmax-13): attribute 'axes' is not in the spec (its attributes are axis)
# RUN: not afc import %t/attr_type.onnx 2>&1 | filecheck %s --check-prefix=ATTR-TYPE
# ATTR-TYPE: error: node 'sm' (Softmax-13): attribute 'axis' must be INT, got FLOAT
# RUN: not afc import %t/attr_value.onnx 2>&1 | filecheck %s --check-prefix=ATTR-VALUE
# ATTR-VALUE: error: node 'pool' (AveragePool-11): attribute auto_pad='MIDDLE' is not supported (NOTSET, VALID, SAME_UPPER, SAME_LOWER)
# RUN: not afc import %t/missing_input.onnx 2>&1 | filecheck %s --check-prefix=MISSING
# MISSING: error: node 'mm' (MatMul-13): required input #1 ('B') is missing
# RUN: not afc import %t/extra_input.onnx 2>&1 | filecheck %s --check-prefix=EXTRA
# EXTRA: error: node 'r' (Relu-14): has 2 inputs; it takes at most 1
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def save(name, nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save_model(m, str(out / f"{name}.onnx"))


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


save("future", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])], opset=99)
save(
    "domain",
    [helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft", name="f")],
    [vi("x", [2])],
    [vi("y", [2])],
)
save("later", [helper.make_node("Gelu", ["x"], ["y"], name="act")], [vi("x", [2])], [vi("y", [2])])
save(
    "unknown",
    [helper.make_node("Frobnicate", ["x"], ["y"], name="u")],
    [vi("x", [2])],
    [vi("y", [2])],
)
save(
    "attr_name",
    [helper.make_node("Softmax", ["x"], ["y"], name="sm", axes=[0])],
    [vi("x", [2])],
    [vi("y", [2])],
)
save(
    "attr_type",
    [helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0.5)],
    [vi("x", [2])],
    [vi("y", [2])],
)
save(
    "attr_value",
    [
        helper.make_node(
            "AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2], auto_pad="MIDDLE"
        )
    ],
    [vi("x", [1, 1, 4])],
    [vi("y", [1, 1, 2])],
)
save(
    "missing_input",
    [helper.make_node("MatMul", ["x"], ["y"], name="mm")],
    [vi("x", [2, 2])],
    [vi("y", [2, 2])],
)
save(
    "extra_input",
    [helper.make_node("Relu", ["x", "x"], ["y"], name="r")],
    [vi("x", [2])],
    [vi("y", [2])],
)
