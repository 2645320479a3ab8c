"""The converter table of the ONNX importer: ONNX op type -> converter, for the default
domain, and the operator versions each converter implements. The converters (the
`ops_*` modules) build graph ops through the importer's `Node`; the importer is given
this table, so it does not import them.
"""

from __future__ import annotations

from types import ModuleType

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
    OpVersions,
    RefusedVersions,
)

# each with CONVERTERS, VERSIONS and REFUSED_VERSIONS tables
CONVERTER_MODULES: tuple[ModuleType, ...] = (
    ops_math,
    ops_tensor,
    ops_elementwise,
    ops_search,
    ops_fused,
    ops_indexing,
    ops_norm,
    ops_vision,
    ops_einsum,
    ops_quant,
    ops_recurrent,
    ops_control,
    ops_legacy,
    ops_signal,
    ops_library,
    ops_optional,
    ops_sequence,
    ops_random,
)


def converters() -> dict[str, Converter]:
    """ONNX op type -> converter, for the default domain."""
    table: dict[str, Converter] = {}
    for m in CONVERTER_MODULES:
        table.update(m.CONVERTERS)
    return table


def operator_versions() -> tuple[OpVersions, RefusedVersions]:
    """The versions each converter implements, and what the refused versions change."""
    versions: OpVersions = {}
    refused: RefusedVersions = {}
    for m in CONVERTER_MODULES:
        versions.update(m.VERSIONS)
        refused.update(m.REFUSED_VERSIONS)
    for op, old in ops_legacy.LEGACY_VERSIONS.items():  # the opsets before 13
        versions[op] = tuple(sorted({*old, *versions[op]}))
    return versions, refused


def converter_table() -> ConverterTable:
    """What the importer is handed."""
    return ConverterTable(converters(), *operator_versions(), functions.function_converter)
