"""What the importer checks each node against: its operator version's ONNX schema, read
once per (operator, version).

onnx.defs.OpSchema's `inputs` and `attributes` build new Python objects on every access,
and the importer checks every node; reading them once keeps the check off the import's
profile (about 1 ms of a 35 ms BERT import when read per node).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import onnx

SINGLE = onnx.defs.OpSchema.FormalParameterOption.Single


@dataclass(frozen=True)
class OperatorSchema:
    """The parts of an operator version's schema that a node must agree with."""

    min_input: int
    max_input: int
    required_inputs: tuple[tuple[int, str], ...]  # (position, name) of each single input
    attribute_types: Mapping[str, int]  # attribute -> its onnx.AttributeProto type
    required_attributes: tuple[str, ...]


@functools.cache
def operator_schema(op_type: str, version: int) -> OperatorSchema:
    """The default-domain schema of `op_type` at `version` (a since_version)."""
    schema = onnx.defs.get_schema(op_type, version, "")
    attributes = schema.attributes
    return OperatorSchema(
        schema.min_input,
        schema.max_input,
        tuple((i, f.name) for i, f in enumerate(schema.inputs) if f.option == SINGLE),
        # str(AttrType.INT) is "AttrType.INT" (the stubs lack the enum's .name)
        {
            name: onnx.AttributeProto.AttributeType.Value(str(spec.type).rsplit(".", 1)[-1])
            for name, spec in attributes.items()
        },
        tuple(name for name, spec in attributes.items() if spec.required),
    )
