"""The cost model: how long a kernel takes on a chip, as a roofline with launch overhead.

What a kernel moves and computes is a `KernelCost` (a kernel template's `cost`, or
`op_cost` for a library op); `kernel_time` turns it into time. `Refusal` is the answer
of every legality check of the fusion library and the templates: the reason why not.

For a kernel that reads R and writes W bytes of GM, does V float32 vector element
operations and F cube FLOPs, on a chip with GM bandwidth B, clock f, and per-core vector
(v elements/cycle) and cube (c FLOP/cycle) throughput:

    eff(t)  = t / (t + T_half)              DataCopy efficiency of t-byte transfers
    t_mem   = max(H / (B * share * eff(t)),       H: the bytes that reach HBM
                  (R + W) / (B_L2 * share * eff(t)))   every byte passes through L2
    t_vec   = V / (cores_vec * v * f)
    t_cube  = F / (cores_cube * c * f)
    t       = max(t_mem, t_vec, t_cube) + launch_overhead

R + W are the kernel's logical GM bytes (what its DataCopies request, re-reads
included); H <= R + W is the part that reaches HBM when the kernel runs alone on a cold
L2 (KernelCost.hbm_bytes: the template's estimate of which re-reads its traversal keeps
in L2; all of R + W when it gives none). All MTE traffic goes through L2 (ascend.md
1.6), whose bandwidth B_L2 bounds the rest. The share term models that a kernel on few
cores cannot pull the whole bandwidth (ddr_rate and l2_read_rate are per core). The
tiling loss of a kernel is t at its actual transfer size minus t at a 64 KB transfer:
what smaller tiles cost. Chip constants come from hardware/chips.toml (launch overhead,
T_half and the bandwidths are marked there as estimates).

Ops outside any kernel template (library ops) are costed as one kernel each by
`op_cost`: they read their inputs and write their outputs once. A reshape is a view (a
graph tensor is contiguous, so reshaping it changes its shape, not its bytes): no
kernel, no bytes, no launch. Cross-kernel L2 reuse is the traffic model's
(autofusion/traffic_model.py), used by the fusion report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.dialects.op_facts import OpFacts, OpWork, is_view
from autofusion.dialects.shape_inference import DYN
from autofusion.hardware import ChipSpec

# the transfer size at which tiling loss is measured against (a large DataCopy)
REFERENCE_TRANSFER = 64 * 1024


@dataclass(frozen=True)
class Refusal:
    """Why a candidate is not taken: a fusion that is illegal or does not pay, a group no
    template can run, a rewrite whose precondition fails."""

    reason: str


@dataclass
class KernelCost:
    """What one kernel moves and computes (`kernel_time` turns it into time)."""

    gm_read_bytes: int
    gm_write_bytes: int
    vector_work: float  # float32 element operations, weighted per op
    cube_flops: float
    transfer_bytes: int  # bytes of one typical GM<->UB transfer (DataCopy efficiency)
    ub_bytes: int  # UB footprint of the kernel's buffers
    cube_cores_used: int = 0
    vector_cores_used: int = 0
    notes: list[str] = field(default_factory=list)
    # the part of gm_read/gm_write that reaches HBM when the kernel runs alone on a cold
    # L2: its own re-reads (and workspace round trips) hit L2 when its traversal keeps
    # them resident (None: all of it, no reuse modelled). See docs/ub-fusion.md.
    hbm_read_bytes: int | None = None
    hbm_write_bytes: int | None = None
    launches: int = 1  # 0 for a view op: no kernel runs

    @property
    def hbm_bytes(self) -> int:
        read = self.gm_read_bytes if self.hbm_read_bytes is None else self.hbm_read_bytes
        write = self.gm_write_bytes if self.hbm_write_bytes is None else self.hbm_write_bytes
        return read + write


@dataclass(frozen=True)
class KernelTime:
    """The roofline estimate of one kernel, in microseconds."""

    memory_us: float
    vector_us: float
    cube_us: float
    launch_us: float
    tiling_loss_us: float

    @property
    def total_us(self) -> float:
        return max(self.memory_us, self.vector_us, self.cube_us) + self.launch_us

    @property
    def bound(self) -> str:
        """What limits the kernel: memory, vector or cube."""
        return max(
            (("memory", self.memory_us), ("vector", self.vector_us), ("cube", self.cube_us)),
            key=lambda kv: kv[1],
        )[0]


def transfer_efficiency(transfer_bytes: int, chip: ChipSpec) -> float:
    t = max(transfer_bytes, 1)
    return t / (t + chip.datacopy_half_efficiency_bytes)


def kernel_time(cost: KernelCost, chip: ChipSpec) -> KernelTime:
    """Roofline time of a kernel (see the module docstring for the formula)."""
    hz = chip.clock_mhz * 1e6
    cores = max(cost.vector_cores_used, cost.cube_cores_used, 1)
    available = max(chip.vector_cores if cost.vector_cores_used else chip.cube_cores, 1)
    share = min(1.0, cores / available)
    bw = chip.gm_bandwidth_gbs * 1e9 * share
    l2_bw = chip.l2_bandwidth_gbs * 1e9 * share

    def memory(transfer: int) -> float:
        moved = cost.gm_read_bytes + cost.gm_write_bytes
        eff = transfer_efficiency(transfer, chip)
        return max(cost.hbm_bytes / bw, moved / l2_bw) / eff * 1e6

    vector_us = (
        cost.vector_work / (max(cost.vector_cores_used, 1) * chip.vector_f32_per_cycle * hz) * 1e6
        if cost.vector_work
        else 0.0
    )
    cube_us = (
        cost.cube_flops / (max(cost.cube_cores_used, 1) * chip.cube_flops_per_cycle * hz) * 1e6
        if cost.cube_flops
        else 0.0
    )
    memory_us = memory(cost.transfer_bytes)
    ideal = max(memory(max(cost.transfer_bytes, REFERENCE_TRANSFER)), vector_us, cube_us)
    actual = max(memory_us, vector_us, cube_us)
    return KernelTime(
        memory_us,
        vector_us,
        cube_us,
        chip.launch_overhead_us * cost.launches,
        max(0.0, actual - ideal),
    )


def value_bytes(v: SSAValue, dynamic_size: int) -> int:
    t = cast(TensorType, v.type)
    shape = [dynamic_size if d == DYN else d for d in t.get_shape()]
    return (si.num_elements(shape) or 0) * dtypes.byte_width(t.element_type)


def work(op: Operation, dynamic_size: int) -> OpWork:
    """The cube FLOPs (2·M·N·K of a matmul, gemm, conv, attention's two GEMMs, ffn's two
    projections) and vector work of `op`, as the op states them (op_facts.OpFacts); none
    for an op outside the graph dialect's facts."""
    return op.flops(dynamic_size) if isinstance(op, OpFacts) else OpWork(0.0, 0.0)


def is_empty(op: Operation) -> bool:
    """Whether an operand or result of `op` has no elements (a static zero-size dimension,
    e.g. ONNX's shape of a scalar). Such an op computes nothing and runs no kernel."""
    return any(
        isinstance(v.type, TensorType) and 0 in v.type.get_shape()
        for v in (*op.operands, *op.results)
    )


def op_cost(op: Operation, chip: ChipSpec, dynamic_size: int = 1) -> KernelCost:
    """One op run as its own kernel: inputs read once, outputs written once. A view op
    (`is_view`) or one on an empty tensor (`is_empty`) is free: no bytes, no work, no
    launch."""
    if is_view(op) or is_empty(op):
        return KernelCost(0, 0, 0.0, 0.0, REFERENCE_TRANSFER, 0, launches=0)
    read = sum(value_bytes(v, dynamic_size) for v in op.operands if isinstance(v.type, TensorType))
    write = sum(value_bytes(v, dynamic_size) for v in op.results if isinstance(v.type, TensorType))
    done = work(op, dynamic_size)
    # a cube op's epilogue runs in its cube kernel's pipeline: its time is the cube's
    cube = bool(done.cube) or graph.fusion_kind(op) == graph.FusionKind.CUBE
    return KernelCost(
        gm_read_bytes=read,
        gm_write_bytes=write,
        vector_work=0.0 if done.cube else done.vector,
        cube_flops=done.cube,
        transfer_bytes=REFERENCE_TRANSFER,
        ub_bytes=0,
        cube_cores_used=chip.cube_cores if cube else 0,
        vector_cores_used=0 if cube else chip.vector_cores,
    )


def lower_bound_bytes(values: Sequence[SSAValue], dynamic_size: int = 1) -> int:
    """GM traffic if each of `values` (inputs, weights, outputs) moved exactly once."""
    return sum(value_bytes(v, dynamic_size) for v in values)
