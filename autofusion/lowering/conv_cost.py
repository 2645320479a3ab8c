"""The conv kernel's cost: its GM/HBM traffic, cube and vector work."""

from __future__ import annotations

from collections.abc import Sequence

from autofusion.dtypes import byte_width
from autofusion.hardware import ChipSpec
from autofusion.lowering.conv_host import plan_tiling
from autofusion.lowering.conv_plan import ConvPlan
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


def conv_cost(p: ConvPlan, chip: ChipSpec, dims: Sequence[int] | None = None) -> KernelCost:
    """The kernel's traffic and work (module docstring: weight and input re-reads per tile,
    the im2col's round trips)."""
    g = p.geometry
    n = resolve_dynamic_dims(tensor_shape(p.x), dims)[0]
    tiling = plan_tiling(IntOps(), p, chip, n)
    t, blocks = tiling.values, tiling.blocks
    w = byte_width(p.in_elt)
    rows = n * g.co
    tiles = t["tiles"]
    h_stage = g.stage_rows(t["tn"])
    chunks = tiles * -(-t["tm"] // t["er"])
    external = [v for v in (p.raw, p.bias_rows) if v is not None]
    read, write = epilogue_io(
        p.rows, external, EpilogueSweep(rows, g.pixels, chunks, t["tn"], t["pt"], blocks), dims
    )
    bias_once = 0
    if p.bias is not None:
        bias_once = g.co * byte_width(element_type(p.bias))
        read += blocks * bias_once  # resident per core
    if p.direct:
        write += rows * g.pixels * byte_width(element_type(p.root.results[0]))
    ws = 0
    if p.ws_elt is not None and not p.l0c_to_ub:
        ws = rows * g.pixels * byte_width(p.ws_elt)
    # every tile reads its weight block and its input rows of every channel it needs
    # (pointwise: its [Cg x tn] pixel block); with the explicit im2col the AIVs read
    # the rows and write X_col [K x ncols] per tile, which the AIC reads back
    m_sweeps = n * g.group * t["mt"]
    weights = tiles * t["tm"] * g.k * w
    inputs = m_sweeps * g.cg * g.pixels * w if g.pointwise else tiles * g.cg * h_stage * g.w * w
    col = m_sweeps * g.k * g.pixels * w if p.explicit else 0
    local_col = m_sweeps * g.k * g.pixels if p.local else 0  # X_col elements built in UB
    flops = (
        2.0
        * n
        * g.group
        * round_up(g.cog, FRACTAL)
        * round_up(g.pixels, FRACTAL)
        * round_up(g.k, FRACTAL)
    )
    tn = min(t["tn"], g.pixels)
    stage_in = tn if g.pointwise else h_stage * g.w
    transfer = blended_transfer(
        [
            (weights, min(t["tm"], g.cog) * min(p.tiles.cstep, g.cg) * g.taps * w),
            (inputs, min(p.tiles.cstep, g.cg) * stage_in * w),
            (2 * col, g.taps * tn * w),
            (read + write + 2 * ws, min(t["er"], g.cog) * tn * 4),
        ]
    )
    # HBM on a cold L2: the input, the weight and the epilogue's operands once (an
    # image's input and a weight block are re-read while they are in L2); the
    # workspace slots are rewritten in place and never leave L2
    x_once = n * g.c * g.h * g.w * w
    w_once = g.co * g.k * w
    epilogue_in = epilogue_unique_read(p.rows, external, dims)
    notes = [f"workspace round trip {2 * ws} bytes"] if ws else []
    if col:
        notes.append(f"explicit im2col round trip {2 * col} bytes")
    im2col_ub = g.im2col_ub(p.tiles.tn, w) if p.explicit else 0
    if p.local:
        im2col_ub = g.local_ub(p.tiles.tn, p.tiles.cstep, w)
        notes.append(f"im2col in UB: {local_col} X_col elements gathered")
    return KernelCost(
        gm_read_bytes=weights + inputs + col + read + ws,
        gm_write_bytes=write + ws + col,
        hbm_read_bytes=min(inputs, x_once)
        + min(weights, w_once)
        + bias_once
        + min(read - blocks * bias_once, epilogue_in),
        hbm_write_bytes=write,
        # the gathers move every X_col element once
        vector_work=epilogue_work(p.rows, p.root, rows * g.pixels) + col // w + local_col,
        cube_flops=flops,
        transfer_bytes=transfer,
        ub_bytes=epilogue_ub(p.rows) + im2col_ub,
        cube_cores_used=blocks,
        vector_cores_used=(
            0 if p.direct and not p.explicit else blocks * aivs_per_tile(chip, bool(ws or col))
        ),
        notes=notes,
    )
