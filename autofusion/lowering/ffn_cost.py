"""The ffn kernel's cost: its GM/HBM traffic, cube and vector work."""

from __future__ import annotations

from collections.abc import Sequence

from autofusion.dialects import shape_inference as si
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.cube_common import blended_transfer
from autofusion.lowering.cube_epilogue import epilogue_ub, epilogue_work
from autofusion.lowering.ffn_host import ffn_tiling
from autofusion.lowering.ffn_plan import FfnPlan
from autofusion.lowering.ffn_tiles import ZERO_ELEMS
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.norm_prologue import prologue_cost
from autofusion.lowering.template import KernelCost
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims, tensor_shape


def ffn_cost(p: FfnPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
    """The kernel's traffic and work: x re-read per band, the bands per M tile, the
    workspace round trips and the accumulator's read-modify-writes."""
    m, k1, f, n2 = p.sizes(dims)
    tiling = ffn_tiling(IntOps(), (m, k1, f, n2), p, chip)
    t, blocks = tiling.values, tiling.blocks
    w, parts = byte_width(p.in_elt), p.parts_count
    w_gu = byte_width(p.gu_elt)
    x_once, w1_once, w2_once = m * k1 * w, parts * k1 * f * w, f * n2 * w
    y_bytes = m * n2 * w
    acc = m * n2 * 4
    # logical: x once per band sub-tile of tn columns (gate and up share it), each
    # band of W1/W2 once per M tile, the gate/up and g round trips, the accumulator
    # zeroed, read-modify-written once per band and read by the final pass
    x_read = x_once * -(-f // t["tn"])
    w_read = (w1_once + w2_once) * t["mt"]
    gu = m * f * parts * w_gu
    g = m * f * w
    rmw = acc * t["ft"]
    side = sum(
        (si.num_elements(resolve_dynamic_dims(tensor_shape(v), dims)) or 0)
        * byte_width(element_type(v))
        for v in (*p.root.bias1, *(x for x in (p.root.bias2,) if x is not None))
    )
    res = y_bytes if p.root.residual is not None else 0
    # a residual that is x itself (a normalising ffn's h) comes from HBM once, as x
    res_hbm = 0 if p.root.residual is p.root.input else res
    # a norm prologue re-reads x (from L2: every band reads it) and writes rstd, which
    # the activation reads once per column chunk
    pro = prologue_cost(p.prologue, m, -(-f // t["ec"]))
    read = x_read + w_read + gu + g + rmw + acc + res + side * t["mt"] + pro.gm_read
    write = gu + g + acc + rmw + y_bytes + pro.gm_write
    # HBM: x, the weights and the residual once (round-robin items keep the bands of
    # one or two bands in L2, x is re-read by every band); the accumulator and the
    # workspace slots stay in L2 while they fit beside x and the bands in flight
    resident = acc + x_once + t["gu_bytes"] + t["g_bytes"]
    spill = 0 if resident <= chip.l2_bytes // 2 else 2 * rmw
    transfer = blended_transfer(
        [
            (x_read, min(t["tm"], m) * t["kl1"] * w),
            (w_read, t["kl1"] * t["tn"] * w),
            (gu + g + 2 * rmw, min(t["tm"], m) * t["tn"] * 4),
            (acc + res + y_bytes, min(t["fr"], m) * t["fc"] * 4),
            (pro.gm_read, pro.transfer),
        ]
    )
    flops = 2.0 * m * k1 * f * parts + 2.0 * m * f * n2
    work = epilogue_work(p.act_rows, p.gate_mm, m * f) + epilogue_work(
        p.out_rows, p.down_mm, m * n2
    )
    work += m * n2 + pro.vector_work  # zeroing the accumulator; the statistics
    return KernelCost(
        gm_read_bytes=read,
        gm_write_bytes=write,
        hbm_read_bytes=x_once + w1_once + w2_once + res_hbm + side + spill // 2,
        hbm_write_bytes=y_bytes + spill // 2,
        vector_work=work,
        cube_flops=flops,
        transfer_bytes=transfer,
        ub_bytes=sum(epilogue_ub(r) for r in p.row_plans) + ZERO_ELEMS * 4,
        cube_cores_used=blocks,
        vector_cores_used=2 * blocks,
        notes=[
            f"{t['ft']} bands of {t['bf']}: accumulator read-modify-write {2 * rmw} bytes",
            f"gate/up and g round trips {2 * (gu + g)} bytes",
        ],
    )
