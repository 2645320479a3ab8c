"""The decode-attention kernel's cost: each KV head's keys and values read once for all
its query heads, split over the cores, plus the partials' round trip and the combine."""

from __future__ import annotations

from collections.abc import Sequence

from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_cost import SOFTMAX_WORK, cube_flops
from autofusion.lowering.attention_plan import softmax_ub
from autofusion.lowering.attention_tiling import AttentionTiling
from autofusion.lowering.cube_common import aivs_per_tile, blended_transfer
from autofusion.lowering.cube_epilogue import (
    EpilogueSweep,
    epilogue_io,
    epilogue_ub,
    epilogue_unique_read,
    epilogue_work,
)
from autofusion.lowering.decode_attention_host import decode_plan_tiling
from autofusion.lowering.decode_attention_plan import DecodeAttentionPlan
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.template import KernelCost
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims

# vector instructions per partial element in the combine: two rescales and an add
COMBINE_WORK = 3.0


def decode_sizes(
    p: DecodeAttentionPlan, chip: ChipSpec, dims: Sequence[int] | None = None
) -> AttentionTiling[int]:
    """The runtime tiling at the group's shapes (dynamic dims: `dims`, default 1)."""
    b, hq, sq, _ = resolve_dynamic_dims(p.logical(p.q), dims)
    kdims = resolve_dynamic_dims(p.logical(p.k), dims)
    return decode_plan_tiling(IntOps(), p, chip, [b, hq, kdims[1], sq, kdims[2]])


def decode_attention_cost(
    p: DecodeAttentionPlan, chip: ChipSpec, dims: Sequence[int] | None = None
) -> KernelCost:
    """Traffic and work of the KV splits (S, P and P@V through the per-core workspaces)
    and of the combine (each step's partial written once and read once)."""
    tiling = decode_sizes(p, chip, dims)
    t, blocks = tiling.values, tiling.blocks
    b, hq, hkv, sq, skv, d = t["B"], t["Hq"], t["Hkv"], t["Sq"], t["Skv"], p.head_dim
    w, dv, rows = byte_width(p.in_elt), p.value_dim, hq // max(hkv, 1) * sq
    items, tkv = b * hkv, t["tkv"]
    kv_read = items * skv * (d + dv) * w
    q_read = b * hq * sq * d * w
    s_elems = items * skv * rows
    mask_read = 0
    if p.mask is not None:
        mask_rows = rows if p.mask_pattern[2] else 1
        mask_read = items * skv * mask_rows * byte_width(element_type(p.mask))
    kv_blocks = items * t["splits"] * -(-t["chunk"] // max(tkv, 1))
    ws = s_elems * (4 + w) + kv_blocks * rows * dv * 4
    partial = t["steps"] * rows * (dv + 2) * 4
    out_rows = b * hq * sq
    read, write = epilogue_io(
        p.rows, [p.raw], EpilogueSweep(out_rows, dv, items, dv, 1, blocks), dims
    )
    flops = cube_flops(items, skv, rows, d, dv)
    work = SOFTMAX_WORK * s_elems + 3.0 * s_elems * (p.mask is not None)
    work += 2.0 * s_elems / max(tkv, 1) * dv + COMBINE_WORK * partial / 4
    work += epilogue_work(p.rows, p.root, out_rows * dv)
    transfer = blended_transfer(
        [
            (q_read, rows * d * w),
            (kv_read, tkv * max(d, dv) * w),
            (mask_read + 2 * ws, rows * tkv * 4),
            (2 * partial, rows * dv * 4),
            (read + write, rows * dv * w),
        ]
    )
    # HBM: q, k, v and the mask once; the workspaces and the partials stay in L2
    return KernelCost(
        gm_read_bytes=q_read + kv_read + mask_read + read + ws + partial,
        gm_write_bytes=write + ws + partial,
        hbm_read_bytes=q_read + kv_read + mask_read + epilogue_unique_read(p.rows, [p.raw], dims),
        hbm_write_bytes=write,
        vector_work=work,
        cube_flops=flops,
        transfer_bytes=transfer,
        ub_bytes=softmax_ub(p, p.tiles, chip) + epilogue_ub(p.rows),
        cube_cores_used=blocks,
        vector_cores_used=blocks * aivs_per_tile(chip, not p.l0c_to_ub),
        notes=[
            f"keys split {t['splits']} ways over {blocks} cores; partials round trip "
            f"{2 * partial} bytes"
        ],
    )
