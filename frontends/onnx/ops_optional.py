"""Converters of the ONNX optional operators on the values afc has: a tensor, or an
omitted input. An optional holding a tensor is that tensor, so OptionalHasElement is a
constant (true for a tensor, false for an omitted input) and OptionalGetElement of a
tensor is the tensor itself. Optional values as such (the Optional operator, optional
graph inputs) are refused where they are made. Versions are cited as
`Op-<since_version>` from https://onnx.ai/onnx/operators/.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import i1

from frontends.onnx.importer import (
    Converter,
    Node,
    OpVersions,
    RefusedVersions,
    Value,
    register,
)

CONVERTERS: dict[str, Converter] = {}

# version 18 accepts a tensor (not only an optional) and an omitted input; 28 adds types
VERSIONS: OpVersions = {"OptionalHasElement": (15, 18, 28), "OptionalGetElement": (15, 18, 28)}
REFUSED_VERSIONS: RefusedVersions = {}


@register(CONVERTERS, "OptionalHasElement")
def convert_optional_has_element(node: Node) -> list[Value]:
    """OptionalHasElement-15/18/28: whether the input is given, a scalar bool constant."""
    return [node.const(np.asarray(node.opt_input(0) is not None), i1)]


@register(CONVERTERS, "OptionalGetElement")
def convert_optional_get_element(node: Node) -> list[Value]:
    """OptionalGetElement-15/18/28 of a tensor: the tensor."""
    return [node.input(0)]
