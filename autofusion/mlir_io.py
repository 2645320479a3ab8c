"""Reading and writing MLIR text: a context with afc's dialects, located verification.

The parser records where each op starts, so that a verifier failure is reported as
`file:line:col: message` for the op that failed rather than as a dump of the module.
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO

from xdsl.context import Context
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp
from xdsl.ir import Dialect, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from autofusion.diagnostics import (
    LineIndex,
    LocatedVerifyError,
    UserError,
    op_location,
    record_positions,
)
from autofusion.dialects.shape_inference import INT64_MAX


def _upstream_dialects() -> dict[str, Callable[[], Dialect]]:
    """The upstream xDSL dialects afc's IR uses."""

    def builtin() -> Dialect:
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def func() -> Dialect:
        from xdsl.dialects.func import Func

        return Func

    def arith() -> Dialect:
        from xdsl.dialects.arith import Arith

        return Arith

    def scf() -> Dialect:
        from xdsl.dialects.scf import Scf

        return Scf

    def memref() -> Dialect:
        from xdsl.dialects.memref import MemRef

        return MemRef

    def test() -> Dialect:
        from xdsl.dialects.test import Test

        return Test

    return {
        "builtin": builtin,
        "func": func,
        "arith": arith,
        "scf": scf,
        "memref": memref,
        "test": test,
    }


def default_context() -> Context:
    """A context with afc's dialects and the upstream ones it builds on, loaded lazily."""
    from autofusion.dialects import get_all_dialects

    ctx = Context()
    for name, factory in {**_upstream_dialects(), **get_all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


class LocatingParser(Parser):
    """An MLIR parser that remembers the source offset of every operation.

    It also keeps resource handles consistent: xDSL 0.74 stores blobs process-wide and
    renames a handle that an earlier parse already declared (`w` -> `w_0`), but renames
    it again when the `{-# dialect_resources #-}` section names it, so the blob would land
    under a third name. Here every spelling of a handle maps to one declared name.
    """

    def __init__(self, ctx: Context, text: str, name: str) -> None:
        super().__init__(ctx, text, name)
        self.op_offsets: dict[Operation, int] = {}
        self._resource_keys: dict[tuple[str, str], str] = {}

    def _parse_dialect_resource_handle(
        self, dialect_name: str, interface: OpAsmDialectInterface
    ) -> str:
        from autofusion.resources import declared

        key = self.parse_identifier(" for resource handle")
        if (dialect_name, key) not in self._resource_keys:
            handle = declared(interface.declare_resource(key), key)
            self._resource_keys[(dialect_name, key)] = handle
        return self._resource_keys[(dialect_name, key)]

    def parse_shape_dimension(self, allow_dynamic: bool = True) -> int:
        """A dimension, refused where it does not fit the int64 MLIR stores it in."""
        start = self._current_token.span.start
        dim = super().parse_shape_dimension(allow_dynamic)
        if dim > INT64_MAX:
            self.raise_error(f"dimension {dim} does not fit in int64", start, self.pos)
        return dim

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self.op_offsets[op] = start
        return op


def _decode(data: str | bytes, name: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"input is not UTF-8 text (bad byte at offset {e.start})", name) from e


def verify_located(module: Operation) -> None:
    """Verify `module`; on failure, raise an error located at the first failing op (where
    it, or the op enclosing it, was parsed)."""
    try:
        module.verify()
        return
    except LocatedVerifyError:
        raise
    except DiagnosticException as whole:
        failure: Exception = whole
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except LocatedVerifyError:
            raise  # a kernel rule about one of its ops, located there
        except (DiagnosticException, ValueError) as e:
            message = str(e).split("\n", 1)[0].strip()
            message = message.removeprefix("Operation does not verify: ")
            raise LocatedVerifyError(message, op_location(op)) from e
    raise LocatedVerifyError(str(failure).split("\n", 1)[0], None)


def parse_module(
    ctx: Context,
    data: str | bytes,
    name: str = "<stdin>",
    line_offset: int = 0,
    implicit_module: bool = True,
) -> ModuleOp:
    """Parse and verify MLIR text, raising located one-line errors.

    `line_offset` is the line the text starts at in its file (for --split-input-file).
    Without `implicit_module`, the text must be one `builtin.module` (--no-implicit-module).
    """
    text = _decode(data, name)
    parser = LocatingParser(ctx, text, name)
    # xDSL's explicit-module parse stops after the first op, dropping what follows (the
    # resource blobs too); parse everything, then check that it was one module
    module = parser.parse_module()
    index = LineIndex(text, name, line_offset)
    if not implicit_module and module not in parser.op_offsets:
        ops = list(module.ops)
        stray = next((o for o in ops if not isinstance(o, ModuleOp)), ops[-1])
        raise UserError(
            "--no-implicit-module needs the input to be a single builtin.module; "
            f"found a top-level {stray.name} here",
            index.location(parser.op_offsets[stray]),
        )
    record_positions(parser.op_offsets, index)
    verify_located(module)
    return module


def module_to_text(ctx: Context, module: ModuleOp, generic: bool = False) -> str:
    """Print a module as MLIR text, with the resource blobs it references.

    Resource handles are printed under the names they were asked for (see
    resources.canonical_handles), so the text of a module does not depend on what else
    the process has parsed or built before.
    """
    from xdsl.printer import Printer

    from autofusion import resources

    used = _resource_attrs(module)
    names = resources.canonical_handles([a.resource_handle.data for a in used])
    target = module
    if any(handle != name for handle, name in names.items()):
        target = module.clone()
        _rename_resources(target, names)
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(target)
    blobs = {names[h]: blob for h in names if (blob := resources.blob_text(h)) is not None}
    if blobs:
        # the layout of xDSL's Printer.print_metadata, with the printed names
        entries = ",\n".join(f'      {k}: "{blobs[k]}"' for k in sorted(blobs))
        out.write(
            "\n\n{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}"
        )
    out.write("\n")
    return out.getvalue()


def _resource_attrs(module: ModuleOp) -> list[DenseResourceAttr]:
    """The resource attributes of `module`'s ops (properties and attributes), in order."""
    found: list[DenseResourceAttr] = []
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, DenseResourceAttr):
                found.append(attr)
    return found


def _rename_resources(module: ModuleOp, names: dict[str, str]) -> None:
    for op in module.walk():
        for table in (op.properties, op.attributes):
            for key, attr in list(table.items()):
                if isinstance(attr, DenseResourceAttr):
                    new = names[attr.resource_handle.data]
                    table[key] = DenseResourceAttr.from_params(new, attr.type)
