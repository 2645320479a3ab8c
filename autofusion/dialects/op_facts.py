"""Per-op facts: the work an op does and how it reads its operands, answered by the op.

An interface in the manner of xDSL's `HasFolderInterface` (xdsl/interfaces.py): every
graph op subclasses `OpFacts` and implements its abstract methods, so an op without
facts cannot be built. `StreamingFacts` and `MovementFacts` are the shared answers of
the op families (declared once, listed among an op's bases); cube ops answer their own.
The cost model (`op_cost`), the kernel templates' vector work and the fusion report's
traffic roles read these facts; how a *kernel* re-reads its operands (a matmul's B per
M tile) stays the template's business.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, cast

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN


@dataclass(frozen=True)
class OpWork:
    """The arithmetic of one op: cube FLOPs (2 per multiply-add) and float32 vector
    element operations (the cost model's vector work)."""

    cube: float
    vector: float


class OperandRole(str, Enum):
    """How an op reads an operand over its run, as the L2 traffic model sees it
    (traffic_model.py's hot and transient inputs)."""

    STREAMED = "streamed"  # read once, in step with the result
    HOT = "hot"  # re-read throughout the op (a broadcast operand, attention's K and V)
    TRANSIENT = "transient"  # re-read briefly, by consecutive tiles (a matmul's B band)
    # re-read by every tile along another axis (a matmul's A for each N tile): hot while
    # it fits the half of L2 the tiling keeps, else only a band at a time is (transient)
    BANDED = "banded"


class Access(str, Enum):
    """Whether an op moves bytes: a view only reinterprets its input."""

    COMPUTE = "compute"  # runs as a kernel (or in one)
    VIEW = "view"  # a reshape: graph tensors are contiguous, so no bytes, no kernel
    SUBVIEW = "subview"  # selects part of its input: a kernel can read it through strides


def dims(v: SSAValue, dynamic_size: int) -> list[int]:
    """The shape of tensor `v` with each dynamic dim taken as `dynamic_size`."""
    return [dynamic_size if d == DYN else d for d in cast(TensorType, v.type).get_shape()]


def elements(v: SSAValue, dynamic_size: int) -> int:
    """The elements of tensor `v` (dynamic dims taken as `dynamic_size`); 0 if not a tensor."""
    if not isinstance(v.type, TensorType):
        return 0
    return si.num_elements(dims(v, dynamic_size)) or 0


def result_elements(op: Operation, dynamic_size: int) -> int:
    """The elements of the largest tensor result of `op`."""
    return max((elements(r, dynamic_size) for r in op.results), default=0)


def uses_per_element(uses: float, v: SSAValue, dynamic_size: int) -> float:
    """`uses` element reads of `v` spread over its elements (0 for an empty tensor)."""
    n = elements(v, dynamic_size)
    return uses / n if n else 0.0


class OpFacts(Operation, abc.ABC):
    """The facts a graph op answers about itself (see the module docstring)."""

    # whether the op moves bytes (Access); only reshape is a view
    ACCESS: ClassVar[Access] = Access.COMPUTE

    @abc.abstractmethod
    def vector_weight(self) -> float:
        """float32 vector instructions per result element of the op's elementwise stage,
        as a vector kernel runs it: an elementwise op's whole work (transcendentals and
        divisions take several passes of the vector unit), a data-movement op's copy
        between UB buffers, a cube op's epilogue (bias adds, activation)."""

    @abc.abstractmethod
    def flops(self, dynamic_size: int) -> OpWork:
        """Cube FLOPs and vector work of the op, dynamic dims taken as `dynamic_size`."""

    @abc.abstractmethod
    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        """Per operand, how many times the op logically reads each of its elements: once
        per result element it broadcasts to, for a cube op once per product it enters
        (a matmul's A N times); a reduction reads each element once."""

    @abc.abstractmethod
    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        """Per operand, how the op re-reads it (OperandRole)."""


class StreamingFacts(OpFacts, abc.ABC):
    """An op that streams its operands along its result (elementwise, broadcast, reduce,
    norm and library ops): `VECTOR_WEIGHT` vector operations per result element, each
    operand read once per result element it broadcasts to, and hot when that is more
    than once."""

    # float32 vector instructions per result element: transcendentals and divisions take
    # several passes of the vector unit; the functions built from basic APIs (sigmoid,
    # tanh, erf, gelu) count the instructions lowering/row_kernel.py emits for them
    VECTOR_WEIGHT: ClassVar[float] = 1.0

    def vector_weight(self) -> float:
        return self.VECTOR_WEIGHT

    def flops(self, dynamic_size: int) -> OpWork:
        out = sum(elements(r, dynamic_size) for r in self.results)
        return OpWork(0.0, self.vector_weight() * out)

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        out = result_elements(self, dynamic_size)
        return tuple(
            max(1.0, uses_per_element(out, v, dynamic_size)) if elements(v, dynamic_size) else 0.0
            for v in self.operands
        )

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        return tuple(
            OperandRole.HOT if n > 1 else OperandRole.STREAMED
            for n in self.operand_reads(dynamic_size)
        )


class MovementFacts(OpFacts, abc.ABC):
    """A data-movement op (reshape, transpose, concat, split, slice, gather, pad): no
    arithmetic (alone it is a DMA; in a vector kernel one UB copy per element), each
    operand element read once."""

    def vector_weight(self) -> float:
        return 1.0

    def flops(self, dynamic_size: int) -> OpWork:
        return OpWork(0.0, 0.0)

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        return tuple(1.0 if elements(v, dynamic_size) else 0.0 for v in self.operands)

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        return tuple(OperandRole.STREAMED for _ in self.operands)


class ContractionFacts(OpFacts, abc.ABC):
    """An op whose arithmetic is multiply-adds of two contracted operands (a matmul or a
    convolution form): each multiply-add reads one element of each (their roles are
    `CONTRACTED_ROLES`); every other operand (a bias, a scale, a zero point) is read
    once per result element it broadcasts to, and is hot when that is more than once.
    `vector_weight` counts one vector operation per result element for each such
    operand, plus the activation epilogue."""

    # operand indices of the contracted operands, and how the op re-reads them
    CONTRACTED: ClassVar[tuple[int, int]] = (0, 1)
    CONTRACTED_ROLES: ClassVar[tuple[OperandRole, OperandRole]] = (
        OperandRole.BANDED,
        OperandRole.TRANSIENT,
    )

    @abc.abstractmethod
    def macs(self, dynamic_size: int) -> float:
        """The op's multiply-adds."""

    def epilogue_activation(self) -> str | None:
        """The activation the op applies to its result (graph.ACTIVATIONS), if any."""
        act = self.properties.get("activation")
        return act.data if isinstance(act, StringAttr) else None

    def broadcast_operands(self) -> list[SSAValue]:
        return [v for i, v in enumerate(self.operands) if i not in self.CONTRACTED]

    def vector_weight(self) -> float:
        return activation_weight(self.epilogue_activation()) + len(self.broadcast_operands())

    def flops(self, dynamic_size: int) -> OpWork:
        out = result_elements(self, dynamic_size)
        return OpWork(2.0 * self.macs(dynamic_size), self.vector_weight() * out)

    def operand_reads(self, dynamic_size: int) -> tuple[float, ...]:
        out = result_elements(self, dynamic_size)
        macs = self.macs(dynamic_size)
        return tuple(
            uses_per_element(macs if i in self.CONTRACTED else out, v, dynamic_size)
            for i, v in enumerate(self.operands)
        )

    def operand_roles(self, dynamic_size: int) -> tuple[OperandRole, ...]:
        roles = dict(zip(self.CONTRACTED, self.CONTRACTED_ROLES))
        reads = self.operand_reads(dynamic_size)
        return tuple(
            roles.get(i, OperandRole.HOT if reads[i] > 1 else OperandRole.STREAMED)
            for i in range(len(self.operands))
        )


# a convolution's feature map is read by the output tiles one after the other, its
# weight by all of them
CONV_ROLES = (OperandRole.TRANSIENT, OperandRole.HOT)


def window_macs(op: Operation, weight: SSAValue, dynamic_size: int) -> float:
    """Multiply-adds of a convolution: each result element sums weight[m, :, ...]'s
    (C/group x window) products."""
    w = dims(weight, dynamic_size)
    return float(result_elements(op, dynamic_size)) * (si.num_elements(w[1:]) or 0)


# float32 vector instructions per element of a softmax (max, subtract, exp, sum, divide)
SOFTMAX_WEIGHT = 7.0

# cube-op activation epilogues (graph.ACTIVATIONS): float32 vector instructions per
# element, as the cube templates' epilogues emit them; silu and sigmoid take 6
ACTIVATION_WEIGHT = {"relu": 1.0, "clip": 2.0, "gelu": 22.0, "gelu_tanh": 22.0}
OTHER_ACTIVATION_WEIGHT = 6.0


def activation_weight(activation: str | None) -> float:
    """Vector instructions per element of a cube op's activation epilogue (0 for none)."""
    if activation is None:
        return 0.0
    return ACTIVATION_WEIGHT.get(activation, OTHER_ACTIVATION_WEIGHT)


def vector_weight(op: Operation) -> float:
    """`op`'s vector instructions per result element; 1 for an op outside the graph
    dialect's facts."""
    return op.vector_weight() if isinstance(op, OpFacts) else 1.0


def is_view(op: Operation) -> bool:
    """Whether `op` only reinterprets its input's bytes (Access.VIEW)."""
    return isinstance(op, OpFacts) and op.ACCESS is Access.VIEW


def reads_through(op: Operation) -> bool:
    """Whether a kernel can read `op`'s input through it (a view or a subview)."""
    return isinstance(op, OpFacts) and op.ACCESS in (Access.VIEW, Access.SUBVIEW)
