"""The attention kernel's cost: its GM/HBM traffic, cube and vector work."""

from __future__ import annotations

from collections.abc import Sequence

from autofusion.dialects import shape_inference as si
from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.attention_host import plan_tiling
from autofusion.lowering.attention_plan import AttentionPlan, softmax_ub
from autofusion.lowering.cube_common import FRACTAL, aivs_per_tile, blended_transfer, round_up
from autofusion.lowering.cube_epilogue import (
    EpilogueSweep,
    epilogue_io,
    epilogue_ub,
    epilogue_unique_read,
    epilogue_work,
)
from autofusion.lowering.index_expr import IntOps
from autofusion.lowering.template import KernelCost
from autofusion.lowering.value_types import element_type, resolve_dynamic_dims, tensor_shape

# vector instructions per S element: scale, rowmax, subtract, exp (2), rowsum, cast
SOFTMAX_WORK = 7.0


def cube_flops(tiles: int, keys: int, rows: int, d: int, dv: int) -> float:
    """Q@K^T and P@V of `tiles` query tiles of `rows` rows over `keys` keys each, on
    fractal-padded (16) sizes, as the cube computes them."""
    return (
        2.0
        * tiles
        * round_up(keys, FRACTAL)
        * round_up(rows, FRACTAL)
        * (round_up(d, FRACTAL) + round_up(dv, FRACTAL))
    )


def attention_cost(
    p: AttentionPlan, chip: ChipSpec, dims: Sequence[int] | None = None
) -> KernelCost:
    """The kernel's traffic and work: K/V re-read per query block, the softmax's vector
    work and the split chips' workspace round trips."""
    q = resolve_dynamic_dims(p.logical(p.q), dims)
    kdims = resolve_dynamic_dims(p.logical(p.k), dims)
    b, hq, sq, d = q
    hkv, skv = kdims[1], kdims[2]
    tiling = plan_tiling(IntOps(), p, chip, [b, hq, hkv, sq, skv])
    t, blocks = tiling.values, tiling.blocks
    tq, tkv = t["tq"], t["tkv"]
    w, dv = byte_width(p.in_elt), p.value_dim
    # keys each query block visits (causal: up to its last row)
    visited = 0
    for qi in range(t["qt"]):
        end = min(skv, (qi + 1) * tq) if p.causal else skv
        visited += min(end, skv)
    heads = b * hq
    kv_read = heads * visited * (d + dv) * w
    q_read = heads * sq * d * w
    s_elems = heads * visited * min(tq, sq)
    mask_read = 0
    if p.mask is not None:
        mask_read = s_elems * byte_width(element_type(p.mask))
    ws = 0
    if not p.l0c_to_ub:  # S and P@V f32, P in the input type: written and read back
        pv_blocks = heads * sum(
            -(-(min(skv, (qi + 1) * tq) if p.causal else skv) // tkv) for qi in range(t["qt"])
        )
        ws = s_elems * (4 + w) + pv_blocks * min(tq, sq) * dv * 4
    rows = heads * sq
    read, write = epilogue_io(
        p.rows, [p.raw], EpilogueSweep(rows, dv, rows // max(tq, 1), dv, 1, blocks), dims
    )
    flops = cube_flops(heads, visited, min(tq, sq), d, dv)
    masked = p.mask is not None or p.causal or p.positions is not None
    work = SOFTMAX_WORK * s_elems + 3.0 * s_elems * masked
    work += 2.0 * s_elems / max(tkv, 1) * dv + epilogue_work(p.rows, p.root, rows * dv)
    nq, nkv = min(tq, sq), min(tkv, skv)
    transfer = blended_transfer(
        [
            (q_read, nq * d * w),
            (kv_read, nkv * max(d, dv) * w),
            (mask_read + 2 * ws, nq * nkv * 4),
            (read + write, nq * dv * w),
        ]
    )
    # HBM: q, k, v and the mask once (a head's K/V blocks, re-read per query block,
    # and the mask rows, re-read per head, are far smaller than L2); the per-core
    # workspace slots are rewritten in place and never leave L2
    k_whole = b * hkv * skv * d * w
    mask_whole = 0
    if p.mask is not None:
        mask_whole = (
            si.num_elements(resolve_dynamic_dims(tensor_shape(p.mask), dims)) or 0
        ) * byte_width(element_type(p.mask))
    unique = q_read + k_whole + k_whole * dv // max(d, 1) + mask_whole
    return KernelCost(
        gm_read_bytes=q_read + kv_read + mask_read + read + ws,
        gm_write_bytes=write + ws,
        hbm_read_bytes=min(q_read + kv_read + mask_read, unique)
        + min(read, epilogue_unique_read(p.rows, [p.raw], dims)),
        hbm_write_bytes=write,
        vector_work=work,
        cube_flops=flops,
        transfer_bytes=transfer,
        ub_bytes=softmax_ub(p, p.tiles, chip) + epilogue_ub(p.rows),
        cube_cores_used=blocks,
        # split chips: both AIVs of a block work, each on half the query rows
        vector_cores_used=blocks * aivs_per_tile(chip, not p.l0c_to_ub),
        notes=[f"workspace round trips {2 * ws} bytes"] if ws else [],
    )
