"""Converters of the ONNX optional operators, resolved at compile time: an optional is the
value it holds or empty (`Opt`), known to the importer, so OptionalHasElement is a constant
and OptionalGetElement is the held value. A tensor or sequence given where an optional is
expected (OptionalHasElement-18 and OptionalGetElement-18 accept them) counts as present,
an omitted input as empty. Versions are cited as `Op-<since_version>` from
https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1

from frontends.onnx.importer import Item, Node, OpConverters, Opt

# version 18 accepts a tensor (not only an optional) and an omitted input; 28 adds types
OPS = OpConverters(
    versions={
        "Optional": (15, 28),
        "OptionalHasElement": (15, 18, 28),
        "OptionalGetElement": (15, 18, 28),
    }
)


@OPS.register("Optional")
def convert_optional(node: Node) -> list[Item]:
    """Optional-15/28: an optional holding the input, or an empty one of the `type`
    attribute (which afc does not need: an empty optional holds no value to type)."""
    node.attr("type", None)
    v = node.opt_item(0)
    if isinstance(v, Opt):
        raise node.error("input #0 is an optional; an optional holds a tensor or a sequence")
    return [Opt(v)]


@OPS.register("OptionalHasElement")
def convert_optional_has_element(node: Node) -> list[Item]:
    """OptionalHasElement-15/18/28: whether the input holds a value, a scalar bool constant."""
    v = node.opt_item(0)
    present = v is not None and (not isinstance(v, Opt) or v.value is not None)
    return [node.const(np.asarray(present), i1)]


@OPS.register("OptionalGetElement")
def convert_optional_get_element(node: Node) -> list[Item]:
    """OptionalGetElement-15/18/28: the held value (a tensor or sequence is itself)."""
    v = node.opt_item(0)
    if v is None:
        raise node.error("input #0 is required")
    if not isinstance(v, Opt):
        return [v]
    if v.value is None:
        raise node.error(f"the optional '{node.proto.input[0]}' is empty")
    return [v.value]
