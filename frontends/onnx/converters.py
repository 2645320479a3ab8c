"""The converter table of the ONNX importer: ONNX op type -> converter, for the default
domain, and the operator versions each converter implements. The converters (the
`ops_*` modules) build graph ops through the importer's `Node`; the importer is given
this table, so it does not import them.
"""

from __future__ import annotations

from frontends.onnx import (
    functions,
    ops_control,
    ops_einsum,
    ops_elementwise,
    ops_fused,
    ops_indexing,
    ops_legacy,
    ops_library,
    ops_math,
    ops_norm,
    ops_optional,
    ops_quant,
    ops_random,
    ops_recurrent,
    ops_search,
    ops_sequence,
    ops_signal,
    ops_tensor,
    ops_vision,
)
from frontends.onnx.importer import (
    Converter,
    ConverterTable,
    OpConverters,
    OpVersions,
    RefusedVersions,
)

# the table (`OPS`) of each converter module
CONVERTER_TABLES: tuple[OpConverters, ...] = (
    ops_math.OPS,
    ops_tensor.OPS,
    ops_elementwise.OPS,
    ops_search.OPS,
    ops_fused.OPS,
    ops_indexing.OPS,
    ops_norm.OPS,
    ops_vision.OPS,
    ops_einsum.OPS,
    ops_quant.OPS,
    ops_recurrent.OPS,
    ops_control.OPS,
    ops_legacy.OPS,
    ops_signal.OPS,
    ops_library.OPS,
    ops_optional.OPS,
    ops_sequence.OPS,
    ops_random.OPS,
)


def converters() -> dict[str, Converter]:
    """ONNX op type -> converter, for the default domain."""
    table: dict[str, Converter] = {}
    for ops in CONVERTER_TABLES:
        table.update(ops.converters)
    return table


def operator_versions() -> tuple[OpVersions, RefusedVersions]:
    """The versions each converter implements, and what the refused versions change."""
    versions: OpVersions = {}
    refused: RefusedVersions = {}
    for ops in CONVERTER_TABLES:
        versions.update(ops.versions)
        refused.update(ops.refused)
    for op, old in ops_legacy.LEGACY_VERSIONS.items():  # the opsets before 13
        versions[op] = tuple(sorted({*old, *versions[op]}))
    return versions, refused


def converter_table() -> ConverterTable:
    """What the importer is handed."""
    return ConverterTable(converters(), *operator_versions(), functions.function_converter)
