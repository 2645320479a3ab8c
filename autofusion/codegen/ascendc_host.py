"""The host side of a generated Ascend C kernel: tiling data and tiling functions.

For a kernel @k (op type `K` = camel case of k, ascend.md 2.2):

* `op_host/k_tiling.h`: `BEGIN_TILING_DATA_DEF(KTilingData)` with one int64_t field per
  tiling scalar of the kernel, `REGISTER_TILING_DATA_CLASS(K, KTilingData)` (ascend.md
  2.6). The kernel reads it with GET_TILING_DATA.
* the tiling code of `op_host/k.cpp` (the file itself, with the OpDef, is cann_project.py's):
  - `KTiling(args..., int64_t (&results)[n])`: the tiling rule `@k_tiling` (func IR in
    `arith`) as a plain C++ function, results in order; a harness can call it.
  - `static TilingFunc(gert::TilingContext*)`: what CANN calls at run time (the OpDef
    registers it). It reads the input shapes, checks the dimensions the IR fixed
    statically, computes the values the IR's host code computes before `buffer.launch @k`
    (the dims, the call of the tiling rule, any other scalars), fills the tiling data,
    sets the block count (and, for a kernel that calls SyncAll, batch mode:
    `SetScheduleMode(1)`) and the workspace (ascend.md 2.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from autofusion.codegen.ascendc_api import AscendCApi
from autofusion.codegen.cpp_scalar import (
    CppExpr,
    CppWriter,
    Namer,
    ScalarPrinter,
    camel,
    describe_location,
    scalar_type,
)
from autofusion.codegen.kernel_interface import op_type_of, tiling_field_names, workspace_fields
from autofusion.dialects import buffer
from autofusion.dialects.host_rules import find_launch, find_tiling_func, host_slice
from autofusion.hardware import get_chip

# TilingContext::SetScheduleMode's batch mode: the launch starts only when every block
# has a core (SyncAll.md asks for it in kernels that call SyncAll)
BATCH_MODE = 1


class _RulePrinter(ScalarPrinter):
    """The tiling rule's body; `func.return` fills `results`."""

    def statement(self, op: Operation) -> None:
        if isinstance(op, func.ReturnOp):
            for i, v in enumerate(op.arguments):
                self.w.line(f"results[{i}] = {self.expr(v).text};")
            return
        assert not isinstance(op, func.CallOp), "host_rules: a tiling rule calls no functions"
        super().statement(op)


class _ContextPrinter(ScalarPrinter):
    """The host code before a launch, reading dims from a gert::TilingContext (or, with
    DIM_TEXT overridden, from another context's input shapes)."""

    DIM_TEXT: ClassVar[str] = "{shape}->GetStorageShape().GetDim({dim})"
    RANK_TEXT: ClassVar[str] = "{shape}->GetStorageShape().GetDimNum()"
    SHAPE_TYPE: ClassVar[str] = "const gert::StorageShape*"
    CHECKS_STATIC: ClassVar[bool] = True

    INLINE_OPS: ClassVar[tuple[type[Operation], ...]] = (
        *ScalarPrinter.INLINE_OPS,
        buffer.DimOp,
    )

    def __init__(
        self,
        namer: Namer,
        launch: buffer.LaunchOp,
        rule: func.FuncOp | None,
        slice_ops: set[Operation],
    ) -> None:
        super().__init__(namer, "inline")
        self.launch = launch
        self.rule = rule
        self.slice_ops = slice_ops
        self.inputs: dict[SSAValue, str] = {}

    def may_inline(self, op: Operation, user: Operation) -> bool:
        return user.parent_block() is op.parent_block() and (
            user in self.slice_ops or user is self.launch
        )

    def render_op(self, op: Operation) -> CppExpr:
        if isinstance(op, buffer.DimOp):
            assert op.source in self.inputs, "host_rules: a dim of a tensor the kernel takes"
            return CppExpr(
                self.DIM_TEXT.format(shape=self.inputs[op.source], dim=op.dim.value.data)
            )
        return super().render_op(op)

    def read_inputs(self, inputs: Sequence[SSAValue], failed: str) -> None:
        """Declare each input's shape from the context; a missing input, another rank
        or (for TilingFunc, CHECKS_STATIC) a static dim other than the IR's fails."""
        for i, v in enumerate(inputs):
            name = self.namer.fresh(f"input{i}")
            self.inputs[v] = name
            shape = cast(TensorType, v.type).get_shape()
            self.w.line(f"{self.SHAPE_TYPE} {name} = context->GetInputShape({i});")
            checks = [f"{name} == nullptr", f"{self.RANK_TEXT.format(shape=name)} != {len(shape)}"]
            if self.CHECKS_STATIC:
                checks += [
                    f"{self.DIM_TEXT.format(shape=name, dim=d)} != {s}"
                    for d, s in enumerate(shape)
                    if s >= 0
                ]
            with self.w.block(f"if ({' || '.join(checks)})"):
                self.w.line(f"return {failed};")

    def calls_rule(self, callee: str) -> bool:
        """Whether @callee is a tiling rule the printed code defines."""
        return self.rule is not None and callee == self.rule.sym_name.data

    def statement(self, op: Operation) -> None:
        if isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            assert self.calls_rule(callee), "host_rules: the host code calls its tiling rule"
            results = self.namer.fresh("tilingResults")
            self.w.line(f"int64_t {results}[{len(op.results)}];")
            args = ", ".join([*(self.expr(v).text for v in op.arguments), results])
            self.w.line(f"{camel(callee)}({args});")
            for i, r in enumerate(op.results):
                self.bound[r] = CppExpr(f"{results}[{i}]")
            return
        if isinstance(op, buffer.DimOp):
            self.emit_definition(op, self.render_op(op))
            return
        assert self.is_pure_expression(op) or isinstance(op, arith.ConstantOp), "host_rules"
        super().statement(op)


def tiling_struct_name(kernel_name: str) -> str:
    """The tiling-data struct of a kernel (BEGIN_TILING_DATA_DEF), in namespace optiling."""
    return f"{camel(kernel_name)}TilingData"


def tiling_header_text(
    name: str, struct: str, op_type: str, fields: list[str], api: AscendCApi
) -> str:
    """op_host/<name>_tiling.h: the tiling struct of one op, an int64_t per field."""
    guard = f"{name.upper()}_TILING_H"
    w = CppWriter()
    w.line(f"// op_host/{name}_tiling.h: tiling data of kernel @{name}, generated by afc")
    w.line(f"#ifndef {guard}")
    w.line(f"#define {guard}")
    w.line(f'#include "{api.tiling_header}"')
    w.line()
    w.line(f"namespace {api.tiling_namespace} {{")
    w.line(f"{api.tiling_begin}({struct})")
    w.level += 1
    for f in fields:
        w.line(f"{api.tiling_field}(int64_t, {f});")
    w.level -= 1
    w.line(f"{api.tiling_end};")
    w.line()
    w.line(f"{api.tiling_register}({op_type}, {struct})")
    w.line(f"}}  // namespace {api.tiling_namespace}")
    w.line(f"#endif  // {guard}")
    return w.text() + "\n"


class HostPrinter:
    """Prints the tiling header and the host tiling source of one kernel."""

    def __init__(
        self, module: ModuleOp, kernel: buffer.KernelOp, api: AscendCApi, debug: bool
    ) -> None:
        self.module = module
        self.kernel = kernel
        self.api = api
        self.debug = debug
        self.name = kernel.sym_name.data
        self.op_type = op_type_of(kernel)
        self.struct = tiling_struct_name(self.name)
        self.fields = tiling_field_names(kernel)
        self.launch = find_launch(module, kernel)
        self.rule = find_tiling_func(module, kernel, self.launch)

    def header(self) -> str:
        return tiling_header_text(self.name, self.struct, self.op_type, self.fields, self.api)

    def rule_signature(self) -> str | None:
        """The declaration of the plain tiling rule function (None without a rule)."""
        if self.rule is None:
            return None
        namer = Namer({"results"})
        params = [
            f"{scalar_type(t)} {namer.fresh(a.name_hint, 'arg')}"
            for a, t in zip(self.rule.body.block.args, self.rule.function_type.inputs.data)
        ]
        n = len(self.rule.function_type.outputs.data)
        params.append(f"int64_t (&results)[{n}]")
        return f"void {camel(self.rule.sym_name.data)}({', '.join(params)})"

    def tiling_parts(self) -> list[ScalarPrinter]:
        """The printed tiling rule and TilingFunc (each when the module has it), for the
        `namespace optiling` of op_host/<k>.cpp."""
        parts: list[ScalarPrinter] = []
        if self.rule is not None:
            parts.append(self._rule())
        if self.launch is not None:
            parts.append(self._tiling_func(self.launch))
        return parts

    def rule_part(self) -> ScalarPrinter | None:
        """The printed tiling rule alone (None without one)."""
        return self._rule() if self.rule is not None else None

    def _rule(self) -> ScalarPrinter:
        rule = cast(func.FuncOp, self.rule)  # its form is host_rules'
        namer = Namer({"results"})
        printer = _RulePrinter(namer, "inline")
        for arg in rule.body.block.args:
            printer.name(arg, "arg")
        printer.find_dead(iter(list(rule.walk())[1:]))
        printer.decide_inlining(iter(list(rule.walk())[1:]))
        w = printer.w
        w.line(f"// the tiling rule @{rule.sym_name.data}")
        with w.function(cast(str, self.rule_signature())):
            printer.emit_block(rule.body.block)
        return printer

    def _tiling_func(self, launch: buffer.LaunchOp) -> ScalarPrinter:
        ordered = host_slice(launch, [launch.blocks, *launch.tiling], f"the tiling of @{self.name}")
        needed = set(ordered)
        namer = Namer({"context", "tiling", "workspaceSizes", "platform"})
        printer = _ContextPrinter(namer, launch, self.rule, needed)
        printer.decide_inlining(iter(ordered))  # the slice has no dead ops
        w = printer.w
        where = describe_location(launch.location) if self.debug else ""
        if where:
            w.line(f"// the host code before buffer.launch @{self.name} at {where}")
        ctx = self.api.tiling_context
        # static, as msOpGen writes it: only the OpDef's AICore().SetTiling refers to it
        head = f"static {self.api.graph_status} {self.api.tiling_func}({ctx}* context)"
        with w.function(head):
            printer.read_inputs(list(launch.inputs), self.api.graph_failed)
            for op in ordered:
                if op not in printer.inlined:
                    printer.statement(op)
            w.line(f"{self.struct} tiling;")
            for field, v in zip(self.fields, launch.tiling):
                w.line(f"tiling.set_{field}({printer.expr(v).text});")
            blocks = printer.expr(launch.blocks).text
            w.line(f"context->{self.api.set_block_dim}(static_cast<uint32_t>({blocks}));")
            if any(isinstance(op, buffer.SyncAllOp) for op in self.kernel.walk()):
                # batch mode: every block starts together, else SyncAll can deadlock when
                # several streams run (asc-devkit SyncAll.md; CANN ops call it likewise)
                w.line(f"context->{self.api.set_schedule_mode}({BATCH_MODE});")
            w.line(
                "tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), "
                "context->GetRawTilingData()->GetCapacity());"
            )
            w.line("context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());")
            w.line("size_t* workspaceSizes = context->GetWorkspaceSizes(1);")
            spaces = workspace_fields(self.kernel)
            if spaces:
                # the kernel's workspaces after the system workspace of the library APIs
                # (GetUserWorkspace in the kernel skips it; ascend.md 2.4)
                w.line(f"auto platform = {self.api.platform}(context->GetPlatformInfo());")
                parts = [
                    f"({printer.expr(launch.tiling[i]).at(70)} + 511) / 512 * 512" for i in spaces
                ]
                w.line(
                    f"workspaceSizes[0] = platform.{self.api.lib_workspace_size}() + "
                    f"static_cast<size_t>({' + '.join(parts)});"
                )
            elif self.api.forced_mix(get_chip(self.kernel.chip.data), self.kernel.core_type.data):
                # a pure vector kernel run as a MIX type needs a workspace of more than 0
                # bytes (asc-devkit 设置Kernel类型.md, 约束说明: "比如16、32等")
                w.line(f"workspaceSizes[0] = {self.api.forced_mix_workspace};")
            else:
                w.line("workspaceSizes[0] = 0;")
            w.line(f"return {self.api.graph_success};")
        return printer


__all__ = ["HostPrinter", "find_launch", "find_tiling_func", "host_slice"]
