"""The matmul kernel's cost: its GM/HBM traffic, cube and vector work, and the inputs it
reads exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from autofusion.dialects import shape_inference as si
from autofusion.dialects.shape_inference import DYN
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import FRACTAL, aivs_per_tile, blended_transfer, round_up
from autofusion.lowering.cube_epilogue import (
    EpilogueSweep,
    epilogue_io,
    epilogue_ub,
    epilogue_unique_read,
    epilogue_work,
)
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.matmul_host import matmul_sizes, plan_tiling
from autofusion.lowering.matmul_plan import MatmulPlan
from autofusion.lowering.matmul_tiling import GemmSizes, l2_budget
from autofusion.lowering.norm_prologue import prologue_cost
from autofusion.lowering.rope_epilogue_emit import rope_overcount
from autofusion.lowering.template import KernelCost
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims, tensor_shape


def operand_bytes(v: SSAValue, dims: Sequence[int] | None) -> int:
    """Bytes of a whole operand tensor (dynamic dims from `dims`, else 1)."""
    return (si.num_elements(resolve_dynamic_dims(tensor_shape(v), dims)) or 0) * byte_width(
        element_type(v)
    )


def matmul_cost(p: MatmulPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
    """The kernel's traffic and work: A re-read per N tile, B per M tile, and what reaches
    HBM in the grouped tile order."""
    m, n, k, batch = matmul_sizes(p, dims)
    tiling = plan_tiling(IntOps(), p, chip, GemmSizes(m, n, k, batch))
    t, blocks = tiling.values, tiling.blocks
    w = byte_width(p.in_elt)
    rows = batch * m
    chunks = batch * t["mt"] * -(-t["tm"] // t["er"]) * t["nt"]
    external = [p.raw] if p.raw is not None else []
    if p.prologue is not None:  # rstd comes from the kernel's own workspace
        external.append(p.prologue.rstd)
    pro = prologue_cost(p.prologue, rows, t["nt"])
    read, write = epilogue_io(
        p.rows, external, EpilogueSweep(rows, n, chunks, t["tn"], t["nt"], blocks), dims
    )
    over_read, over_write = rope_overcount(p.rope, rows, n, t["nt"])
    read, write = read - over_read, write - over_write
    if p.direct:
        write += rows * n * byte_width(element_type(p.root.results[0]))
    ws = rows * n * byte_width(p.ws_elt) if p.ws_elt is not None and not p.l0c_to_ub else 0
    # A once per N tile, B once per M tile; the workspace written and read back
    a_bytes = batch * m * k * w * t["nt"]
    b_bytes = batch * k * n * w * t["mt"]
    tm, tn, kl1 = min(t["tm"], m), min(t["tn"], n), min(t["kl1"], k)
    chunk = min(t["er"], m) * tn * 4
    transfer = blended_transfer(
        [
            (a_bytes, tm * kl1 * w),
            (b_bytes, kl1 * tn * w),
            (read + write + 2 * ws, chunk),
            (pro.gm_read + pro.gm_write, pro.transfer),
        ]
    )
    # HBM (tile order, module docstring): the group's A bands stay in L2, each B band
    # comes once per group; a whole operand that fits the budget is read once; the
    # workspace slots are rewritten in place and never leave L2
    budget = l2_budget(chip)
    sweeps = -(-t["mt"] // t["group_m"])
    a_whole, b_whole = operand_bytes(p.a, dims), operand_bytes(p.b, dims)
    hbm_a = a_whole if a_whole <= budget else batch * m * k * w
    hbm_b = b_whole if b_whole <= budget else min(b_bytes, batch * k * n * w * sweeps)
    epilogue_in = epilogue_unique_read(p.rows, external, dims)
    return KernelCost(
        gm_read_bytes=a_bytes + b_bytes + read + ws + pro.gm_read,
        gm_write_bytes=write + ws + pro.gm_write,
        hbm_read_bytes=hbm_a + hbm_b + min(read, epilogue_in),
        hbm_write_bytes=write,
        vector_work=epilogue_work(p.rows, p.root, rows * n) + pro.vector_work,
        cube_flops=2.0 * batch * round_up(m, FRACTAL) * round_up(n, FRACTAL) * round_up(k, FRACTAL),
        transfer_bytes=transfer,
        ub_bytes=epilogue_ub(p.rows),
        cube_cores_used=blocks,
        vector_cores_used=0 if p.direct else blocks * aivs_per_tile(chip, bool(ws)),
        notes=[f"workspace round trip {2 * ws} bytes"] if ws else [],
    )


def matmul_read_once(p: MatmulPlan, chip: ChipSpec) -> list[SSAValue]:
    """B when M fits one tile, A when N does (each not broadcast over batch dims):
    the other operand's tiles then never re-read it (A is read once per N tile, B
    once per M tile); the epilogue's full inputs. Static shapes only."""
    from autofusion.lowering.l2_hint import full_row_inputs

    m, n, k = p.mnk()
    if DYN in (m, n, k, *p.batch_shape):
        return []
    batch = si.num_elements(p.batch_shape) or 1
    t = plan_tiling(IntOps(), p, chip, GemmSizes(m, n, k, batch)).values
    once: list[SSAValue] = []
    if t["mt"] == 1 and (si.num_elements(p.b_outer) or 1) == batch:
        once.append(p.b)
    if t["nt"] == 1 and (si.num_elements(p.a_outer) or 1) == batch:
        once.append(p.a)
    roles = [p.a, p.b]
    if p.rows is not None:
        once += full_row_inputs(p.rows)
        roles += p.rows.inputs
    # a value in two roles (x @ x, or B also read by the epilogue) is read twice
    return [v for v in dict.fromkeys(once) if roles.count(v) == 1]
