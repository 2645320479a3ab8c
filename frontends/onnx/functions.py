"""ONNX operators defined by a function body, for which afc has no converter: the node is
replaced by its operator's function (as ONNX Runtime inlines a function op it has no
kernel for), converted node by node with the same converters.

The body is the one ONNX defines for the model's opset (`function_opset_versions`, or a
context-dependent function built for the node's attributes and input types). Its formal
inputs are bound to the node's values in a scope of their own (`Importer.convert_subgraph`),
an omitted optional input becomes an omitted input of the body's nodes, and an attribute
reference (`@name`) takes the node's attribute or else the schema's default. The body's
nodes are converted at the opset the function imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto, TypeProto

from frontends.onnx.importer import DEFAULT_DOMAINS, ELEMENT_TYPES, Converter, Item, Node, Value

# graph element type -> ONNX TensorProto data type, for a context-dependent function's
# input types
_ONNX_TYPES = {elt: code for code, elt in ELEMENT_TYPES.items()}


# function operators afc does not inline: the training losses (afc imports inference
# graphs; their outputs only feed a gradient)
NOT_INLINED = frozenset({"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})


def _input_type(value: Value) -> TypeProto:
    shape = [d if d >= 0 else None for d in value.shape]
    return onnx.helper.make_tensor_type_proto(_ONNX_TYPES[value.elt], shape)


def _versions(schema: onnx.defs.OpSchema, context_dependent: bool) -> list[int]:
    """The opsets `schema` defines a (context-dependent) function body for (the onnx
    stubs lack these attributes)."""
    if context_dependent:
        return list(schema.context_dependent_function_opset_versions)  # type: ignore[attr-defined]
    return list(schema.function_opset_versions)  # type: ignore[attr-defined]


def function_body(node: Node) -> FunctionProto | None:
    """The function body of `node`'s operator at the model's opset, or None."""
    try:
        schema = onnx.defs.get_schema(node.op_type, node.opset, "")
    except onnx.defs.SchemaError:
        return None
    static = [v for v in _versions(schema, False) if v <= node.opset]
    dependent = [v for v in _versions(schema, True) if v <= node.opset]
    proto = FunctionProto()
    if static and (not dependent or max(static) >= max(dependent)):
        proto.ParseFromString(schema.get_function_with_opset_version(max(static)))  # type: ignore[attr-defined]
        return proto
    if not dependent:
        return None
    with_defaults = _with_defaults(node.proto, schema)
    types = [
        _input_type(node.input(i)).SerializeToString() if node.proto.input[i] else b""
        for i in range(node.num_inputs)
    ]
    data = schema.get_context_dependent_function_with_opset_version(  # type: ignore[attr-defined]
        max(dependent), with_defaults.SerializeToString(), types
    )
    if not data:
        return None
    proto.ParseFromString(data)
    return proto


def _with_defaults(proto: NodeProto, schema: onnx.defs.OpSchema) -> NodeProto:
    """`proto` with the schema's default for each attribute it does not give."""
    out = NodeProto()
    out.CopyFrom(proto)
    given = {a.name for a in proto.attribute}
    for name, spec in schema.attributes.items():
        if name not in given and spec.default_value.type:
            out.attribute.append(spec.default_value)
    return out


def _bind(
    body: Sequence[NodeProto], attrs: Mapping[str, AttributeProto], omitted: set[str]
) -> list[NodeProto]:
    """Copies of `body`'s nodes (and their subgraphs') with attribute references resolved
    (an unresolved optional one dropped) and omitted inputs made empty."""
    out = []
    for n in body:
        copy = NodeProto()
        copy.CopyFrom(n)
        copy.ClearField("attribute")
        for k, name in enumerate(copy.input):
            if name in omitted:
                copy.input[k] = ""
        for a in n.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name not in attrs:
                    continue
                bound = AttributeProto()
                bound.CopyFrom(attrs[a.ref_attr_name])
                bound.name = a.name
                copy.attribute.append(bound)
                continue
            kept = AttributeProto()
            kept.CopyFrom(a)
            if a.type == AttributeProto.GRAPH:
                nodes = _bind(a.g.node, attrs, omitted)
                del kept.g.node[:]
                kept.g.node.extend(nodes)
            copy.attribute.append(kept)
        out.append(copy)
    return out


def function_converter(node: Node) -> Converter | None:
    """The converter of `node`'s operator as its function body, or None when it has none
    at the model's opset."""
    if node.op_type in NOT_INLINED:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, node.opset, "")
    except onnx.defs.SchemaError:
        return None
    versions = [*_versions(schema, False), *_versions(schema, True)]
    return convert_function if any(v <= node.opset for v in versions) else None


def convert_function(node: Node) -> list[Item | None]:
    """The values of `node`'s outputs, converted as its operator's function body."""
    function = function_body(node)
    if function is None:
        raise node.error("ONNX gives no function body for these attributes and input types")
    return _inline(node, function)


def _inline(node: Node, function: FunctionProto) -> list[Item | None]:
    importer = node.importer
    schema = onnx.defs.get_schema(node.op_type, node.opset, "")
    attrs = {a.name: a for a in _with_defaults(node.proto, schema).attribute}
    inputs = list(node.proto.input) + [""] * (len(function.input) - node.num_inputs)
    omitted = {formal for formal, given in zip(function.input, inputs) if not given}
    graph = onnx.GraphProto()
    graph.node.extend(_bind(function.node, attrs, omitted))
    bound = [(formal, given) for formal, given in zip(function.input, inputs) if given]
    for formal, _ in bound:
        graph.input.append(onnx.ValueInfoProto(name=formal))
    for formal in function.output:
        graph.output.append(onnx.ValueInfoProto(name=formal))
    opsets = [o.version for o in function.opset_import if o.domain in DEFAULT_DOMAINS]
    outer = importer.opset
    importer.opset = opsets[0] if opsets else outer
    try:
        values = [importer.lookup(given, node) for _, given in bound]
        return list(importer.convert_subgraph(node, graph, values, node.op_type))
    finally:
        importer.opset = outer
