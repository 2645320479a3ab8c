"""The ops, types and tables of the `buffer` dialect (buffer.py declares the dialect and
describes it, and adds `buffer.kernel`'s whole-kernel verifier). The verifier's rules
(buffer_verifier.py, mmad_rules.py, ascendc_rules.py) import from here, so they form no
import cycle with the dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

SPACES = ("gm", "ub", "l1", "l0a", "l0b", "l0c")

# Ascend C TPosition of each queue/buffer, and the memory space it lives in
# (asc-devkit docs TPosition.md; ascend.md 1.7)
POSITIONS: dict[str, str] = {
    "vecin": "ub",
    "vecout": "ub",
    "veccalc": "ub",
    "a1": "l1",
    "b1": "l1",
    "a2": "l0a",
    "b2": "l0b",
    "co1": "l0c",
}

# Data paths (ascend.md 1.6, asc-devkit 数据通路.md); l0c->ub and ub->l1 exist only on
# coupled chips (on split chips the AIV's UB and the AIC's L1/L0C meet only in GM)
COPY_PATHS = {
    ("gm", "ub"),
    ("ub", "gm"),
    ("gm", "l1"),
    ("ub", "l1"),
    ("l1", "l0a"),
    ("l1", "l0b"),
    ("l0c", "gm"),
    ("l0c", "ub"),
    ("ub", "ub"),
}
CHIP_DEPENDENT_PATHS = {("l0c", "ub"), ("ub", "l1")}
# atomic-add copies (SetAtomicAdd; asc-devkit SetAtomicAdd.md): the paths and element
# types of Atlas A2/A3; per chip architecture what the others have (the kernel
# verifier checks them): the inference series AI Core (2002) and the training series
# (1001) add only from UB (VECOUT -> GM)
ATOMIC_PATHS = {("ub", "gm"), ("l0c", "gm")}
ATOMIC_ADD_TYPES = ("f32", "f16", "bf16", "i32", "i16", "i8")
ATOMIC_ADD_BY_ARCH: dict[int, tuple[set[tuple[str, str]], tuple[str, ...]]] = {
    1001: ({("ub", "gm")}, ("f32",)),
    2002: ({("ub", "gm")}, ("f32", "f16", "i16")),
}


def atomic_type_name(element_type: Attribute) -> str:
    """The name the atomic-add rules use for an element type: afc's short name (`f32`,
    `bf16`, ...), else its MLIR spelling (int16_t has an atomic add but no afc dtype)."""
    from autofusion import dtypes

    if dtypes.is_supported(element_type):
        return dtypes.type_name(element_type)
    return str(element_type)


# Ascend C limits: at most 8 TQue buffers per position on A2/A3/310P (4 on 910), at most
# 64 buffers per TPipe (asc-devkit TQue简介.md, InitBuffer.md)
MAX_BUFFERS_PER_PIPE = 64


@irdl_attr_definition
class SpaceAttr(ParametrizedAttribute):
    """A memory space: `#buffer.space<ub>`."""

    name = "buffer.space"
    space: StringAttr

    def __init__(self, space: str) -> None:
        super().__init__(StringAttr(space))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            name = parser.parse_identifier()
            if name not in SPACES:
                parser.raise_error(
                    f"unknown memory space '{name}' (expected {', '.join(SPACES)})", pos
                )
        return (StringAttr(name),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.space.data}>")


@irdl_attr_definition
class QueueType(ParametrizedAttribute, TypeAttribute):
    """A TQue at a TPosition: `!buffer.queue<vecin>`."""

    name = "buffer.queue"
    position: StringAttr

    def __init__(self, position: str) -> None:
        super().__init__(StringAttr(position))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            name = parser.parse_identifier()
            if name not in POSITIONS:
                parser.raise_error(f"unknown queue position '{name}'", pos)
        return (StringAttr(name),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.position.data}>")


def memref(element_type: Attribute, space: str) -> MemRefType:
    """A flat dynamic-size memref in `space`: memref<?xf32, #buffer.space<ub>>."""
    from xdsl.dialects.builtin import DYNAMIC_INDEX

    return MemRefType(element_type, [DYNAMIC_INDEX], memory_space=SpaceAttr(space))


def space_of(t: Attribute) -> str:
    if isinstance(t, MemRefType) and isinstance(t.memory_space, SpaceAttr):
        return t.memory_space.space.data
    raise VerifyException(f"expected a memref in a #buffer.space, got {t}")


# --------------------------------------------------------------------------------------
# Kernel structure
# --------------------------------------------------------------------------------------


# a buffer.kernel attribute: the GM inputs (indices) read past the L2 cache
# (GlobalTensor::SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE); lowering/l2_hint.py)
L2_BYPASS_ATTR = "l2_bypass"


class KernelOpBase(IRDLOperation):
    """The definition of `buffer.kernel` (buffer.KernelOp adds its whole-kernel verifier,
    so that the rules in buffer_verifier.py can import the ops without a cycle).

    One Ascend kernel: GM memrefs (inputs, then outputs) and index tiling scalars.

    buffer.kernel @k(%x: memref<?xf16, #buffer.space<gm>>, ..., %rows: index)
        attributes {chip = "Ascend910B1", template = "rows", core_type = "aiv"} {
      ...
      buffer.return
    }

    Optional `l2_bypass = [i, ...]` (`L2_BYPASS_ATTR`): GM inputs whose reads bypass L2
    (ascending indices; only on chips with the L2 cache hint). It changes no values.
    """

    name = "buffer.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    chip = prop_def(StringAttr)
    template = prop_def(StringAttr)
    core_type = prop_def(StringAttr)
    num_inputs = prop_def(IntegerAttr[I64])
    num_outputs = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (IsolatedFromAbove(), SymbolOpInterface()))

    CORE_TYPES: ClassVar[tuple[str, ...]] = ("aiv", "aic", "mix")

    def __init__(
        self,
        name: str,
        arg_types: Sequence[Attribute],
        body: Region,
        chip: str,
        template: str,
        core_type: str,
        num_inputs: int,
        num_outputs: int,
        attributes: Mapping[str, Attribute] | None = None,
    ) -> None:
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(list(arg_types), []),
                "chip": StringAttr(chip),
                "template": StringAttr(template),
                "core_type": StringAttr(core_type),
                "num_inputs": IntegerAttr(num_inputs, i64),
                "num_outputs": IntegerAttr(num_outputs, i64),
            },
            regions=[body],
            attributes=dict(attributes or {}),
        )

    @property
    def gm_args(self) -> tuple[SSAValue, ...]:
        n = self.num_inputs.value.data + self.num_outputs.value.data
        return tuple(self.body.block.args[:n])

    @property
    def tiling_args(self) -> tuple[SSAValue, ...]:
        n = self.num_inputs.value.data + self.num_outputs.value.data
        return tuple(self.body.block.args[n:])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(")")
        props = {
            "chip": self.chip,
            "template": self.template,
            "core_type": self.core_type,
            "num_inputs": self.num_inputs,
            "num_outputs": self.num_outputs,
        }
        printer.print_string(" attributes ")
        printer.print_attr_dict({**props, **self.attributes})
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOpBase:
        name = parser.parse_symbol_name().data
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        entries = dict(attrs.data) if attrs is not None else {}
        body = parser.parse_region(args)
        missing = [
            k
            for k in ("chip", "template", "core_type", "num_inputs", "num_outputs")
            if k not in entries
        ]
        if missing:
            parser.raise_error(f"buffer.kernel needs attributes {', '.join(missing)}")

        def text(key: str) -> str:
            v = entries.pop(key)
            if not isinstance(v, StringAttr):
                parser.raise_error(f"buffer.kernel attribute {key} must be a string")
            return v.data

        def number(key: str) -> int:
            v = entries.pop(key)
            if not isinstance(v, IntegerAttr):
                parser.raise_error(f"buffer.kernel attribute {key} must be an integer")
            return v.value.data

        chip, template, core = text("chip"), text("template"), text("core_type")
        n_in, n_out = number("num_inputs"), number("num_outputs")
        return cls(name, [a.type for a in args], body, chip, template, core, n_in, n_out, entries)


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Ends a kernel body."""

    name = "buffer.return"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(KernelOpBase)))
    assembly_format = "attr-dict"


@irdl_op_definition
class StageOp(IRDLOperation):
    """A step of the tile pipeline: copy_in, compute or copy_out (one method in Ascend C),
    or `cube`: the cube-core part of a tile (GM->L1, L1->L0A/L0B, Mmad, Fixpipe).

    In a `mix` kernel on a split chip (2201) a `cube` stage runs on the AIC and the other
    stages on each AIV of the block; code outside stages (scalar code, loops, buffer
    allocations) runs on every core, and every op that touches an on-chip buffer is
    inside a stage of the core that owns the buffer (L1/L0 the AIC, UB the AIVs). The
    cores share only GM: what one core writes there another reads after a
    `buffer.cross_core_set` / `buffer.cross_core_wait` pair. On coupled chips all stages
    run on one core, in order.
    """

    name = "buffer.stage"
    stage = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$stage attr-dict-with-keyword $body"

    STAGES: ClassVar[tuple[str, ...]] = ("copy_in", "compute", "copy_out", "cube")

    def __init__(self, stage: str, body: Region) -> None:
        super().__init__(properties={"stage": StringAttr(stage)}, regions=[body])

    @property
    def core(self) -> str:
        """The core that runs the stage in a mix kernel on a split chip."""
        return "aic" if self.stage.data == "cube" else "aiv"

    def verify_(self) -> None:
        if self.stage.data not in self.STAGES:
            raise VerifyException(f"stage must be one of {self.STAGES}, got {self.stage.data!r}")


class CoreIndexOp(IRDLOperation):
    """An index of the running core, taking no operands."""

    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class BlockIdxOp(CoreIndexOp):
    """This core's block index (GetBlockIdx). In a mix kernel on a split chip the AIC
    and the AIVs of a block share it (GetBlockIdx() / GetTaskRation() there)."""

    name = "buffer.block_idx"


@irdl_op_definition
class BlockNumOp(CoreIndexOp):
    """The number of blocks (cores) the kernel runs on (GetBlockNum)."""

    name = "buffer.block_num"


@irdl_op_definition
class SubBlockIdxOp(CoreIndexOp):
    """This vector core's index in its cube core's group (GetSubBlockIdx).

    A `mix` kernel on a split chip (2201) runs every block on one AIC and its AIVs (two
    on 910B, KERNEL_TYPE_MIX_AIC_1_2; ascend.md 1.1, 2.3); the AIVs of a block see the
    same `buffer.block_idx` and tell themselves apart by this index, e.g. to share a
    tile's epilogue rows. It is 0 on the AIC and in every other kernel.
    """

    name = "buffer.sub_block_idx"


# the cores of a mix kernel on a split chip, and the pipes a cross-core flag can wait for
CORES = ("aic", "aiv")
FLAG_PIPES = ("s", "v", "m", "mte1", "mte2", "mte3", "fix")
MAX_CROSS_CORE_FLAG = 10


class CrossCoreOp(IRDLOperation):
    """A cross-core flag between the AIC and the AIVs of one block (mode 2)."""

    flag = prop_def(IntegerAttr[I64])
    core = prop_def(StringAttr)

    def verify_(self) -> None:
        if not 0 <= self.flag.value.data <= MAX_CROSS_CORE_FLAG:
            raise VerifyException(
                f"cross-core flag ids are 0..{MAX_CROSS_CORE_FLAG}, got {self.flag.value.data}"
            )
        if self.core.data not in CORES:
            raise VerifyException(f"core must be one of {CORES}, got {self.core.data!r}")
        stage = self.parent_op()
        while stage is not None and not isinstance(stage, StageOp):
            stage = stage.parent_op()
        if stage is not None and stage.core != self.core.data:
            raise VerifyException(
                f"{self.name} on the {self.core.data} inside a {stage.stage.data!r} stage, "
                f"which runs on the {stage.core}"
            )


@irdl_op_definition
class CrossCoreSetOp(CrossCoreOp):
    """Signal flag `flag` to the other side of the block once the set core's `pipe` has
    finished what it was given (CrossCoreSetFlag<2, PIPE_X>, ascend.md 2.9).

    From the AIC it counts once for every AIV of the block; from the AIVs it counts for
    the AIC once every AIV has set it. A counter holds at most 15 sets.

        buffer.cross_core_set 0 from "aic" after "fix"
    """

    name = "buffer.cross_core_set"
    pipe = prop_def(StringAttr)
    assembly_format = "$flag `from` $core `after` $pipe attr-dict"

    def __init__(self, flag: int, core: str, pipe: str) -> None:
        super().__init__(
            properties={
                "flag": IntegerAttr(flag, i64),
                "core": StringAttr(core),
                "pipe": StringAttr(pipe),
            }
        )

    def verify_(self) -> None:
        super().verify_()
        if self.pipe.data not in FLAG_PIPES:
            raise VerifyException(f"pipe must be one of {FLAG_PIPES}, got {self.pipe.data!r}")


@irdl_op_definition
class CrossCoreWaitOp(CrossCoreOp):
    """Block core `core` until the other side has set `flag`, and consume the set
    (CrossCoreWaitFlag, ascend.md 2.9). A wait no set matches never returns: the
    interpreter and the emulator report it.

        buffer.cross_core_wait 0 on "aiv"
    """

    name = "buffer.cross_core_wait"
    assembly_format = "$flag `on` $core attr-dict"

    def __init__(self, flag: int, core: str) -> None:
        super().__init__(properties={"flag": IntegerAttr(flag, i64), "core": StringAttr(core)})


@irdl_op_definition
class SyncAllOp(IRDLOperation):
    """Wait until every core of the launch has reached this point, with everything each
    issued before it done (SyncAll, the hard all-core sync; asc-devkit SyncAll.md: Atlas
    A2/A3; in a mix kernel `SyncAll<false>()`: the AIVs and the AICs, then each other).
    The c220 implementation drains every pipe first (pipe_barrier(PIPE_ALL)), so GM
    written before the sync by any core is what every core reads after it.

    It runs on every core (never inside a stage) and only in mix kernels on split
    chips. The launch may use at most as many blocks as the chip has cube cores: a core
    that is not running cannot arrive, and the others would wait forever (the doc's
    constraint on blockDim); the interpreter and the emulator report both.

        buffer.sync_all
    """

    name = "buffer.sync_all"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()

    def verify_(self) -> None:
        parent = self.parent_op()
        while parent is not None and not isinstance(parent, KernelOpBase):
            if isinstance(parent, StageOp):
                raise VerifyException(
                    "buffer.sync_all runs on every core: it cannot be inside a stage"
                )
            parent = parent.parent_op()
        if parent is None:
            raise VerifyException("buffer.sync_all must be inside a buffer.kernel")


# --------------------------------------------------------------------------------------
# Buffers and queues
# --------------------------------------------------------------------------------------


@irdl_op_definition
class AllocQueueOp(IRDLOperation):
    """A TQue at `position` with `buffers` slots of `bytes` each (TPipe::InitBuffer).

    `max_bytes` bounds `bytes` statically (the capacity check uses it); `buffers` = 2 is
    double buffering.
    """

    name = "buffer.alloc_queue"
    bytes = operand_def(IndexType)
    queue = result_def(QueueType)
    buffers = prop_def(IntegerAttr[I64])
    max_bytes = prop_def(IntegerAttr[I64])
    element_type = prop_def(TypeAttribute)
    assembly_format = (
        "$bytes `buffers` $buffers `max_bytes` $max_bytes `of` $element_type attr-dict "
        "`:` type($queue)"
    )

    def __init__(
        self, position: str, buffers: int, nbytes: SSAValue, max_bytes: int, element_type: Attribute
    ) -> None:
        super().__init__(
            operands=[nbytes],
            result_types=[QueueType(position)],
            properties={
                "buffers": IntegerAttr(buffers, i64),
                "max_bytes": IntegerAttr(max_bytes, i64),
                "element_type": element_type,
            },
        )

    @property
    def position(self) -> str:
        return self.queue.type.position.data

    def verify_(self) -> None:
        if self.buffers.value.data < 1:
            raise VerifyException("a queue needs at least one buffer")
        if self.max_bytes.value.data < 1:
            raise VerifyException("max_bytes must be positive")


@irdl_op_definition
class AllocBufOp(IRDLOperation):
    """A scratch buffer (TBuf) at `position`, `bytes` long (bounded by `max_bytes`)."""

    name = "buffer.alloc_buf"
    bytes = operand_def(IndexType)
    buffer = result_def(MemRefType)
    position = prop_def(StringAttr)
    max_bytes = prop_def(IntegerAttr[I64])
    assembly_format = "$position $bytes `max_bytes` $max_bytes `->` type($buffer) attr-dict"

    def __init__(
        self, position: str, nbytes: SSAValue, max_bytes: int, element_type: Attribute
    ) -> None:
        super().__init__(
            operands=[nbytes],
            result_types=[memref(element_type, POSITIONS[position])],
            properties={"position": StringAttr(position), "max_bytes": IntegerAttr(max_bytes, i64)},
        )

    def verify_(self) -> None:
        pos = self.position.data
        if pos not in POSITIONS:
            raise VerifyException(f"unknown position '{pos}'")
        if space_of(self.buffer.type) != POSITIONS[pos]:
            raise VerifyException(f"a {pos} buffer lives in {POSITIONS[pos]}")


@irdl_op_definition
class QueueAllocOp(IRDLOperation):
    """Take a free slot of a queue (AllocTensor); waits for earlier readers of the slot."""

    name = "buffer.queue_alloc"
    queue = operand_def(QueueType)
    tensor = result_def(MemRefType)
    assembly_format = "$queue attr-dict `:` type($queue) `->` type($tensor)"

    def __init__(self, queue: SSAValue, element_type: Attribute) -> None:
        position = cast(QueueType, queue.type).position.data
        super().__init__(operands=[queue], result_types=[memref(element_type, POSITIONS[position])])


@irdl_op_definition
class EnqueOp(IRDLOperation):
    """Hand a written slot to the next stage (EnQue)."""

    name = "buffer.enque"
    queue = operand_def(QueueType)
    tensor = operand_def(MemRefType)
    assembly_format = "$queue `,` $tensor attr-dict `:` type($queue) `,` type($tensor)"

    def __init__(self, queue: SSAValue, tensor: SSAValue) -> None:
        super().__init__(operands=[queue, tensor])


@irdl_op_definition
class DequeOp(IRDLOperation):
    """Take the oldest enqueued slot (DeQue); waits until its writer is done."""

    name = "buffer.deque"
    queue = operand_def(QueueType)
    tensor = result_def(MemRefType)
    assembly_format = "$queue attr-dict `:` type($queue) `->` type($tensor)"

    def __init__(self, queue: SSAValue, element_type: Attribute) -> None:
        position = cast(QueueType, queue.type).position.data
        super().__init__(operands=[queue], result_types=[memref(element_type, POSITIONS[position])])


@irdl_op_definition
class QueueFreeOp(IRDLOperation):
    """Give a slot back to its queue (FreeTensor)."""

    name = "buffer.queue_free"
    queue = operand_def(QueueType)
    tensor = operand_def(MemRefType)
    assembly_format = "$queue `,` $tensor attr-dict `:` type($queue) `,` type($tensor)"

    def __init__(self, queue: SSAValue, tensor: SSAValue) -> None:
        super().__init__(operands=[queue, tensor])


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The view `base[offset:]` (LocalTensor/GlobalTensor operator[]), same space and type."""

    name = "buffer.view"
    base = operand_def(MemRefType)
    offset = operand_def(IndexType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())

    def __init__(self, base: SSAValue, offset: SSAValue) -> None:
        super().__init__(operands=[base, offset], result_types=[base.type])

    @classmethod
    def parse(cls, parser: Parser) -> ViewOp:  # the result type is the base type
        base = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        offset = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        b, o = parser.resolve_operands([base, offset], [t, IndexType()], parser.pos)
        op = cls(b, o)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        printer.print_string("[")
        printer.print_operand(self.offset)
        printer.print_string("]")
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Copy `blocks` blocks of `length` elements from `source` to `dest`.

    Block i starts at source element i*src_stride and lands at dest element i*dst_stride
    (strides in elements). The path is the pair of memory spaces. GM->UB blocks whose
    byte length is not a multiple of 32 are padded to 32 bytes in UB (DataCopyPad); on
    chips without DataCopyPad every block must be 32-byte aligned (checked when the
    kernel runs). `relu` applies ReLU on the way (Fixpipe, l0c->gm only).

    Element types match except on l0c->gm, where Fixpipe converts the float32
    accumulator to f16/bf16 (quantPre F322F16/F322BF16, ascend.md 2.10), rounding to
    nearest even. `transpose` (LoadData with transpose, l1->l0a/l0b only; ascend.md 1.6,
    2.10) writes source block i, element j to dest element j*dst_stride + i: the blocks
    become the destination's columns, so a row-major [rows x cols] block lands as the
    row-major [cols x rows] matrix (a transposed GEMM operand, K^T in attention).

    `atomic` (ub->gm and l0c->gm) adds the copied values to what GM holds instead of
    overwriting it, in the destination's element type: `SetAtomicAdd<T>()` before the
    DataCopy/Fixpipe and `SetAtomicNone()` after (asc-devkit SetAtomicAdd.md: Atlas A2/A3
    add int8_t/int16_t/half/bfloat16_t/int32_t/float from UB, L0C and L1; the inference
    series AI Core int16_t/half/float from UB; the training series float from UB;
    ATOMIC_ADD_TYPES, checked per chip by the kernel verifier). Cores may add to the same
    bytes in any order; the interpreter adds in the order the cores run.
    """

    name = "buffer.copy"
    source = operand_def(MemRefType)
    dest = operand_def(MemRefType)
    blocks = operand_def(IndexType)
    length = operand_def(IndexType)
    src_stride = operand_def(IndexType)
    dst_stride = operand_def(IndexType)
    relu = opt_prop_def(BoolAttr)
    transpose = opt_prop_def(BoolAttr)
    atomic = opt_prop_def(BoolAttr)
    assembly_format = (
        "$source `to` $dest `blocks` $blocks `x` $length `strides` $src_stride `,` $dst_stride "
        "(`relu` $relu^)? (`transpose` $transpose^)? (`atomic` $atomic^)? attr-dict `:` "
        "type($source) `to` type($dest)"
    )

    def __init__(
        self,
        source: SSAValue,
        dest: SSAValue,
        blocks: SSAValue,
        length: SSAValue,
        src_stride: SSAValue,
        dst_stride: SSAValue,
        relu: bool = False,
        transpose: bool = False,
        atomic: bool = False,
    ) -> None:
        props: dict[str, Attribute] = {}
        if relu:
            props["relu"] = IntegerAttr(1, IntegerType(1))
        if transpose:
            props["transpose"] = IntegerAttr(1, IntegerType(1))
        if atomic:
            props["atomic"] = IntegerAttr(1, IntegerType(1))
        super().__init__(
            operands=[source, dest, blocks, length, src_stride, dst_stride], properties=props
        )

    @property
    def path(self) -> tuple[str, str]:
        return space_of(self.source.type), space_of(self.dest.type)

    def verify_(self) -> None:
        path = self.path
        if path not in COPY_PATHS:
            raise VerifyException(f"there is no data path {path[0]} -> {path[1]}")
        if self.relu is not None and path != ("l0c", "gm"):
            raise VerifyException("relu on the fly exists only on the l0c -> gm path (Fixpipe)")
        if self.transpose is not None and path not in (("l1", "l0a"), ("l1", "l0b")):
            raise VerifyException("transpose exists only on the l1 -> l0a/l0b paths (LoadData)")
        if self.atomic is not None:
            if path not in ATOMIC_PATHS:
                raise VerifyException("an atomic add copies ub -> gm or l0c -> gm only")
            name = atomic_type_name(cast(MemRefType, self.dest.type).element_type)
            if name not in ATOMIC_ADD_TYPES:
                raise VerifyException(
                    f"an atomic add of {name} does not exist (SetAtomicAdd takes "
                    f"{'/'.join(ATOMIC_ADD_TYPES)})"
                )
        src = cast(MemRefType, self.source.type).element_type
        dst = cast(MemRefType, self.dest.type).element_type
        if src != dst:
            from autofusion import dtypes

            names = (dtypes.type_name(src), dtypes.type_name(dst))
            if path != ("l0c", "gm") or names not in (("f32", "f16"), ("f32", "bf16")):
                raise VerifyException(
                    f"a copy converts {names[0]} to {names[1]} only on l0c -> gm from f32 to "
                    "f16/bf16 (Fixpipe)"
                )


# --------------------------------------------------------------------------------------
# Vector compute on UB
# --------------------------------------------------------------------------------------


class VectorOp(IRDLOperation):
    """A count-form vector instruction on UB views: dst[i] = f(src...[i]) for i < count."""

    def verify_(self) -> None:
        for i, operand in enumerate(self.operands):
            if isinstance(operand.type, MemRefType):
                space = space_of(operand.type)
                if space != "ub":
                    raise VerifyException(f"vector operand #{i} is in {space}, not ub")


@irdl_op_definition
class VBinaryOp(VectorOp):
    """dst = a <op> b elementwise (Add, Sub, Mul, Div, Max, Min)."""

    name = "buffer.vbinary"
    kind = prop_def(StringAttr)
    dst = operand_def(MemRefType)
    lhs = operand_def(MemRefType)
    rhs = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = "$kind $dst `,` $lhs `,` $rhs `,` $count attr-dict `:` type($dst) `,` type($lhs) `,` type($rhs)"
    KINDS: ClassVar[tuple[str, ...]] = ("add", "sub", "mul", "div", "max", "min")

    def __init__(
        self, kind: str, dst: SSAValue, lhs: SSAValue, rhs: SSAValue, count: SSAValue
    ) -> None:
        super().__init__(operands=[dst, lhs, rhs, count], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        super().verify_()
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"unknown binary vector op '{self.kind.data}'")


@irdl_op_definition
class VUnaryOp(VectorOp):
    """dst = f(src) elementwise (Exp, Ln, Sqrt, Rsqrt, Abs, Relu, Reciprocal, Neg=Muls -1)."""

    name = "buffer.vunary"
    kind = prop_def(StringAttr)
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = "$kind $dst `,` $src `,` $count attr-dict `:` type($dst) `,` type($src)"
    KINDS: ClassVar[tuple[str, ...]] = ("exp", "ln", "sqrt", "rsqrt", "abs", "relu", "reciprocal")

    def __init__(self, kind: str, dst: SSAValue, src: SSAValue, count: SSAValue) -> None:
        super().__init__(operands=[dst, src, count], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        super().verify_()
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"unknown unary vector op '{self.kind.data}'")


@irdl_op_definition
class VScalarOp(VectorOp):
    """dst = src <op> scalar elementwise (Adds, Muls, Maxs, Mins)."""

    name = "buffer.vscalar"
    kind = prop_def(StringAttr)
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    scalar = operand_def()
    count = operand_def(IndexType)
    assembly_format = "$kind $dst `,` $src `,` $scalar `,` $count attr-dict `:` type($dst) `,` type($src) `,` type($scalar)"
    KINDS: ClassVar[tuple[str, ...]] = ("adds", "muls", "maxs", "mins")

    def __init__(
        self, kind: str, dst: SSAValue, src: SSAValue, scalar: SSAValue, count: SSAValue
    ) -> None:
        super().__init__(operands=[dst, src, scalar, count], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        super().verify_()
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"unknown scalar vector op '{self.kind.data}'")


@irdl_op_definition
class VDupOp(VectorOp):
    """dst[i] = scalar for i < count (Duplicate)."""

    name = "buffer.vdup"
    dst = operand_def(MemRefType)
    scalar = operand_def()
    count = operand_def(IndexType)
    assembly_format = "$dst `,` $scalar `,` $count attr-dict `:` type($dst) `,` type($scalar)"

    def __init__(self, dst: SSAValue, scalar: SSAValue, count: SSAValue) -> None:
        super().__init__(operands=[dst, scalar, count])


@irdl_op_definition
class VCastOp(VectorOp):
    """dst = cast(src) (Cast with a RoundMode: rint to narrow, none to widen)."""

    name = "buffer.vcast"
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    count = operand_def(IndexType)
    round = prop_def(StringAttr)
    assembly_format = (
        "$dst `,` $src `,` $count `round` $round attr-dict `:` type($dst) `,` type($src)"
    )
    ROUNDS: ClassVar[tuple[str, ...]] = ("none", "rint", "trunc", "floor", "ceil", "round")

    def __init__(self, dst: SSAValue, src: SSAValue, count: SSAValue, round_mode: str) -> None:
        super().__init__(operands=[dst, src, count], properties={"round": StringAttr(round_mode)})

    def verify_(self) -> None:
        super().verify_()
        if self.round.data not in self.ROUNDS:
            raise VerifyException(f"unknown round mode '{self.round.data}'")


@irdl_op_definition
class VReduceOp(VectorOp):
    """dst[0] = reduce(src[0:count]) (ReduceSum / ReduceMax / ReduceMin), tmp is scratch."""

    name = "buffer.vreduce"
    kind = prop_def(StringAttr)
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    tmp = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = "$kind $dst `,` $src `,` $tmp `,` $count attr-dict `:` type($dst) `,` type($src) `,` type($tmp)"
    KINDS: ClassVar[tuple[str, ...]] = ("sum", "max", "min")

    def __init__(
        self, kind: str, dst: SSAValue, src: SSAValue, tmp: SSAValue, count: SSAValue
    ) -> None:
        super().__init__(operands=[dst, src, tmp, count], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        super().verify_()
        if self.kind.data not in self.KINDS:
            raise VerifyException(f"unknown reduction '{self.kind.data}'")


@irdl_op_definition
class VCompareOp(VectorOp):
    """mask = a <cmp> b as one byte per element (Compare; the bit-packing is Ascend C's)."""

    name = "buffer.vcompare"
    kind = prop_def(StringAttr)
    dst = operand_def(MemRefType)
    lhs = operand_def(MemRefType)
    rhs = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = "$kind $dst `,` $lhs `,` $rhs `,` $count attr-dict `:` type($dst) `,` type($lhs) `,` type($rhs)"
    KINDS: ClassVar[tuple[str, ...]] = ("lt", "gt", "eq", "le", "ge", "ne")

    def __init__(
        self, kind: str, dst: SSAValue, lhs: SSAValue, rhs: SSAValue, count: SSAValue
    ) -> None:
        super().__init__(operands=[dst, lhs, rhs, count], properties={"kind": StringAttr(kind)})


@irdl_op_definition
class VSelectOp(VectorOp):
    """dst = mask ? a : b (Select, tensor-tensor mode)."""

    name = "buffer.vselect"
    dst = operand_def(MemRefType)
    mask = operand_def(MemRefType)
    lhs = operand_def(MemRefType)
    rhs = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = "$dst `,` $mask `,` $lhs `,` $rhs `,` $count attr-dict `:` type($dst) `,` type($mask) `,` type($lhs) `,` type($rhs)"

    def __init__(
        self, dst: SSAValue, mask: SSAValue, lhs: SSAValue, rhs: SSAValue, count: SSAValue
    ) -> None:
        super().__init__(operands=[dst, mask, lhs, rhs, count])


@irdl_op_definition
class VGatherOp(VectorOp):
    """dst[i] = the element of `src` at byte offset offsets[i], for i < count (Gather,
    count form, srcBaseAddr 0; asc-devkit docs/api/context/Gather.md).

    The offsets are an i32 UB tensor (Ascend C's `LocalTensor<uint32_t>`) of byte
    offsets from `src`'s address, each a multiple of the element size and inside the
    buffer `src` views. A2 gathers 16- and 32-bit elements (half, bfloat16_t, float,
    int32_t, ...); so does 310P's AI Core (not bfloat16_t); 910 has no Gather. The conv
    template builds its im2col rows with it: one gather per
    input channel picks every tap's pixels, and offsets pointing at a zero block give
    the padding.

        buffer.vgather %cols, %fmap, %offsets, %n : memref<?xf16, #buffer.space<ub>>,
            memref<?xf16, #buffer.space<ub>>, memref<?xi32, #buffer.space<ub>>
    """

    name = "buffer.vgather"
    dst = operand_def(MemRefType)
    src = operand_def(MemRefType)
    offsets = operand_def(MemRefType)
    count = operand_def(IndexType)
    assembly_format = (
        "$dst `,` $src `,` $offsets `,` $count attr-dict `:` type($dst) `,` type($src) `,` "
        "type($offsets)"
    )
    TYPES: ClassVar[tuple[str, ...]] = ("f16", "bf16", "f32", "i32")

    def __init__(self, dst: SSAValue, src: SSAValue, offsets: SSAValue, count: SSAValue) -> None:
        super().__init__(operands=[dst, src, offsets, count])

    def verify_(self) -> None:
        super().verify_()
        from autofusion import dtypes

        elt = cast(MemRefType, self.dst.type).element_type
        if cast(MemRefType, self.src.type).element_type != elt:
            raise VerifyException("vgather does not convert element types")
        if dtypes.type_name(elt) not in self.TYPES:
            raise VerifyException(
                f"vgather gathers {', '.join(self.TYPES)} elements, not {dtypes.type_name(elt)}"
            )
        if dtypes.type_name(cast(MemRefType, self.offsets.type).element_type) != "i32":
            raise VerifyException("vgather offsets are i32 byte offsets")
        kernel = self.parent_op()
        while kernel is not None and not isinstance(kernel, KernelOpBase):
            kernel = kernel.parent_op()
        if kernel is not None:
            from autofusion.diagnostics import UserError
            from autofusion.hardware import get_chip

            try:
                chip = get_chip(kernel.chip.data)
            except UserError:
                return  # the kernel's own verifier names the unknown chip
            # the Gather doc lists Atlas A2/A3 and the Atlas inference series AI Core (310P,
            # without bf16), not the Atlas training series (910)
            on_310p = chip.arch == 2002 and dtypes.type_name(elt) != "bf16"
            if chip.arch != 2201 and not on_310p:
                raise VerifyException(f"vgather (Gather) is not available on {chip.name}")


@irdl_op_definition
class GetValueOp(IRDLOperation):
    """A scalar read from a local buffer (LocalTensor::GetValue, on the scalar pipe)."""

    name = "buffer.get_value"
    source = operand_def(MemRefType)
    index = operand_def(IndexType)
    result = result_def()
    assembly_format = "$source `[` $index `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, index: SSAValue) -> None:
        super().__init__(
            operands=[source, index], result_types=[cast(MemRefType, source.type).element_type]
        )


@irdl_op_definition
class SetValueOp(IRDLOperation):
    """A scalar write into a local buffer (LocalTensor::SetValue)."""

    name = "buffer.set_value"
    dest = operand_def(MemRefType)
    index = operand_def(IndexType)
    value = operand_def()
    assembly_format = "$dest `[` $index `]` `,` $value attr-dict `:` type($dest) `,` type($value)"

    def __init__(self, dest: SSAValue, index: SSAValue, value: SSAValue) -> None:
        super().__init__(operands=[dest, index, value])


# --------------------------------------------------------------------------------------
# Cube
# --------------------------------------------------------------------------------------


def _int_array(attr: Attribute) -> tuple[int, ...]:
    if not isinstance(attr, DenseArrayBase) or not isinstance(attr.elt_type, IntegerType):
        raise VerifyException("expected an array of integers")
    return tuple(int(v) for v in attr.get_values())


@irdl_op_definition
class Im2colOp(IRDLOperation):
    """An im2col load of a feature map from L1 into L0A or L0B (LoadData3DV2, ascend.md
    1.6: "L1 -> L0A / L0B ... 3D im2col").

    The source is a feature map of `channels` x `height` x `width` elements, row-major
    in L1 (the hardware keeps it as NC1HWC0; as for the other copies the fractal format
    is a detail of the load). The load builds rows `k_start .. k_start+k` (k = (c, r, s)
    flattened, c outermost, r over the `kernel` rows, s over its columns) and columns
    `m_start .. m_start+m` (output pixels of this map, p = oh * out_width + ow) of the
    implicit-GEMM matrix, where pixel (oh, ow) and tap (c, r, s) read

        fmap[c, oh*sh + r*dh - pad_top, ow*sw + s*dw - pad_left]

    and zero outside the map (the padding, padList/padValue of LoadData3DV2). In L0B the
    result is the row-major [k x m] matrix (the right operand of a conv whose left operand
    is the weight); in L0A the row-major [m x k] one.
    """

    name = "buffer.im2col"
    dest = operand_def(MemRefType)
    source = operand_def(MemRefType)
    channels = operand_def(IndexType)
    height = operand_def(IndexType)
    width = operand_def(IndexType)
    pad_top = operand_def(IndexType)
    pad_left = operand_def(IndexType)
    out_width = operand_def(IndexType)
    m_start = operand_def(IndexType)
    m = operand_def(IndexType)
    k_start = operand_def(IndexType)
    k = operand_def(IndexType)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    assembly_format = (
        "$dest `,` $source `fmap` `(` $channels `,` $height `,` $width `)` `pads` `(` "
        "$pad_top `,` $pad_left `)` `out_width` $out_width `pixels` `(` $m_start `,` $m `)` "
        "`k` `(` $k_start `,` $k `)` attr-dict `:` type($source) `to` type($dest)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        dest: SSAValue,
        source: SSAValue,
        fmap: Sequence[SSAValue],
        pads: Sequence[SSAValue],
        out_width: SSAValue,
        pixels: Sequence[SSAValue],
        k: Sequence[SSAValue],
        kernel: Sequence[int],
        strides: Sequence[int],
        dilations: Sequence[int],
    ) -> None:
        super().__init__(
            operands=[dest, source, *fmap, *pads, out_width, *pixels, *k],
            properties={
                "kernel": DenseArrayBase.from_list(i64, list(kernel)),
                "strides": DenseArrayBase.from_list(i64, list(strides)),
                "dilations": DenseArrayBase.from_list(i64, list(dilations)),
            },
        )

    def ints(self, name: str) -> tuple[int, int]:
        values = _int_array(self.properties[name])
        return values[0], values[1]

    def verify_(self) -> None:
        if space_of(self.source.type) != "l1":
            raise VerifyException("im2col reads a feature map in l1")
        if space_of(self.dest.type) not in ("l0a", "l0b"):
            raise VerifyException("im2col writes l0a or l0b")
        src = cast(MemRefType, self.source.type).element_type
        if cast(MemRefType, self.dest.type).element_type != src:
            raise VerifyException("im2col does not convert element types")
        for name in ("kernel", "strides", "dilations"):
            values = _int_array(self.properties[name])
            if len(values) != 2 or any(v < 1 for v in values):
                raise VerifyException(f"im2col {name} must be two positive integers")


@irdl_op_definition
class WorkspaceOp(IRDLOperation):
    """The kernel's GM workspace: scratch the host allocates for one launch, shared by all
    cores (the `workspace` GM_ADDR of an Ascend C kernel, sized by the tiling function:
    GetWorkspaceSizes). Split chips pass a cube result to the vector epilogue through it:
    AIC and AIV exchange data only through GM (ascend.md 1.1, 4).

    `bytes` is the total for the launch and must be a tiling argument of the kernel, so the
    host knows it before the launch; each core uses its own slice (by block_idx).
    """

    name = "buffer.workspace"
    bytes = operand_def(IndexType)
    result = result_def(MemRefType)
    assembly_format = "$bytes attr-dict `:` type($result)"

    def __init__(self, nbytes: SSAValue, element_type: Attribute) -> None:
        super().__init__(operands=[nbytes], result_types=[memref(element_type, "gm")])

    def verify_(self) -> None:
        if space_of(self.result.type) != "gm":
            raise VerifyException("a workspace lives in gm")
        kernel = self.parent_op()
        while kernel is not None and not isinstance(kernel, KernelOpBase):
            kernel = kernel.parent_op()
        if kernel is None:
            raise VerifyException("buffer.workspace must be inside a buffer.kernel")
        if self.bytes not in kernel.tiling_args:
            raise VerifyException(
                "the workspace size must be a tiling argument of the kernel (the host "
                "allocates the workspace before the launch)"
            )


@irdl_op_definition
class MmadOp(IRDLOperation):
    """C[m, n] (+)= A[m, k] @ B[k, n] in the cube unit (Mmad): A in L0A, B in L0B, C in L0C.

    Row-major views; `accumulate` = false starts C from zero (cmatrixInitVal).
    """

    name = "buffer.mmad"
    c = operand_def(MemRefType)
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    m = operand_def(IndexType)
    n = operand_def(IndexType)
    k = operand_def(IndexType)
    accumulate = operand_def(IntegerType(1))
    assembly_format = "$c `,` $a `,` $b `,` $m `,` $n `,` $k `,` $accumulate attr-dict `:` type($c) `,` type($a) `,` type($b)"

    def __init__(
        self,
        c: SSAValue,
        a: SSAValue,
        b: SSAValue,
        m: SSAValue,
        n: SSAValue,
        k: SSAValue,
        accumulate: SSAValue,
    ) -> None:
        super().__init__(operands=[c, a, b, m, n, k, accumulate])

    def verify_(self) -> None:
        for value, want, what in ((self.c, "l0c", "C"), (self.a, "l0a", "A"), (self.b, "l0b", "B")):
            got = space_of(value.type)
            if got != want:
                raise VerifyException(f"mmad operand {what} must be in {want}, got {got}")


# PipeBarrier<PIPE_X> pipes the buffer dialect states (asc-devkit PipeBarrier.md)
BARRIER_PIPES = ("M", "ALL")
# Mmad.md (同步优化说明) and the matmul library (mmad_compute.h:86): Mmads that
# accumulate into one L0C tile need PipeBarrier<PIPE_M> between them when
# (m / 16) * (n / 16) < MMAD_BARRIER_LIMIT; above it the cube orders them itself
MMAD_BARRIER_LIMIT = 10


@irdl_op_definition
class PipeBarrierOp(IRDLOperation):
    """PipeBarrier<PIPE_X>: what pipe X (ALL: every pipe) issues after the barrier waits
    until everything it issued before is done (asc-devkit PipeBarrier.md).

    Before an mmad that accumulates into an L0C tile an earlier mmad wrote, the buffer
    verifier requires `buffer.pipe_barrier "M"` (Mmad.md, 同步优化说明). With
    `small_mmad(%m, %n)`, the barrier is needed, and printed, only when
    (m / 16) * (n / 16) < 10 (integer division, as the matmul library's mmad_compute.h
    tests it); %m and %n are then the following mmad's own sizes. The interpreter runs
    every op in order, so it ignores barriers.

        buffer.pipe_barrier "M" small_mmad(%m, %n)
    """

    name = "buffer.pipe_barrier"
    pipe = prop_def(StringAttr)
    sizes = var_operand_def(IndexType)
    assembly_format = "$pipe (`small_mmad` `(` $sizes^ `)`)? attr-dict"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, pipe: str, sizes: Sequence[SSAValue] = ()) -> None:
        super().__init__(operands=[list(sizes)], properties={"pipe": StringAttr(pipe)})

    def verify_(self) -> None:
        if self.pipe.data not in BARRIER_PIPES:
            raise VerifyException(
                f"pipe_barrier pipe must be one of {', '.join(BARRIER_PIPES)}, got "
                f"{self.pipe.data!r}"
            )
        if len(self.sizes) not in (0, 2):
            raise VerifyException("pipe_barrier small_mmad takes the mmad's m and n")
        if self.sizes and self.pipe.data != "M":
            raise VerifyException('pipe_barrier small_mmad is a barrier of pipe "M"')


# --------------------------------------------------------------------------------------
# Host side: launching a kernel on tensors
# --------------------------------------------------------------------------------------


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run kernel @k on `blocks` cores over tensors; tiling scalars come from the host.

    The kernel's GM arguments are the tensor operands (inputs) and the results (outputs),
    in order; `dims` give the sizes of the results' dynamic dimensions, in order.
    """

    name = "buffer.launch"
    kernel = prop_def(SymbolRefAttr)
    blocks = operand_def(IndexType)
    inputs = var_operand_def(TensorType)
    tiling = var_operand_def(IndexType)
    dims = var_operand_def(IndexType)
    outputs = var_result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$kernel `blocks` `(` $blocks `)` `(` $inputs `)` `tiling` `(` $tiling `)` "
        "`dims` `(` $dims `)` attr-dict `:` functional-type($inputs, $outputs)"
    )

    def __init__(
        self,
        kernel: str,
        blocks: SSAValue,
        inputs: Sequence[SSAValue],
        tiling: Sequence[SSAValue],
        dims: Sequence[SSAValue],
        result_types: Sequence[Attribute],
    ) -> None:
        super().__init__(
            operands=[blocks, list(inputs), list(tiling), list(dims)],
            result_types=[list(result_types)],
            properties={"kernel": SymbolRefAttr(kernel)},
        )


@irdl_op_definition
class DimOp(IRDLOperation):
    """The runtime size of dimension `dim` of a tensor (what the host tiling reads)."""

    name = "buffer.dim"
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$source `[` $dim `]` attr-dict `:` type($source)"

    def __init__(self, source: SSAValue, dim: int) -> None:
        super().__init__(
            operands=[source], result_types=[IndexType()], properties={"dim": IntegerAttr(dim, i64)}
        )
