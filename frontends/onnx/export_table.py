"""The whole op table of the ONNX exporter and the emission of one op through it.

`TABLE` joins export_ops.CORE_TABLE with the tables of the op families kept in their own
modules (export_math_ops.py, export_vision.py, export_quant.py); each of those imports export_ops, and
only this module imports them all, so the exporter's modules form no import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from onnx import helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation
from xdsl.irdl import OptOperandDef, VarOperandDef

from frontends.onnx import (
    export_library,
    export_math_ops,
    export_quant,
    export_random,
    export_vision,
)
from frontends.onnx.export_ops import (
    CORE_TABLE,
    DOMAIN,
    Body,
    Emitter,
    FunctionTable,
    Mapping,
    Names,
    Standard,
    function_opsets,
    onnx_elem,
)

TABLE: dict[type[Operation], Mapping] = {
    **CORE_TABLE,
    **export_math_ops.math_table(),
    **export_vision.table(),
    **export_quant.table(),
    **export_library.table(),
    **export_random.table(),
}


def _formal_names(defs: Sequence[tuple[str, object]], count: int, prefix: str) -> list[str]:
    """IRDL operand/result names for the `count` present values (optional ones trail)."""
    variadic = any(
        isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef) for _, d in defs
    )
    if variadic or len(defs) < count:
        return [f"{prefix}{i}" for i in range(count)]
    return [name for name, _ in defs[:count]]


def emit_op(
    body: Body,
    functions: FunctionTable,
    op: Operation,
    inputs: Sequence[str],
    outputs: Sequence[str],
    node_name: str,
    prefix: str,
) -> None:
    """Emit `op` (in TABLE) into `body`; named ops may define a function in `functions`.

    Raises NotExportable when ONNX cannot express the op at the body's opset.
    """
    mapping = TABLE[type(op)]
    e = Emitter(body, op, inputs, outputs, node_name, prefix)
    if isinstance(mapping, Standard):
        mapping.emit(e)
        return
    if mapping.native is not None and mapping.native_when(e):
        mapping.native(e)
        return
    fbody = Body(body.opset, Names())
    irdl = type(op).get_irdl_definition()  # type: ignore[attr-defined]
    formal_in = [fbody.names.fresh(n) for n in _formal_names(irdl.operands, len(op.operands), "in")]
    formal_out = [fbody.names.fresh(n) for n in _formal_names(irdl.results, len(op.results), "out")]
    for name, value in zip([*formal_in, *formal_out], [*op.operands, *op.results]):
        fbody.declare(name, onnx_elem(cast(TensorType, value.type).element_type), None)
    fe = Emitter(fbody, op, formal_in, formal_out)
    mapping.decompose(fe)
    proto = helper.make_function(
        DOMAIN,
        "",
        formal_in,
        formal_out,
        fbody.nodes,
        function_opsets(fbody),
        doc_string=mapping.summary,
    )
    name = functions.define(mapping.function_name(e), proto)
    body.add_node(name, inputs, outputs, domain=DOMAIN, name=node_name)
