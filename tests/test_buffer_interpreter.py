"""The buffer-level interpreter: kernel launches, queues, and the rules Ascend C enforces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
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
