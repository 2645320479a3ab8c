"""The buffer-level interpreter: kernel launches, queues, and the rules Ascend C enforces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import InterpretationError

from autofusion.interpreter import run_function
from autofusion.mlir_io import default_context, parse_module

OPS = Path(__file__).parent / "filecheck" / "dialects" / "buffer" / "ops.mlir"


@pytest.mark.parametrize("n", [1, 7, 24, 100, 1000])
def test_tiled_kernel_covers_every_element_with_tails(n: int) -> None:
    module = parse_module(default_context(), OPS.read_text(), str(OPS))
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    y = run_function(module, {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, np.maximum(x + 1, 0))


KERNEL = """
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %n: index) attributes {{chip = "{chip}", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %bytes = arith.muli %n, %c4 : index
  %q = buffer.alloc_queue %bytes buffers 1 max_bytes 4096 of f32 : !buffer.queue<vecin>
  %o = buffer.alloc_queue %bytes buffers 1 max_bytes 4096 of f32 : !buffer.queue<vecout>
  {body}
  buffer.return
}}
func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %n = buffer.dim %x[0] : tensor<{n}xf32>
  %b = arith.constant 1 : index
  %y = buffer.launch @k blocks(%b) (%x) tiling(%n) dims() : (tensor<{n}xf32>) -> tensor<{n}xf32>
  func.return %y : tensor<{n}xf32>
}}
"""

COPY_THROUGH = """
  %t = buffer.queue_alloc %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %x to %t blocks %c1 x %n strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
  buffer.enque %q, %t : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
  %i = buffer.deque %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
  buffer.copy %i to %y blocks %c1 x %n strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  buffer.queue_free %q, %i : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
"""


def run_kernel(body: str, n: int = 8, chip: str = "Ascend910B1") -> np.ndarray:
    module = parse_module(default_context(), KERNEL.format(body=body, n=n, chip=chip), "k.mlir")
    return run_function(module, {"arg0": np.arange(n, dtype=np.float32)})["out0"]


def test_copy_through_a_queue() -> None:
    np.testing.assert_array_equal(run_kernel(COPY_THROUGH, n=5), np.arange(5))


def test_unwritten_outputs_are_nan() -> None:
    y = run_kernel(
        COPY_THROUGH.replace(
            "blocks %c1 x %n strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to",
            "blocks %c1 x %c4 strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to",
        )
    )
    assert np.array_equal(y[:4], np.arange(4)) and np.isnan(y[4:]).all()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%i = buffer.deque %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>",
            "DeQue on queue q with nothing enqueued",
        ),
        (
            "%a = buffer.queue_alloc %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>\n"
            "  %b = buffer.queue_alloc %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>",
            "AllocTensor on queue q with no free buffer",
        ),
        (
            "%a = buffer.queue_alloc %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>\n"
            "  %v = buffer.view %a[%c1] : memref<?xf32, #buffer.space<ub>>\n"
            '  buffer.vunary "exp" %v, %v, %c1 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>',
            "ub address 4 of q[0] is not 32-byte aligned",
        ),
        (
            "%a = buffer.queue_alloc %q : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>\n"
            "  %big = arith.constant 9999 : index\n"
            '  buffer.vunary "exp" %a, %a, %big : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>',
            "9999 elements at offset 0 overrun q[0]",
        ),
    ],
)
def test_misuse_is_an_error(body: str, message: str) -> None:
    with pytest.raises(InterpretationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run_kernel(body)


def test_unaligned_copies_need_data_copy_pad() -> None:
    np.testing.assert_array_equal(run_kernel(COPY_THROUGH, n=5, chip="Ascend910B2"), np.arange(5))
    with pytest.raises(
        InterpretationError, match="20-byte blocks on Ascend910: DataCopy moves 32-byte multiples"
    ):
        run_kernel(COPY_THROUGH, n=5, chip="Ascend910")
    np.testing.assert_array_equal(run_kernel(COPY_THROUGH, n=8, chip="Ascend910"), np.arange(8))


def test_runtime_sizes_stay_within_the_static_bound() -> None:
    with pytest.raises(InterpretationError, match="exceeds its static bound of 4096 bytes"):
        run_kernel(COPY_THROUGH, n=2000)


# ---------------------------------------------------------------------------------------
# Atomic adds and the all-core sync (mix kernels on split chips)
# ---------------------------------------------------------------------------------------

# Every block adds its row of x into y (SetAtomicAdd): block 0's AIVs zero y first, and
# the sync_all makes every block wait for that. AIV s of a block takes half s of the row.
ATOMIC_SUM = """
buffer.kernel @atomic_sum(%x: memref<?x{elt}, #buffer.space<gm>>, %y: memref<?x{elt}, #buffer.space<gm>>, %n: index) attributes {{chip = "{chip}", template = "rows", core_type = "mix", num_inputs = 1 : i64, num_outputs = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %width = arith.constant {width} : index
  %zero = arith.constant {zero} : {elt}
  %bid = buffer.block_idx
  %sb = buffer.sub_block_idx
  %half = arith.divui %n, %c2 : index
  %bytes = arith.muli %half, %width : index
  %zeros = buffer.alloc_buf "vecout" %bytes max_bytes 1024 -> memref<?x{elt}, #buffer.space<ub>>
  %t = buffer.alloc_buf "vecin" %bytes max_bytes 1024 -> memref<?x{elt}, #buffer.space<ub>>
  %mine = arith.muli %sb, %half : index
  %first = arith.cmpi eq, %bid, %c0 : index
  scf.if %first {{
    buffer.stage "copy_out" {{
      buffer.vdup %zeros, %zero, %half : memref<?x{elt}, #buffer.space<ub>>, {elt}
      %dst = buffer.view %y[%mine] : memref<?x{elt}, #buffer.space<gm>>
      buffer.copy %zeros to %dst blocks %c1 x %half strides %c0, %c0 : memref<?x{elt}, #buffer.space<ub>> to memref<?x{elt}, #buffer.space<gm>>
    }}
  }}
  buffer.sync_all
  %row = arith.muli %bid, %n : index
  %at = arith.addi %row, %mine : index
  buffer.stage "copy_in" {{
    %src = buffer.view %x[%at] : memref<?x{elt}, #buffer.space<gm>>
    buffer.copy %src to %t blocks %c1 x %half strides %c0, %c0 : memref<?x{elt}, #buffer.space<gm>> to memref<?x{elt}, #buffer.space<ub>>
  }}
  buffer.stage "copy_out" {{
    %dst = buffer.view %y[%mine] : memref<?x{elt}, #buffer.space<gm>>
    buffer.copy %t to %dst blocks %c1 x %half strides %c0, %c0 atomic true : memref<?x{elt}, #buffer.space<ub>> to memref<?x{elt}, #buffer.space<gm>>
  }}
  buffer.return
}}

func.func @main(%x: tensor<?x16x{elt}>) -> tensor<16x{elt}> {{
  %blocks = buffer.dim %x[0] : tensor<?x16x{elt}>
  %n = arith.constant 16 : index
  %y = buffer.launch @atomic_sum blocks(%blocks) (%x) tiling(%n) dims() : (tensor<?x16x{elt}>) -> tensor<16x{elt}>
  func.return %y : tensor<16x{elt}>
}}
"""

ATOMIC_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.float32, "i32": np.int32}
ATOMIC_WIDTH = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4}


def atomic_sum_text(elt: str = "f32", chip: str = "Ascend910B1") -> str:
    zero = "0" if elt.startswith("i") else "0.0"
    return ATOMIC_SUM.format(elt=elt, chip=chip, zero=zero, width=ATOMIC_WIDTH[elt])


def small_ints(shape: tuple[int, ...], elt: str, seed: int = 0) -> np.ndarray:
    """Small integers, so that every sum is exact in every type and order."""
    rng = np.random.default_rng(seed)
    return rng.integers(-8, 9, shape).astype(ATOMIC_TYPES[elt])


# The AIC of every block adds its partial product A[b] @ B[b] into y with an atomic
# Fixpipe (a split-K matmul): y = sum_b A[b] @ B[b]. Block 0's AIVs zero y before the
# sync_all.
SPLIT_K = """
buffer.kernel @split_k(%a: memref<?xf16, #buffer.space<gm>>, %b: memref<?xf16, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %m: index, %n: index, %k: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 2 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %false = arith.constant false
  %bid = buffer.block_idx
  %sb = buffer.sub_block_idx
  %mk = arith.muli %m, %k : index
  %kn = arith.muli %k, %n : index
  %mn = arith.muli %m, %n : index
  %mk2 = arith.muli %mk, %c2 : index
  %kn2 = arith.muli %kn, %c2 : index
  %mn4 = arith.muli %mn, %c4 : index
  %a1 = buffer.alloc_buf "a1" %mk2 max_bytes 8192 -> memref<?xf16, #buffer.space<l1>>
  %b1 = buffer.alloc_buf "b1" %kn2 max_bytes 8192 -> memref<?xf16, #buffer.space<l1>>
  %a2 = buffer.alloc_buf "a2" %mk2 max_bytes 8192 -> memref<?xf16, #buffer.space<l0a>>
  %b2 = buffer.alloc_buf "b2" %kn2 max_bytes 8192 -> memref<?xf16, #buffer.space<l0b>>
  %c = buffer.alloc_buf "co1" %mn4 max_bytes 16384 -> memref<?xf32, #buffer.space<l0c>>
  %half = arith.divui %mn, %c2 : index
  %hbytes = arith.muli %half, %c4 : index
  %zeros = buffer.alloc_buf "vecout" %hbytes max_bytes 8192 -> memref<?xf32, #buffer.space<ub>>
  %mine = arith.muli %sb, %half : index
  %first = arith.cmpi eq, %bid, %c0 : index
  scf.if %first {
    buffer.stage "copy_out" {
      buffer.vdup %zeros, %zero, %half : memref<?xf32, #buffer.space<ub>>, f32
      %dst = buffer.view %y[%mine] : memref<?xf32, #buffer.space<gm>>
      buffer.copy %zeros to %dst blocks %c1 x %half strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
    }
  }
  buffer.sync_all
  buffer.stage "cube" {
    %aoff = arith.muli %bid, %mk : index
    %boff = arith.muli %bid, %kn : index
    %av = buffer.view %a[%aoff] : memref<?xf16, #buffer.space<gm>>
    %bv = buffer.view %b[%boff] : memref<?xf16, #buffer.space<gm>>
    buffer.copy %av to %a1 blocks %m x %k strides %k, %k : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
    buffer.copy %bv to %b1 blocks %k x %n strides %n, %n : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<l1>>
    buffer.copy %a1 to %a2 blocks %m x %k strides %k, %k : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0a>>
    buffer.copy %b1 to %b2 blocks %k x %n strides %n, %n : memref<?xf16, #buffer.space<l1>> to memref<?xf16, #buffer.space<l0b>>
    %c16 = arith.constant 16 : index
    %m_mmad = arith.maxsi %m, %c16 : index
    buffer.mmad %c, %a2, %b2, %m_mmad, %n, %k, %false : memref<?xf32, #buffer.space<l0c>>, memref<?xf16, #buffer.space<l0a>>, memref<?xf16, #buffer.space<l0b>>
    buffer.copy %c to %y blocks %m x %n strides %n, %n atomic true : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
  }
  buffer.return
}

func.func @main(%a: tensor<?x16x32xf16>, %b: tensor<?x32x32xf16>) -> tensor<16x32xf32> {
  %blocks = buffer.dim %a[0] : tensor<?x16x32xf16>
  %m = arith.constant 16 : index
  %n = arith.constant 32 : index
  %k = arith.constant 32 : index
  %y = buffer.launch @split_k blocks(%blocks) (%a, %b) tiling(%m, %n, %k) dims() : (tensor<?x16x32xf16>, tensor<?x32x32xf16>) -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}
"""

# `rounds` times: every AIV writes its half row into the workspace, all cores sync, and
# each takes the other half of the next block's row (its other AIV wrote it), then all
# sync again before the slot is rewritten. After r rounds block b holds row b + r of x
# (mod the blocks), in the halves (s + r) % 2: y = roll(x, -r).
ROTATE = """
buffer.kernel @rotate(%x: memref<?xf32, #buffer.space<gm>>, %y: memref<?xf32, #buffer.space<gm>>, %n: index, %rounds: index, %ws_bytes: index) attributes {chip = "Ascend910B1", template = "rows", core_type = "mix", num_inputs = 1 : i64, num_outputs = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %bid = buffer.block_idx
  %nb = buffer.block_num
  %sb = buffer.sub_block_idx
  %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
  %half = arith.divui %n, %c2 : index
  %bytes = arith.muli %half, %c4 : index
  %t = buffer.alloc_buf "vecin" %bytes max_bytes 1024 -> memref<?xf32, #buffer.space<ub>>
  %row = arith.muli %bid, %n : index
  %mine = arith.muli %sb, %half : index
  %slot = arith.addi %row, %mine : index
  %next0 = arith.addi %bid, %c1 : index
  %next = arith.remui %next0, %nb : index
  %other = arith.subi %c1, %sb : index
  %theirs = arith.muli %other, %half : index
  %next_row = arith.muli %next, %n : index
  %from = arith.addi %next_row, %theirs : index
  buffer.stage "copy_in" {
    %src = buffer.view %x[%slot] : memref<?xf32, #buffer.space<gm>>
    buffer.copy %src to %t blocks %c1 x %half strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
  }
  scf.for %r = %c0 to %rounds step %c1 {
    buffer.stage "copy_out" {
      %dst = buffer.view %ws[%slot] : memref<?xf32, #buffer.space<gm>>
      buffer.copy %t to %dst blocks %c1 x %half strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
    }
    buffer.sync_all
    buffer.stage "copy_in" {
      %src = buffer.view %ws[%from] : memref<?xf32, #buffer.space<gm>>
      buffer.copy %src to %t blocks %c1 x %half strides %c0, %c0 : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
    }
    buffer.sync_all
  }
  %s_r = arith.addi %sb, %rounds : index
  %which = arith.remui %s_r, %c2 : index
  %held = arith.muli %which, %half : index
  %out = arith.addi %row, %held : index
  buffer.stage "copy_out" {
    %dst = buffer.view %y[%out] : memref<?xf32, #buffer.space<gm>>
    buffer.copy %t to %dst blocks %c1 x %half strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
  }
  buffer.return
}

func.func @main(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %blocks = buffer.dim %x[0] : tensor<?x16xf32>
  %rounds = arith.constant ROUNDS : index
  %n = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %ws_bytes = arith.muli %blocks, %c64 : index
  %y = buffer.launch @rotate blocks(%blocks) (%x) tiling(%n, %rounds, %ws_bytes) dims(%blocks) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return %y : tensor<?x16xf32>
}
"""

SYNC = "    buffer.sync_all\n"


def without_sync(which: int) -> str:
    """ROTATE without its first (0) or second (1) sync_all."""
    at = [i for i in range(len(ROTATE)) if ROTATE.startswith(SYNC, i)]
    assert len(at) == 2
    return ROTATE[: at[which]] + ROTATE[at[which] + len(SYNC) :]


def rotate_text(rounds: int, kernel: str = ROTATE) -> str:
    return kernel.replace("ROUNDS", str(rounds))


def rotate_input(blocks: int) -> np.ndarray:
    """Distinct rows, one per block."""
    return np.arange(blocks * 16, dtype=np.float32).reshape(blocks, 16)


def parse(text: str) -> ModuleOp:
    return parse_module(default_context(), text, "kernel.mlir")


@pytest.mark.parametrize("elt", sorted(ATOMIC_TYPES))
@pytest.mark.parametrize("blocks", [1, 3, 24])
def test_atomic_copies_of_every_block_add_up(elt: str, blocks: int) -> None:
    """y = sum over the blocks of x[b]: each adds into y, none overwrites it."""
    x = small_ints((blocks, 16), elt, seed=blocks)
    y = run_function(parse(atomic_sum_text(elt)), {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, x.sum(axis=0, dtype=np.float64).astype(y.dtype))
    if blocks > 1:  # a plain copy would leave the last block's row
        assert not np.array_equal(y, x[-1])


def test_an_atomic_add_rounds_in_the_destination_type() -> None:
    """SetAtomicAdd<half> adds in half, one rounding per add, in the order the cores
    run (block 0's first): 2048 + 1 ties back to 2048 (the f16 spacing there is 2),
    twice, though the exact sum 2050 is an f16 too; 1 + 1 + 2048 gives it."""
    for rows, want in (((2048, 1, 1), 2048), ((1, 1, 2048), 2050)):
        x = np.repeat(np.array(rows, np.float16)[:, None], 16, axis=1)
        y = run_function(parse(atomic_sum_text("f16")), {"arg0": x})["out0"]
        assert y.dtype == np.float16
        np.testing.assert_array_equal(y, np.full(16, want, np.float16))


def test_a_plain_copy_overwrites() -> None:
    """The same kernel without `atomic`: y is the row of the block that ran last."""
    x = small_ints((3, 16), "f32")
    text = atomic_sum_text("f32").replace(" atomic true", "")
    y = run_function(parse(text), {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, x[2])


def split_k_inputs(blocks: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (blocks, 16, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (blocks, 32, 32)).astype(np.float16)
    return {"arg0": a, "arg1": b}


def split_k_reference(feeds: dict[str, np.ndarray]) -> np.ndarray:
    a, b = (feeds[k].astype(np.float64) for k in ("arg0", "arg1"))
    return np.einsum("bmk,bkn->mn", a, b).astype(np.float32)


@pytest.mark.parametrize("blocks", [1, 4])
def test_atomic_fixpipe_adds_every_blocks_partial_product(blocks: int) -> None:
    feeds = split_k_inputs(blocks, seed=blocks)
    y = run_function(parse(SPLIT_K), feeds)["out0"]
    np.testing.assert_array_equal(y, split_k_reference(feeds))


@pytest.mark.parametrize(("blocks", "rounds"), [(1, 1), (4, 1), (4, 3), (3, 4), (24, 1)])
def test_sync_all_orders_gm_between_cores(blocks: int, rounds: int) -> None:
    """What a core writes to GM before a sync_all, every core reads after it: each
    round moves every row to the previous block, through the other AIV."""
    x = rotate_input(blocks)
    y = run_function(parse(rotate_text(rounds)), {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, np.roll(x, -rounds, axis=0))


def test_without_sync_all_the_cores_read_too_early() -> None:
    """Without the first sync_all a block reads its neighbour's workspace slot before
    the neighbour has written it (NaN: the workspace starts poisoned); without the
    second one, a block overwrites its slot before its neighbour has read it."""
    x = rotate_input(4)
    no_first, no_second = without_sync(0), without_sync(1)
    y = run_function(parse(rotate_text(1, no_first)), {"arg0": x})["out0"]
    assert np.isnan(y[:3]).all() and not np.isnan(y[3]).any()
    y = run_function(parse(rotate_text(2, no_second)), {"arg0": x})["out0"]
    assert not np.isnan(y).any() and not np.array_equal(y, np.roll(x, -2, axis=0))


@pytest.mark.parametrize(("chip", "cube_cores"), [("Ascend910B1", 24), ("Ascend910B3", 20)])
def test_sync_all_launches_at_most_the_cube_cores(chip: str, cube_cores: int) -> None:
    """A SyncAll kernel needs every block resident at once: blockDim <= the chip's
    cube cores; one more block is an error, not a hang."""
    module = parse(atomic_sum_text("f32", chip))
    x = small_ints((cube_cores, 16), "f32")
    y = run_function(module, {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, x.sum(axis=0))
    x = small_ints((cube_cores + 1, 16), "f32")
    message = (
        rf"@atomic_sum synchronizes all cores \(buffer.sync_all\) but is launched on "
        rf"{cube_cores + 1} blocks, more than the {cube_cores} cube cores of {chip}"
    )
    with pytest.raises(InterpretationError, match=message):
        run_function(module, {"arg0": x})


# sync_alls that not every core reaches: the cores that wait would wait forever
UNREACHED_SYNCS = {
    # only block 0 syncs
    "one_block": (
        "  buffer.sync_all\n",
        "  %only0 = arith.cmpi eq, %bid, %c0 : index\n"
        "  scf.if %only0 {\n    buffer.sync_all\n  }\n",
    ),
    # only the first AIV of each block
    "one_aiv": (
        "  buffer.sync_all\n",
        "  %aiv0 = arith.cmpi eq, %sb, %c0 : index\n  scf.if %aiv0 {\n    buffer.sync_all\n  }\n",
    ),
    # block b syncs b + 1 times
    "counts_differ": (
        "  buffer.sync_all\n",
        "  %times = arith.addi %bid, %c1 : index\n"
        "  scf.for %i = %c0 to %times step %c1 {\n    buffer.sync_all\n  }\n",
    ),
}


@pytest.mark.parametrize("case", sorted(UNREACHED_SYNCS))
def test_a_sync_all_some_core_never_reaches_is_an_error(case: str) -> None:
    old, new = UNREACHED_SYNCS[case]
    text = atomic_sum_text("f32")
    assert text.count(old) == 1
    module = parse(text.replace(old, new))
    with pytest.raises(
        InterpretationError,
        match=r"buffer.sync_all on block \d+ (aiv\d|aic): a core of the launch ended without "
        r"reaching it, so the others would wait forever",
    ):
        run_function(module, {"arg0": small_ints((2, 16), "f32")})


# each AIV waits for a flag its AIC sets only after the sync_all, which the AIC cannot
# pass before the AIVs arrive: a deadlock
FLAG_ACROSS_SYNC = (
    "  buffer.sync_all\n",
    '  buffer.cross_core_wait 0 on "aiv"\n'
    "  buffer.sync_all\n"
    '  buffer.cross_core_set 0 from "aic" after "s"\n',
)


def test_a_flag_set_only_after_the_sync_all_is_a_deadlock() -> None:
    old, new = FLAG_ACROSS_SYNC
    module = parse(atomic_sum_text("f32").replace(old, new))
    with pytest.raises(
        InterpretationError,
        match=r"buffer.cross_core_wait 0 on block 0 aiv0 without a matching "
        r"buffer.cross_core_set: the core would wait forever",
    ):
        run_function(module, {"arg0": small_ints((2, 16), "f32")})


# On the coupled chips one AI Core adds from UB (DataCopy without DataCopyPad on 910):
# each block writes its row of x into y, then adds it once more: y = 2x.
COUPLED_DOUBLE = """
buffer.kernel @double(%x: memref<?x{elt}, #buffer.space<gm>>, %y: memref<?x{elt}, #buffer.space<gm>>, %n: index) attributes {{chip = "{chip}", template = "rows", core_type = "aiv", num_inputs = 1 : i64, num_outputs = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %width = arith.constant {width} : index
  %bid = buffer.block_idx
  %bytes = arith.muli %n, %width : index
  %t = buffer.alloc_buf "vecout" %bytes max_bytes 1024 -> memref<?x{elt}, #buffer.space<ub>>
  %row = arith.muli %bid, %n : index
  %src = buffer.view %x[%row] : memref<?x{elt}, #buffer.space<gm>>
  %dst = buffer.view %y[%row] : memref<?x{elt}, #buffer.space<gm>>
  buffer.copy %src to %t blocks %c1 x %n strides %c0, %c0 : memref<?x{elt}, #buffer.space<gm>> to memref<?x{elt}, #buffer.space<ub>>
  buffer.copy %t to %dst blocks %c1 x %n strides %c0, %c0 : memref<?x{elt}, #buffer.space<ub>> to memref<?x{elt}, #buffer.space<gm>>
  buffer.copy %t to %dst blocks %c1 x %n strides %c0, %c0 atomic true : memref<?x{elt}, #buffer.space<ub>> to memref<?x{elt}, #buffer.space<gm>>
  buffer.return
}}

func.func @main(%x: tensor<?x16x{elt}>) -> tensor<?x16x{elt}> {{
  %blocks = buffer.dim %x[0] : tensor<?x16x{elt}>
  %n = arith.constant 16 : index
  %y = buffer.launch @double blocks(%blocks) (%x) tiling(%n) dims(%blocks) : (tensor<?x16x{elt}>) -> tensor<?x16x{elt}>
  func.return %y : tensor<?x16x{elt}>
}}
"""

# the atomic adds each coupled chip has (ATOMIC_ADD_BY_ARCH)
COUPLED_ATOMICS = [("Ascend910", "f32"), ("Ascend310P3", "f32"), ("Ascend310P3", "f16")]


def coupled_double_text(chip: str, elt: str) -> str:
    return COUPLED_DOUBLE.format(chip=chip, elt=elt, width=ATOMIC_WIDTH[elt])


@pytest.mark.parametrize(("chip", "elt"), COUPLED_ATOMICS)
def test_atomic_adds_on_coupled_chips(chip: str, elt: str) -> None:
    x = small_ints((3, 16), elt, seed=5)
    y = run_function(parse(coupled_double_text(chip, elt)), {"arg0": x})["out0"]
    np.testing.assert_array_equal(y, 2 * x)
