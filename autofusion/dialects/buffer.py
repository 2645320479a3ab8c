"""The `buffer` dialect: Ascend kernels over memrefs in GM, UB, L1, L0A, L0B and L0C.

The level below graph fusion and above Ascend C. A `buffer.kernel` is one fused kernel:
GM memrefs and tiling scalars in, a per-core body out, written in the vocabulary of
Ascend C's vector programming model (asc-devkit docs, TPipe/TQue framework):

* `buffer.block_idx` / `buffer.block_num` (GetBlockIdx / GetBlockNum), and in mix
  kernels on split chips `buffer.sub_block_idx` and the cross-core flags
  `buffer.cross_core_set` / `buffer.cross_core_wait` between the AIC and its AIVs;
* queues with a buffer count (TQue + TPipe::InitBuffer): `alloc_queue`, then
  `queue_alloc` / `enque` / `deque` / `queue_free` (AllocTensor / EnQue / DeQue /
  FreeTensor); scratch buffers (TBuf) with `alloc_buf`;
* copies that name their path by their memory spaces (DataCopy / DataCopyPad / LoadData /
  Fixpipe); a path the hardware does not have does not verify;
* count-form vector ops on UB views (`buffer.vadd %dst, %a, %b, %count`; `vgather`
  picks elements at byte offsets, Gather), and `mmad`
  into L0C for cube work, fed by copies GM -> L1 -> L0A/L0B (with `transpose` for a
  transposed operand), `im2col` loads (LoadData3D) and drained by Fixpipe copies
  L0C -> GM that may convert f32 to f16/bf16; `workspace` for GM scratch (how cube and
  vector cores of split chips exchange tiles);
* `buffer.stage` regions marking the CopyIn / Compute / CopyOut steps of a tile, and
  the Cube step (the AIC's part on split chips);
* `buffer.pipe_barrier` (PipeBarrier<PIPE_X>), which the Mmad rules of mmad_rules.py
  ask for between mmads that accumulate into one L0C tile.

Memrefs are flat (1-D): like LocalTensor/GlobalTensor they are a base plus an element
count, and `buffer.view` offsets them (operator[]). Matrix layouts in L1/L0 are modelled
as row-major (ND); the fractal Nz/Zz/Zn formats the real copies convert to are a detail
of the copy, not of the IR.

Buffer sizes are runtime values from the tiling function, but every allocation also
carries a static `max_bytes` the tiling never exceeds; the kernel verifier sums those
(rounded to the space's alignment) per memory space against the chip's capacity.

The op definitions live in buffer_ops.py; this module adds `buffer.kernel`'s whole-kernel
verifier (buffer_verifier.py, which imports the ops) and declares the dialect, so that
the verifier's rules and the ops form no import cycle. Import the dialect from here.
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition

from autofusion.dialects import buffer_ops as ops
from autofusion.dialects.buffer_ops import *  # noqa: F403 (the dialect's public names)
from autofusion.dialects.buffer_verifier import verify_kernel


@irdl_op_definition
class KernelOp(ops.KernelOpBase):
    """`buffer.kernel` (see KernelOpBase), verified as a whole: buffer_verifier.py."""

    def verify_(self) -> None:
        verify_kernel(self)


Buffer = Dialect(
    "buffer",
    [
        KernelOp,
        ops.ReturnOp,
        ops.StageOp,
        ops.BlockIdxOp,
        ops.BlockNumOp,
        ops.SubBlockIdxOp,
        ops.CrossCoreSetOp,
        ops.CrossCoreWaitOp,
        ops.SyncAllOp,
        ops.AllocQueueOp,
        ops.AllocBufOp,
        ops.QueueAllocOp,
        ops.EnqueOp,
        ops.DequeOp,
        ops.QueueFreeOp,
        ops.ViewOp,
        ops.CopyOp,
        ops.VBinaryOp,
        ops.VUnaryOp,
        ops.VScalarOp,
        ops.VDupOp,
        ops.VCastOp,
        ops.VReduceOp,
        ops.VCompareOp,
        ops.VSelectOp,
        ops.VGatherOp,
        ops.GetValueOp,
        ops.SetValueOp,
        ops.Im2colOp,
        ops.WorkspaceOp,
        ops.MmadOp,
        ops.PipeBarrierOp,
        ops.LaunchOp,
        ops.DimOp,
    ],
    [ops.SpaceAttr, ops.QueueType],
)
