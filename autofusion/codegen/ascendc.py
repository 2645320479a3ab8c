"""Ascend C from the buffer dialect (`afc-opt -t ascendc`, `emit_ascendc`).

For every `buffer.kernel` the printer writes, in the CANN 8.x spelling (ascend.md 2.1):

* `op_kernel/<kernel>.cpp`: the kernel class and its `extern "C" __global__ __aicore__`
  entry (ascend.md 2.2, 2.5). The kernel's GM arguments become GlobalTensors, its
  tiling scalars members filled from GET_TILING_DATA; `alloc_queue`/`alloc_buf` become
  TQue/TBuf members given memory in Init; the ops around the tile loop become Process;
  each `buffer.stage` becomes a CopyIn/Compute/CopyOut method whose parameters are the
  values it uses from outside. Copies become DataCopy when their blocks are provably
  32-byte multiples, else DataCopyPad (ascend.md 2.7); vector ops the count-form APIs
  (2.8); `mmad` and the cube copies Mmad/LoadData/Fixpipe (2.10). Between pipes that
  the queues do not order, SetFlag/WaitFlag pairs are inserted (2.9).
* `op_host/<kernel>_tiling.h` and `op_host/<kernel>.cpp`: the tiling-data struct, and
  the host tiling function with the op's registration (ascendc_host.py, cann_project.py),
  plus the CANN project's CMake files and build.sh.

Every API name comes from a table (ascendc_api.py). An op the printer cannot express
in correct Ascend C is a one-line error naming the op. With `debug`, each statement
carries a comment naming the graph op and source location it came from. The output is
deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc_analysis import plan_syncs, root_of
from autofusion.codegen.ascendc_api import CAST_PAIRS, VECTOR_TYPES, AscendCApi
from autofusion.codegen.ascendc_cube import CubePath
from autofusion.codegen.cpp_scalar import (
    MUL,
    REL,
    CppExpr,
    CppWriter,
    Namer,
    ScalarPrinter,
    binary,
    camel,
    describe_location,
    float_literal,
    memref_element,
    memref_width,
    ops_in,
    static_cast_text,
)
from autofusion.codegen.kernel_interface import (
    RESERVED,
    entry_name,
    gm_param_names,
    kernels_of,
    tiling_field_names,
)
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.dialects.ascendc_rules import (
    co2_buffers,
    init_ops,
    kernel_expression_ops,
    layout_key,
)
from autofusion.dialects.ascendc_rules import where as _where
from autofusion.dialects.buffer_verifier import runs_split
from autofusion.dialects.fractal_rules import FractalLayouts
from autofusion.dialects.tiling_facts import Divisibility
from autofusion.hardware import ChipSpec


def l2_bypass_inputs(kernel: buffer.KernelOp) -> list[int]:
    """The GM inputs whose GlobalTensor reads bypass L2 (the kernel's `l2_bypass`)."""
    attr = kernel.attributes.get(buffer.L2_BYPASS_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    return [cast(IntegerAttr, a).value.data for a in attr]


@dataclass
class _Stage:
    """A buffer.stage printed as a method: its name and parameters."""

    name: str
    params: list[SSAValue]


class KernelPrinter(ScalarPrinter):
    """Prints one buffer.kernel as an Ascend C kernel source file."""

    INLINE_OPS: ClassVar[tuple[type[Operation], ...]] = kernel_expression_ops()

    def __init__(
        self,
        kernel: buffer.KernelOp,
        chip: ChipSpec,
        facts: Divisibility,
        api: AscendCApi,
        debug: bool,
    ) -> None:
        self.kernel = kernel
        self.api = api
        self.debug = debug
        self.facts = facts
        self.chip = chip  # the module's target; the verifier keeps kernel.chip equal
        self.kernel_name = kernel.sym_name.data
        self.op_type = camel(self.kernel_name)
        self.class_name = f"Kernel{self.op_type}"
        self.fields = tiling_field_names(kernel)
        self.gm_params = gm_param_names(kernel, self.fields)
        namer = Namer(RESERVED | set(self.fields) | set(self.gm_params) | {self.class_name})
        super().__init__(namer, api.method_qualifiers)
        self.entry_name = entry_name(kernel)
        # a mix kernel on a split chip: the AIC runs the cube stages, each AIV the others
        self.split = runs_split(kernel)
        cores: tuple[str | None, ...] = ("aic", "aiv") if self.split else (None,)
        self.syncs = {core: plan_syncs(kernel, core) for core in cores}
        self.members: list[str] = []
        self.init_ops: set[Operation] = set()
        self.stages: dict[buffer.StageOp, _Stage] = {}
        # what each L1/L0C (and CO2) buffer holds as fractals, as the printing goes
        self.layouts = FractalLayouts(kernel, facts)
        self.co2_keys: set[SSAValue] = set()
        self.workspaces: list[buffer.WorkspaceOp] = []
        self.stage_order: list[buffer.StageOp] = []
        # a stage of a super kernel (super_kernel_ascendc.py) runs on fewer blocks than
        # its launch has: Init takes its own block count, which GetBlockNum stands for
        self.stage_blocks: str | None = None
        self.cube = CubePath(self)  # the cube path's copies and Mmad (ascendc_cube.py)

    # ---- the file -----------------------------------------------------------------------

    def print(self) -> str:
        w = CppWriter()
        k = self.kernel
        w.line(
            f"// op_kernel/{self.kernel_name}.cpp: Ascend C kernel @{self.kernel_name} "
            f'(template "{k.template.data}", {self.chip.name}, {k.core_type.data}), generated by afc'
        )
        w.line(f'#include "{self.api.include}"')
        w.line()
        w.line(f"using namespace {self.api.namespace};")
        w.line()
        w.lines.extend(self.class_lines())
        w.line()
        self._emit_entry(w)
        return w.text() + "\n"

    def class_lines(self) -> list[str]:
        """The kernel's helpers and its class (the file without its entry)."""
        self.co2_keys = co2_buffers(self.kernel)
        self.find_dead(ops_in(self.kernel))
        self._classify()
        self.decide_inlining(ops_in(self.kernel))
        self._plan_stages()
        init = self._method_text(self._emit_init)
        process = self._method_text(self._emit_process)
        stages = [self._method_text(partial(self._emit_stage, s)) for s in self.stage_order]

        w = CppWriter()
        helpers = self.helper_text()
        if helpers:
            w.lines.extend(helpers)
            w.line()
        w.line(f"class {self.class_name} {{")
        w.line("public:")
        w.level += 1
        w.line(f"{self.api.method_qualifiers} {self.class_name}() {{}}")
        w.lines.extend(init)
        w.lines.extend(process)
        w.level -= 1
        if stages:
            w.line()
            w.line("private:")
            w.level += 1
            for text in stages:
                w.lines.extend(text)
            w.level -= 1
        w.line()
        w.line("private:")
        w.level += 1
        for member in self.members:
            w.line(member)
        w.level -= 1
        w.line("};")
        return w.lines

    def _method_text(self, emit: Callable[[], None]) -> list[str]:
        saved = self.w
        self.w = CppWriter()
        self.w.level = 1
        emit()
        lines = self.w.lines
        self.w = saved
        return lines

    # ---- what goes where -------------------------------------------------------------------

    def _classify(self) -> None:
        """Split the entry block into Init (allocations and what their sizes need) and
        Process; make the values both use class members."""
        entry = self.kernel.body.block
        init = init_ops(self.kernel)  # the verifier checked that Init can run them
        self.init_ops = init

        names = dict(zip(self.kernel.tiling_args, self.fields))
        for arg, name in names.items():
            self.bound[arg] = CppExpr(name)
            self.members.append(f"int64_t {name};")
        for arg, param in zip(self.kernel.gm_args, self.gm_params):
            member = self.namer.fresh(f"{param}Gm")
            self.bound[arg] = CppExpr(member)
            self.members.append(
                f"{self.api.global_tensor}<{self._ctype(memref_element(arg))}> {member};"
            )
        self.members.insert(0, f"{self.api.pipe} pipe;")
        if self.stage_blocks is not None:
            self.members.append(f"int64_t {self.stage_blocks};")
        self.workspaces = [op for op in entry.ops if isinstance(op, buffer.WorkspaceOp)]
        for op in self.workspaces:
            member = self.namer.fresh(f"{op.result.name_hint or 'workspace'}Gm")
            self.bound[op.result] = CppExpr(member)
            self.members.append(
                f"{self.api.global_tensor}<{self._ctype(memref_element(op.result))}> {member};"
            )
        for op in entry.ops:
            if isinstance(op, buffer.AllocQueueOp):
                name = self.name(op.queue, "que")
                self.bound[op.queue] = CppExpr(name)
                pos = self._position(op, op.position)
                self.members.append(f"{self.api.queue}<{pos}, {op.buffers.value.data}> {name};")
            elif isinstance(op, buffer.AllocBufOp):
                name = self.name(op.buffer, "buf")
                self.bound[op.buffer] = CppExpr(name)
                pos = self._position(op, op.position.data)
                self.members.append(f"{self.api.tbuf}<{pos}> {name}Buf;")
                self.namer.taken.add(f"{name}Buf")
                elt = self._ctype(memref_element(op.buffer))
                self.members.append(f"{self.api.local_tensor}<{elt}> {name};")
            elif op in init and not isinstance(op, arith.ConstantOp):
                result = op.results[0]
                if any(self._entry_ancestor(u) not in init for u in self.live_uses(result)):
                    name = self.name(result)
                    self.bound[result] = CppExpr(name)
                    self.members.append(f"{self.cpp_type(result.type)} {name};")

    def _entry_ancestor(self, op: Operation) -> Operation:
        entry = self.kernel.body.block
        while op.parent is not entry:
            parent = op.parent_op()
            assert parent is not None
            op = parent
        return op

    def may_inline(self, op: Operation, user: Operation) -> bool:
        if user.parent_block() is not op.parent_block():
            return False
        if op.parent is self.kernel.body.block:
            return (op in self.init_ops) == (user in self.init_ops)
        return True

    def _plan_stages(self) -> None:
        counts: dict[str, int] = {}
        method = {"copy_in": "CopyIn", "compute": "Compute", "copy_out": "CopyOut"}
        for op in self.kernel.walk():
            if not isinstance(op, buffer.StageOp):
                continue
            base = method.get(op.stage.data, camel(op.stage.data))
            counts[base] = counts.get(base, 0) + 1
            name = base if counts[base] == 1 else f"{base}{counts[base]}"
            self.namer.taken.add(name)
            params: list[SSAValue] = []
            for inner in ops_in(op):
                if inner in self.dead:
                    continue
                for v in inner.operands:
                    if v in self.bound or v in params or isinstance(v.owner, arith.ConstantOp):
                        continue
                    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
                    if owner is not None and op.is_ancestor(owner):
                        continue
                    params.append(v)
            self.stages[op] = _Stage(name, params)
            self.stage_order.append(op)

    # ---- types -----------------------------------------------------------------------------

    def _ctype(self, element: Attribute) -> str:
        name = dtypes.type_name(element)
        if name not in self.api.types:
            raise UserError(f"element type {element} has no Ascend C type")
        return self.api.types[name]

    def cpp_type(self, t: Attribute) -> str:
        if isinstance(t, MemRefType):
            tensor = self.api.global_tensor if buffer.space_of(t) == "gm" else self.api.local_tensor
            return f"{tensor}<{self._ctype(t.element_type)}>"
        return super().cpp_type(t)

    def _position(self, op: Operation, position: str) -> str:
        return self.api.positions[position]  # buffer.POSITIONS, which the ops verify

    # ---- expressions -----------------------------------------------------------------------

    def render_op(self, op: Operation) -> CppExpr:
        if isinstance(op, buffer.ViewOp):
            return CppExpr(f"{self.expr(op.base).at(100)}[{self.expr(op.offset).text}]")
        if isinstance(op, buffer.BlockIdxOp):
            if self.split:
                # an AIV's GetBlockIdx counts vector cores (ascend.md 2.3)
                idx = CppExpr(f"{self.api.block_idx}()")
                return binary(idx, "/", CppExpr(f"{self.api.task_ration}()"), MUL)
            return CppExpr(f"{self.api.block_idx}()")
        if isinstance(op, buffer.SubBlockIdxOp):
            return CppExpr(f"{self.api.sub_block_idx}()")
        if isinstance(op, buffer.BlockNumOp):
            if self.stage_blocks is not None:
                return CppExpr(self.stage_blocks)
            return CppExpr(f"{self.api.block_num}()")
        return super().render_op(op)

    def e(self, value: SSAValue) -> str:
        return self.expr(value).text

    def comment(self, op: Operation) -> str | None:
        if not self.debug:
            return None
        return describe_location(op.location) or None

    # ---- methods -----------------------------------------------------------------------------

    def _emit_init(self) -> None:
        params = [f"{self.api.gm_addr} {p}" for p in self.gm_params]
        if self.workspaces:
            params.append(f"{self.api.gm_addr} userWorkspace")
        params += [f"int64_t {f}" for f in self.fields]
        own = [] if self.stage_blocks is None else [self.stage_blocks]
        params += [f"int64_t {f}" for f in own]
        with self.w.function(f"{self.api.method_qualifiers} void Init({', '.join(params)})"):
            for f in [*self.fields, *own]:
                self.w.line(f"this->{f} = {f};")
            for arg, param in zip(self.kernel.gm_args, self.gm_params):
                t = self._ctype(memref_element(arg))
                self.w.line(
                    f"{self.e(arg)}.{self.api.set_global_buffer}"
                    f"(({self.api.gm_qualifier} {t}*){param});"
                )
            for i in l2_bypass_inputs(self.kernel):
                # read once: past L2, so it evicts nothing (lowering/l2_hint.py)
                arg = self.kernel.gm_args[i]
                self.w.line(f"{self.e(arg)}.{self.api.set_l2_cache_hint}({self.api.l2_disable});")
            offset = ""
            for op in self.workspaces:
                t = self._ctype(memref_element(op.result))
                base = f"userWorkspace + {offset}" if offset else "userWorkspace"
                self.w.line(
                    f"{self.e(op.result)}.{self.api.set_global_buffer}"
                    f"(({self.api.gm_qualifier} {t}*)({base}));",
                    self.comment(op),
                )
                step = f"({self.e(op.bytes)} + 511) / 512 * 512"
                offset = f"{offset} + {step}" if offset else step
            per_core: dict[str, list[Operation]] = {"aic": [], "aiv": []}
            for op in self.kernel.body.block.ops:
                if op in self.init_ops and op not in self.inlined and op not in self.dead:
                    if self.split and isinstance(op, buffer.AllocQueueOp | buffer.AllocBufOp):
                        per_core[self._alloc_core(op)].append(op)
                    else:
                        self.statement(op)
            # each core gives memory only to its own buffers (the AIV has no L1/L0)
            for core, allocs in per_core.items():
                if allocs:
                    with self.w.block(f"if {self._core_test(core)}"):
                        for alloc in allocs:
                            self.statement(alloc)

    @staticmethod
    def _alloc_core(op: buffer.AllocQueueOp | buffer.AllocBufOp) -> str:
        position = op.position if isinstance(op, buffer.AllocQueueOp) else op.position.data
        return "aiv" if buffer.POSITIONS[position] == "ub" else "aic"

    def _core_test(self, core: str) -> str:
        return self.api.is_aic if core == "aic" else self.api.is_aiv

    def _stage_of(self, op: Operation) -> buffer.StageOp | None:
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, buffer.StageOp):
            parent = parent.parent_op()
        return parent

    def _emit_process(self) -> None:
        with self.w.function(f"{self.api.method_qualifiers} void Process()"):
            for op in self.kernel.body.block.ops:
                if op in self.init_ops or op in self.inlined or op in self.dead:
                    continue
                self.statement(op)

    def _emit_stage(self, stage: buffer.StageOp) -> None:
        info = self.stages[stage]
        params = []
        for v in info.params:
            t = self.cpp_type(v.type)
            ref = "&" if isinstance(v.type, MemRefType) else ""
            params.append(f"{t}{ref} {self.name(v)}")
        head = f"{self.api.method_qualifiers} void {info.name}({', '.join(params)})"
        with self.w.function(head):
            self.emit_block(stage.body.block)

    def _emit_entry(self, w: CppWriter) -> None:
        params = [f"{self.api.gm_addr} {p}" for p in self.gm_params]
        params += [f"{self.api.gm_addr} workspace", f"{self.api.gm_addr} tiling"]
        kernel_type = self.api.kernel_type(self.chip, self.kernel.core_type.data)
        with w.function(f"{self.api.entry_qualifiers} void {self.entry_name}({', '.join(params)})"):
            w.line(f"{self.api.kernel_type_macro}({kernel_type});")
            if self.api.has_get_tiling_data(self.chip):
                w.line(f"{self.api.get_tiling_data}(tilingData, tiling);")
                values = [f"tilingData.{f}" for f in self.fields]
            else:
                # GET_TILING_DATA does not exist on this chip (ascend.md 2.6): the int64
                # fields are read from GM by the scalar unit
                w.line(f"{self.api.global_tensor}<int64_t> tilingGm;")
                w.line(
                    f"tilingGm.{self.api.set_global_buffer}(({self.api.gm_qualifier} int64_t*)tiling);"
                )
                values = [f"tilingGm.{self.api.get_value}({i})" for i in range(len(self.fields))]
            ws = []
            if self.workspaces:
                # the CANN 8 guards around GetUserWorkspace (asc-devkit docs/zh/guide/
                # 算子实践参考/SIMD算子性能优化/头尾开销优化/核函数内删除Workspace相关冗余操作.md
                # quotes them; the 9.x projects pass the user workspace directly)
                with w.block("if (workspace == nullptr)"):
                    w.line("return;")
                w.line(f"{self.api.gm_addr} userWorkspace = {self.api.user_workspace}(workspace);")
                with w.block("if (userWorkspace == nullptr)"):
                    w.line("return;")
                ws = ["userWorkspace"]
            w.line(f"{self.class_name} op;")
            w.line(f"op.Init({', '.join([*self.gm_params, *ws, *values])});")
            w.line("op.Process();")

    # ---- statements --------------------------------------------------------------------------

    HANDLERS: ClassVar[dict[type[Operation], str]] = {
        buffer.AllocQueueOp: "emit_alloc_queue",
        buffer.AllocBufOp: "emit_alloc_buf",
        buffer.QueueAllocOp: "emit_queue_alloc",
        buffer.EnqueOp: "emit_enque",
        buffer.DequeOp: "emit_deque",
        buffer.QueueFreeOp: "emit_queue_free",
        buffer.StageOp: "emit_stage_call",
        buffer.CopyOp: "emit_copy",
        buffer.VBinaryOp: "emit_vbinary",
        buffer.VUnaryOp: "emit_vunary",
        buffer.VScalarOp: "emit_vscalar",
        buffer.VDupOp: "emit_vdup",
        buffer.VCastOp: "emit_vcast",
        buffer.VReduceOp: "emit_vreduce",
        buffer.VCompareOp: "emit_vcompare",
        buffer.VSelectOp: "emit_vselect",
        buffer.VGatherOp: "emit_vgather",
        buffer.GetValueOp: "emit_get_value",
        buffer.SetValueOp: "emit_set_value",
        buffer.MmadOp: "emit_mmad",
        buffer.PipeBarrierOp: "emit_pipe_barrier",
        buffer.ReturnOp: "emit_return",
        buffer.WorkspaceOp: "emit_return",
        buffer.Im2colOp: "emit_im2col",
        buffer.CrossCoreSetOp: "emit_cross_core",
        buffer.CrossCoreWaitOp: "emit_cross_core",
        buffer.SyncAllOp: "emit_sync_all",
    }

    def statement(self, op: Operation) -> None:
        self._emit_syncs(op)
        handler = self.HANDLERS.get(type(op))
        if handler is not None:
            getattr(self, handler)(op)
        else:
            try:
                super().statement(op)
            except UserError as e:
                if e.message.startswith(op.name):
                    raise UserError(
                        f"{_where(op)}: afc's Ascend C printer has no translation for this op", op
                    ) from e
                raise

    def line(self, op: Operation, text: str) -> None:
        self.w.line(text, self.comment(op))

    def _emit_syncs(self, op: Operation) -> None:
        """SetFlag/WaitFlag before `op` for the pipe pairs the plan needs (ascend.md 2.9);
        in a split mix kernel each core's own, on that core."""
        for core, plan in self.syncs.items():
            pairs = plan.get(op, [])
            if not pairs:
                continue
            if core is None or self._stage_of(op) is not None:
                self._emit_events(op, pairs)
            else:
                with self.w.block(f"if {self._core_test(core)}", self.comment(op)):
                    self._emit_events(op, pairs)

    def _emit_events(self, op: Operation, pairs: list[tuple[str, str]]) -> None:
        for src, dst in pairs:
            if (src, dst) not in self.api.hard_events:
                self.line(op, f"{self.api.pipe_barrier_all}();")
                continue
            event = f"{self.api.hard_event}::{src}_{dst}"
            var = self.namer.fresh(f"eventId{src.capitalize()}To{dst.capitalize()}")
            self.line(
                op,
                f"{self.api.event_type} {var} = static_cast<{self.api.event_type}>"
                f"(pipe.{self.api.fetch_event_id}({event}));",
            )
            self.line(op, f"{self.api.set_flag}<{event}>({var});")
            self.line(op, f"{self.api.wait_flag}<{event}>({var});")

    def emit_mmad(self, op: buffer.MmadOp) -> None:
        self.cube.mmad(op)

    def emit_pipe_barrier(self, op: buffer.PipeBarrierOp) -> None:
        self.cube.pipe_barrier(op)

    def emit_return(self, op: Operation) -> None:
        pass  # the end of Process; a workspace's GlobalTensor is set in Init

    def emit_cross_core(self, op: buffer.CrossCoreSetOp | buffer.CrossCoreWaitOp) -> None:
        """CrossCoreSetFlag<2, PIPE_X>(id) / CrossCoreWaitFlag(id) (ascend.md 2.9), on the
        core the op names (a section of its own outside that core's stages)."""
        flag = op.flag.value.data
        if isinstance(op, buffer.CrossCoreSetOp):
            pipe = self.api.pipe_enum.format(op.pipe.data.upper())
            text = f"{self.api.cross_core_set}<{self.api.cross_core_mode}, {pipe}>({flag});"
        else:
            text = f"{self.api.cross_core_wait}({flag});"
        if self._stage_of(op) is not None:
            self.line(op, text)
            return
        with self.w.block(f"if {self._core_test(op.core.data)}", self.comment(op)):
            self.line(op, text)

    def emit_sync_all(self, op: buffer.SyncAllOp) -> None:
        """SyncAll<false>() on every core of the mix kernel (asc-devkit SyncAll.md)."""
        self.line(op, f"{self.api.sync_all}();")

    def emit_im2col(self, op: Operation) -> None:
        """buffer.im2col (an im2col of an NCHW map in L1 into L0A/L0B) has no Ascend C
        form; no template emits it (the conv template gathers X_col with the vector
        unit: into a GM workspace on split chips, in UB and then L1 on coupled ones)."""
        raise UserError(
            f"{_where(op)}: LoadData3DV2 expands an NC1HWC0 feature map with taps ordered "
            "(c1, kh, kw, c0) into a pixel-major matrix; this im2col of an NCHW map with "
            "(c, kh, kw) taps as the [taps x pixels] right operand has no LoadData3DV2 form "
            "(the conv template gathers X_col with the vector unit instead)",
            op,
        )

    def emit_alloc_queue(self, op: buffer.AllocQueueOp) -> None:
        self.line(
            op,
            f"pipe.{self.api.init_buffer}({self.e(op.queue)}, {op.buffers.value.data}, "
            f"{self.e(op.bytes)});",
        )

    def emit_alloc_buf(self, op: buffer.AllocBufOp) -> None:
        name = self.e(op.buffer)
        elt = self._ctype(memref_element(op.buffer))
        self.line(op, f"pipe.{self.api.init_buffer}({name}Buf, {self.e(op.bytes)});")
        self.line(op, f"{name} = {name}Buf.{self.api.tbuf_get}<{elt}>();")

    def emit_queue_alloc(self, op: buffer.QueueAllocOp) -> None:
        t = self.cpp_type(op.tensor.type)
        elt = self._ctype(memref_element(op.tensor))
        name = self.name(op.tensor, "slot")
        self.line(op, f"{t} {name} = {self.e(op.queue)}.{self.api.alloc_tensor}<{elt}>();")

    def emit_enque(self, op: buffer.EnqueOp) -> None:
        self.line(op, f"{self.e(op.queue)}.{self.api.enque}({self.e(op.tensor)});")

    def emit_deque(self, op: buffer.DequeOp) -> None:
        t = self.cpp_type(op.tensor.type)
        elt = self._ctype(memref_element(op.tensor))
        name = self.name(op.tensor, "slot")
        self.line(op, f"{t} {name} = {self.e(op.queue)}.{self.api.deque}<{elt}>();")

    def emit_queue_free(self, op: buffer.QueueFreeOp) -> None:
        self.line(op, f"{self.e(op.queue)}.{self.api.free_tensor}({self.e(op.tensor)});")

    def emit_stage_call(self, op: buffer.StageOp) -> None:
        info = self.stages[op]
        args = ", ".join(self.e(v) for v in info.params)
        if not self.split:
            self.line(op, f"{info.name}({args});")
            return
        with self.w.block(f"if {self._core_test(op.core)}", self.comment(op)):
            self.line(op, f"{info.name}({args});")

    # ---- vector ----------------------------------------------------------------------------

    def _scalar_arg(self, scalar: SSAValue, element: Attribute) -> str:
        """A scalar operand in the tensor's element type (the API's `const T&`)."""
        t = self._ctype(element)
        value = self.expr(scalar)
        if self.cpp_type(scalar.type) == t:
            return value.text
        return f"static_cast<{t}>({value.text})"

    def emit_vbinary(self, op: buffer.VBinaryOp) -> None:
        name = self.api.vector_binary[op.kind.data]
        args = ", ".join(self.e(v) for v in (op.dst, op.lhs, op.rhs, op.count))
        self.line(op, f"{name}({args});")

    def emit_vunary(self, op: buffer.VUnaryOp) -> None:
        name = self.api.vector_unary[op.kind.data]
        self.line(op, f"{name}({self.e(op.dst)}, {self.e(op.src)}, {self.e(op.count)});")

    def emit_vscalar(self, op: buffer.VScalarOp) -> None:
        name = self.api.vector_scalar[op.kind.data]
        scalar = self._scalar_arg(op.scalar, memref_element(op.dst))
        self.line(op, f"{name}({self.e(op.dst)}, {self.e(op.src)}, {scalar}, {self.e(op.count)});")

    def emit_vdup(self, op: buffer.VDupOp) -> None:
        scalar = self._scalar_arg(op.scalar, memref_element(op.dst))
        self.line(op, f"{self.api.duplicate}({self.e(op.dst)}, {scalar}, {self.e(op.count)});")

    def emit_vcast(self, op: buffer.VCastOp) -> None:
        src, dst = (
            dtypes.type_name(memref_element(op.src)),
            dtypes.type_name(memref_element(op.dst)),
        )
        mode = op.round.data
        assert mode in CAST_PAIRS[(src, dst)], "the verifier checks the Cast pair"
        self.line(
            op,
            f"{self.api.cast}({self.e(op.dst)}, {self.e(op.src)}, "
            f"{self.api.round_modes[mode]}, {self.e(op.count)});",
        )

    def emit_vreduce(self, op: buffer.VReduceOp) -> None:
        name = self.api.reduce[op.kind.data]
        args = ", ".join(self.e(v) for v in (op.dst, op.src, op.tmp, op.count))
        extra = ", false" if op.kind.data != "sum" else ""
        self.line(op, f"{name}({args}{extra});")

    def emit_vcompare(self, op: buffer.VCompareOp) -> None:
        args = ", ".join(self.e(v) for v in (op.dst, op.lhs, op.rhs))
        self.line(
            op,
            f"{self.api.compare}({args}, {self.api.compare_modes[op.kind.data]}, "
            f"{self.e(op.count)});",
        )

    def emit_vselect(self, op: buffer.VSelectOp) -> None:
        args = ", ".join(self.e(v) for v in (op.dst, op.mask, op.lhs, op.rhs))
        self.line(
            op,
            f"{self.api.select}({args}, {self.api.select_tensor_mode}, {self.e(op.count)});",
        )

    def emit_vgather(self, op: buffer.VGatherOp) -> None:
        """Gather(dst, src, offsets, 0, count): the IR's i32 byte offsets are Ascend C's
        `LocalTensor<uint32_t>` (asc-devkit Gather.md), the same bits."""
        offsets = f"{self.expr(op.offsets).at(100)}.{self.api.reinterpret_cast}<uint32_t>()"
        self.line(
            op,
            f"{self.api.gather}({self.e(op.dst)}, {self.e(op.src)}, {offsets}, 0, "
            f"{self.e(op.count)});",
        )

    def emit_get_value(self, op: buffer.GetValueOp) -> None:
        if not self.live_uses(op.result):
            return
        t = self.cpp_type(op.result.type)
        name = self.name(op.result)
        self.line(op, f"{t} {name} = {self.e(op.source)}.{self.api.get_value}({self.e(op.index)});")

    def emit_set_value(self, op: buffer.SetValueOp) -> None:
        value = self._scalar_arg(op.value, memref_element(op.dest))
        self.line(op, f"{self.e(op.dest)}.{self.api.set_value}({self.e(op.index)}, {value});")

    # ---- data movement -----------------------------------------------------------------------

    def emit_copy(self, op: buffer.CopyOp) -> None:
        if op.atomic is None:
            self._emit_copy(op)
            return
        # SetAtomicAdd<T> for this copy only: the GM values add up (asc-devkit SetAtomicAdd.md)
        t = self._ctype(memref_element(op.dest))
        self.line(op, f"{self.api.set_atomic_add}<{t}>();")
        self._emit_copy(op)
        self.line(op, f"{self.api.set_atomic_none}();")

    def _emit_copy(self, op: buffer.CopyOp) -> None:
        path = op.path
        if path in (("gm", "ub"), ("ub", "gm")):
            self._copy_gm_ub(op)
        elif path == ("ub", "ub"):
            if layout_key(root_of(op.source)) in self.co2_keys:
                self.cube.nz_to_nd(op)
            else:
                self._copy_ub_ub(op)
        elif path == ("ub", "l1") and self.chip.l0c_to_ub:
            self.cube.copy_strips(op)
        elif path in (("gm", "l1"), ("ub", "l1")):
            self.cube.copy_nd2nz(op)
        elif path == ("l0c", "ub"):
            self.cube.co1_to_co2(op)
        elif path in (("l1", "l0a"), ("l1", "l0b")):
            self.cube.load_data(op)
        else:
            assert path == ("l0c", "gm"), f"the verifier admits no copy {path}"
            self.cube.fixpipe(op)

    def _aligned(self, value: SSAValue, width: int) -> bool:
        """Whether `value` elements of `width` bytes are a provable multiple of 32 bytes."""
        return self.facts.multiple_of(value, 32 // math.gcd(width, 32))

    def _copy_gm_ub(self, op: buffer.CopyOp) -> None:
        """GM <-> UB: DataCopy for 32-byte multiples, DataCopyPad otherwise (ascend.md 2.7)."""
        w = memref_width(op.dest)
        to_ub = op.path == ("gm", "ub")
        gm_stride, ub_stride = (
            (op.src_stride, op.dst_stride) if to_ub else (op.dst_stride, op.src_stride)
        )
        one = self.facts.exact(op.blocks) == 1
        length_ok = self._aligned(op.length, w)
        ub_ok = one or self._aligned(ub_stride, w)
        gm_ok = one or self._aligned(gm_stride, w)
        dst, src, n = self.e(op.dest), self.e(op.source), self.e(op.length)
        if length_ok and one:
            self.line(op, f"{self.api.data_copy}({dst}, {src}, {n});")
        elif length_ok and ub_ok and gm_ok:
            self._copy_params(op, w)
        elif self.chip.data_copy_pad:
            pad = f"{self.api.pad_ext_params}<{self._ctype(memref_element(op.dest))}>{{false, 0, 0, 0}}"
            tail = f", {pad});" if to_ub else ");"
            length = static_cast_text(self._scaled(op.length, w), "uint32_t")
            if ub_ok:
                params = self.namer.fresh("copyParams")
                blocks = "1" if one else static_cast_text(self.e(op.blocks), "uint16_t")
                gm_gap = (
                    "0"
                    if one
                    else static_cast_text(self._gap(gm_stride, op.length, w, 1), "uint32_t")
                )
                ub_gap = (
                    "0"
                    if one
                    else static_cast_text(self._ub_pad_gap(ub_stride, op.length, w), "uint32_t")
                )
                src_gap, dst_gap = (gm_gap, ub_gap) if to_ub else (ub_gap, gm_gap)
                self.line(
                    op,
                    f"{self.api.copy_ext_params} {params}{{{blocks}, {length}, {src_gap}, "
                    f"{dst_gap}, 0}};",
                )
                self.line(op, f"{self.api.data_copy_pad}({dst}, {src}, {params}{tail}")
            else:
                ext = f"{self.api.copy_ext_params}{{1, {length}, 0, 0, 0}}"
                self._per_block(op, lambda d, s: f"{self.api.data_copy_pad}({d}, {s}, {ext}{tail}")
        elif one:
            # no DataCopyPad on this chip (ascend.md 2.7): the length must be a 32-byte
            # multiple at run time, or DataCopy truncates it
            self.line(op, f"{self.api.data_copy}({dst}, {src}, {n});")
        else:
            self._per_block(op, lambda d, s: f"{self.api.data_copy}({d}, {s}, {n});")

    def _copy_params(self, op: buffer.CopyOp, w: int) -> None:
        """The strided DataCopy: blocks of 32-byte units, gaps in 32-byte units."""
        params = self.namer.fresh("copyParams")
        fields = [
            static_cast_text(self.e(op.blocks), "uint16_t"),
            static_cast_text(self._scaled(op.length, w, 32), "uint16_t"),
            static_cast_text(self._gap(op.src_stride, op.length, w, 32), "uint16_t"),
            static_cast_text(self._gap(op.dst_stride, op.length, w, 32), "uint16_t"),
        ]
        self.line(op, f"{self.api.copy_params} {params}{{{', '.join(fields)}}};")
        self.line(op, f"{self.api.data_copy}({self.e(op.dest)}, {self.e(op.source)}, {params});")

    def _scaled(self, value: SSAValue, width: int, unit: int = 1) -> str:
        """`value` elements of `width` bytes in `unit`-byte units, folded when static."""
        exact = self.facts.exact(value)
        if exact is not None:
            return str(exact * width // unit)
        text = f"{self.expr(value).at(80)} * {width}"
        return text if unit == 1 else f"{text} / {unit}"

    def _gap(self, stride: SSAValue, length: SSAValue, width: int, unit: int) -> str:
        """(stride - length) elements in `unit`-byte units."""
        s, n = self.facts.exact(stride), self.facts.exact(length)
        if s is not None and n is not None:
            return str((s - n) * width // unit)
        diff = f"({self.expr(stride).at(71)} - {self.expr(length).at(71)}) * {width}"
        return diff if unit == 1 else f"{diff} / {unit}"

    def _ub_pad_gap(self, stride: SSAValue, length: SSAValue, width: int) -> str:
        """The UB gap after a 32-byte padded block, in 32-byte blocks (ascend.md 2.7)."""
        s, n = self.facts.exact(stride), self.facts.exact(length)
        if s is not None and n is not None:
            return str((s * width - -(-n * width // 32) * 32) // 32)
        st, ln = self.expr(stride).at(80), self.expr(length).at(80)
        return f"({st} * {width} - ({ln} * {width} + 31) / 32 * 32) / 32"

    def _per_block(self, op: buffer.CopyOp, call: Callable[[str, str], str]) -> None:
        """One copy per block: `for (i < blocks) call(dest[i * dst_stride], source[...])`."""
        i = self.namer.fresh("i")
        dst = f"{self.expr(op.dest).at(100)}[{i} * {self.expr(op.dst_stride).at(81)}]"
        src = f"{self.expr(op.source).at(100)}[{i} * {self.expr(op.src_stride).at(81)}]"
        blocks = self.expr(op.blocks)
        with self.w.block(
            f"for (int64_t {i} = 0; {i} < {blocks.at(REL + 1)}; ++{i})", self.comment(op)
        ):
            self.line(op, call(dst, src))

    def _copy_ub_ub(self, op: buffer.CopyOp) -> None:
        """UB -> UB: DataCopy on 32-byte multiples, else an exact vector copy (x * 1)."""
        w = memref_width(op.dest)
        one = self.facts.exact(op.blocks) == 1
        n = self.e(op.length)
        strides_ok = one or (self._aligned(op.src_stride, w) and self._aligned(op.dst_stride, w))
        if self._aligned(op.length, w) and strides_ok:
            if one:
                self.line(op, f"{self.api.data_copy}({self.e(op.dest)}, {self.e(op.source)}, {n});")
            else:
                self._copy_params(op, w)
            return
        muls = self.api.vector_scalar["muls"]
        assert dtypes.type_name(memref_element(op.dest)) in VECTOR_TYPES[muls], (
            "fractal_rules.ub_to_ub"
        )
        unit = (
            float_literal(1.0, memref_element(op.dest)).text
            if dtypes.is_float(memref_element(op.dest))
            else f"static_cast<{self._ctype(memref_element(op.dest))}>(1)"
        )
        if one:
            self.line(op, f"{muls}({self.e(op.dest)}, {self.e(op.source)}, {unit}, {n});")
        else:
            self._per_block(op, lambda d, s: f"{muls}({d}, {s}, {unit}, {n});")


__all__ = ["KernelPrinter", "kernels_of"]
