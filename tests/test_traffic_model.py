"""The L2 traffic model (autofusion/traffic_model.py) on cases computed by hand, and its
use in the fusion report."""

from __future__ import annotations

import dataclasses

import pytest
from test_report import CHAIN, KIB8

from autofusion.hardware import get_chip
from autofusion.mlir_io import default_context, parse_module
from autofusion.report import build_report
from autofusion.traffic_model import GRANULE, MAX_GRANULES, TrafficKernel, granule_for, simulate_l2

from differential import apply_pipeline


def run(
    kernels: list[TrafficKernel],
    sizes: dict[str, int],
    outputs: set[str],
    capacity: int,
    granule: int,
    **policy: bool,
) -> tuple[list[int], list[int], int]:
    got = simulate_l2(kernels, dict(sizes), set(outputs), capacity, granule=granule, **policy)
    return got.read, got.write, got.final_writeback


def test_chain_that_fits_moves_inputs_and_outputs_once() -> None:
    # x -> k0 -> a -> k1 -> b: a stays in L2 and dies there; b is written back at the end
    kernels = [
        TrafficKernel("k0", [("x", 10)], [("a", 10)]),
        TrafficKernel("k1", [("a", 10)], [("b", 10)]),
    ]
    assert run(kernels, {"x": 10, "a": 10, "b": 10}, {"b"}, 100, 10) == ([10, 0], [0, 0], 10)


def test_live_dirty_data_is_written_back_when_evicted_and_read_again() -> None:
    # granules of 5 bytes, L2 of 15. k0 (2 steps) reads x (4, streamed: not kept) and
    # writes a and c (2 granules each): step 0 a0 c0, step 1 x, a1, c1 -> 20 bytes, so
    # the LRU granule a0 (live: k1 reads it) is written back. k1 reads a: a0 misses (5),
    # a1 hits; both die there. c and d are outputs: 12 bytes written back at the end.
    kernels = [
        TrafficKernel("k0", [("x", 4)], [("a", 10), ("c", 10)]),
        TrafficKernel("k1", [("a", 10)], [("d", 2)]),
    ]
    sizes = {"x": 4, "a": 10, "c": 10, "d": 2}
    assert run(kernels, sizes, {"c", "d"}, 15, 5) == ([4, 5], [5, 0], 12)


def test_dead_dirty_data_is_dropped_or_written_back_by_policy() -> None:
    # granules of 4, L2 of 10: k0 writes a (2 granules); k1 reads a and writes b.
    kernels = [
        TrafficKernel("k0", [], [("a", 8)]),
        TrafficKernel("k1", [("a", 8)], [("b", 8)]),
    ]
    sizes = {"a": 8, "b": 8}
    # optimistic about dead data: each granule of a leaves as k1 reads it (no write-back)
    assert run(kernels, sizes, {"b"}, 10, 4) == ([0, 0], [0, 0], 8)
    # pessimistic: reading a0 makes it most recent, so b0 evicts the unread a1 (written
    # back, read again at step 1: LRU under a scan); b1 then evicts a0 (written back)
    assert run(kernels, sizes, {"b"}, 10, 4, drop_dead=False) == ([0, 4], [0, 8], 8)


def test_reads_of_a_slice_hit_in_proportion() -> None:
    # granules of 10, L2 of 100: t (10 granules) fills it; writing u evicts t's 5 oldest
    # (written back: k2 reads t). k2 reads a 20-byte column slice of t: a fifth of each
    # granule, so 5 x 2 bytes miss (the evicted half) and nothing is allocated for them.
    kernels = [
        TrafficKernel("k0", [], [("t", 100)]),
        TrafficKernel("k1", [], [("u", 50)]),
        TrafficKernel("k2", [("t", 20), ("u", 50)], [("v", 1)]),
    ]
    sizes = {"t": 100, "u": 50, "v": 1}
    assert run(kernels, sizes, {"v"}, 100, 10) == ([0, 0, 10], [0, 50, 0], 1)


def test_a_tensor_read_again_is_kept_and_one_read_for_the_last_time_streams() -> None:
    # w is read by k0 and k1: the second read hits; y is read once: streamed past L2, so
    # it does not evict z, which k1 reads back
    kernels = [
        TrafficKernel("k0", [("w", 40), ("y", 100)], [("z", 50)]),
        TrafficKernel("k1", [("w", 40), ("z", 50)], [("o", 5)]),
    ]
    sizes = {"w": 40, "y": 100, "z": 50, "o": 5}
    assert run(kernels, sizes, {"o"}, 100, 10) == ([140, 0], [0, 0], 5)


def test_extra_reads_and_a_tensor_bigger_than_l2() -> None:
    # k0 writes 30 granules into an L2 of 10: the 20 oldest go back to HBM (live); k1
    # reads all of it (20 granules miss, the last 10 hit) plus 7 bytes of its own
    # re-reads that L2 does not serve
    kernels = [
        TrafficKernel("k0", [], [("big", 300)]),
        TrafficKernel("k1", [("big", 300)], [("o", 1)], extra_read=7),
    ]
    assert run(kernels, {"big": 300, "o": 1}, {"o"}, 100, 10) == ([0, 207], [200, 0], 1)


def test_a_hot_input_stays_while_an_output_streams_out() -> None:
    # granules of 10, L2 of 30. k0 re-reads a (hot) at each of its 3 steps while it
    # writes o: a is read once; o's older granules make room (written back: an output)
    kernels = [TrafficKernel("k0", [("a", 20)], [("o", 30)], hot=frozenset({"a"}))]
    assert run(kernels, {"a": 20, "o": 30}, {"o"}, 30, 10) == ([20], [20], 10)


# the worked example of docs/ub-fusion.md: granules of 10, L2 of 40. k0 writes h; k1
# reads a weight w (3 granules, in the given role) and writes y; k2 reads h and y.
WORKED_SIZES = {"h": 10, "w": 30, "y": 20, "o": 10}


def worked_example(role: str) -> list[TrafficKernel]:
    w_role = {role: frozenset({"w"})}
    return [
        TrafficKernel("k0", [], [("h", 10)]),
        TrafficKernel("k1", [("w", 30)], [("y", 20)], **w_role),
        TrafficKernel("k2", [("h", 10), ("y", 20)], [("o", 10)]),
    ]


def test_a_weight_streaming_through_l2_evicts_older_data_unless_scan_resistant() -> None:
    # w is re-read briefly (transient). Under LRU, k1's last step (w2, y1) evicts h
    # (written back, read again by k2) and w0 (clean). With a scan-resistant L2 the
    # weight allocates nothing and h stays.
    kernels = worked_example("transient")
    lru = run(kernels, WORKED_SIZES, {"o"}, 40, 10)
    assert lru == ([0, 30, 10], [0, 10, 0], 10)
    resistant = run(kernels, WORKED_SIZES, {"o"}, 40, 10, scan_resistant=True)
    assert resistant == ([0, 30, 0], [0, 0, 0], 10)


def test_a_weight_read_once_past_l2_allocates_nothing_in_every_variant() -> None:
    # w read once (a decode-sized matmul) and bypassed: its 30 bytes come from HBM and
    # nothing of it enters L2, so h and y stay. Pessimistically the dead h and y are
    # written back at the end too (dirty, and kept).
    kernels = worked_example("bypass")
    want = ([0, 30, 0], [0, 0, 0], 10)
    assert run(kernels, WORKED_SIZES, {"o"}, 40, 10) == want
    assert run(kernels, WORKED_SIZES, {"o"}, 40, 10, scan_resistant=True) == want
    pessimistic = run(kernels, WORKED_SIZES, {"o"}, 40, 10, drop_dead=False)
    assert pessimistic == ([0, 30, 0], [0, 0, 0], 40)


def test_a_bypassed_read_does_not_look_in_l2() -> None:
    # k0 reads w and keeps it (k1 reads it again); k1 reads it past L2: from HBM again,
    # as the 910B's bypass is an address alias that L2 does not serve
    kernels = [
        TrafficKernel("k0", [("w", 20)], [("a", 10)]),
        TrafficKernel("k1", [("w", 20), ("a", 10)], [("o", 10)], bypass=frozenset({"w"})),
    ]
    sizes = {"w": 20, "a": 10, "o": 10}
    for policy in ({}, {"scan_resistant": True}, {"drop_dead": False}):
        assert run(kernels, sizes, {"o"}, 100, 10, **policy)[0] == [20, 20]


def test_a_bypassed_read_must_be_read_once_and_not_dirty_in_l2() -> None:
    sizes = {"w": 20, "a": 10}
    hot = [TrafficKernel("k0", [("w", 20)], [("a", 10)], hot=frozenset("w"), bypass=frozenset("w"))]
    with pytest.raises(ValueError, match="cannot be hot or transient"):
        run(hot, sizes, {"a"}, 100, 10)
    written = [
        TrafficKernel("k0", [], [("w", 20)]),
        TrafficKernel("k1", [("w", 20)], [("a", 10)], bypass=frozenset("w")),
    ]
    with pytest.raises(ValueError, match="dirty in L2 would read stale HBM"):
        run(written, sizes, {"a"}, 100, 10)


# ---- in the report -----------------------------------------------------------------------


def report(text: str, pipeline: str | None, l2_bytes: int | None = None) -> dict:
    module = parse_module(default_context(), text, "test.mlir")
    if pipeline:
        apply_pipeline(module, pipeline)
    chip = get_chip("Ascend910B1")
    if l2_bytes is not None:
        chip = dataclasses.replace(chip, l2_bytes=l2_bytes)
    return build_report(module, chip).to_json()


def test_report_unfused_chain_keeps_the_intermediate_in_l2() -> None:
    totals = report(CHAIN, None)["totals"]
    # logical: add reads a, b and writes s; relu reads s and writes r
    assert totals["gm_bytes_after"] == 5 * KIB8
    # HBM: a, b once, r written back at the end; s lives and dies in L2
    assert totals["hbm_bytes_after"] == totals["hbm_bytes_before"] == 3 * KIB8
    assert totals["hbm_final_writeback_bytes"] == KIB8
    # pessimistically the dead s is written back too
    assert totals["hbm_bytes_after_pessimistic"] == 4 * KIB8


def test_report_with_an_l2_too_small_for_the_intermediate() -> None:
    # an L2 of 1.5 x 8 KiB: when add writes s, a and b are gone (streamed) and s fits;
    # relu reads s (hit) and writes r; s is dead: 3 x 8 KiB still
    assert report(CHAIN, None, l2_bytes=KIB8 * 3 // 2)["totals"]["hbm_bytes_after"] == 3 * KIB8


def test_report_lists_hbm_bytes_per_kernel_and_matches_at_buffer_level() -> None:
    graph_level = report(CHAIN, "ub-fusion")
    (kernel,) = graph_level["kernels"]
    assert (kernel["hbm_read_bytes"], kernel["hbm_write_bytes"]) == (2 * KIB8, 0)
    assert graph_level["totals"]["hbm_bytes_after"] == 3 * KIB8
    buffer_level = report(CHAIN, "ub-fusion,lower-to-buffer")
    assert buffer_level["totals"] == graph_level["totals"]
    assert [k["hbm_read_bytes"] for k in buffer_level["kernels"]] == [2 * KIB8]


RESHAPE = """
func.func @main(%a: tensor<8x256xf32>) -> tensor<2048xf32> {
  %e = graph.exp %a : tensor<8x256xf32>
  %f = graph.reshape %e {shape = [2048]} : (tensor<8x256xf32>) -> tensor<2048xf32>
  %g = graph.relu %f : tensor<2048xf32>
  func.return %g : tensor<2048xf32>
}
"""


def test_a_reshape_is_a_free_view() -> None:
    got = report(RESHAPE, None)
    totals = got["totals"]
    assert totals["view_ops"] == 1 and totals["kernels"] == 2 and totals["kernels_before"] == 2
    # exp reads a and writes e; relu reads e (= f) and writes g: no bytes for the reshape
    assert totals["gm_bytes_after"] == 4 * KIB8
    # the reshape aliases e: relu's read of f hits the e that exp left in L2
    assert totals["hbm_bytes_after"] == 2 * KIB8
    fused = report(RESHAPE, "ub-fusion")["totals"]
    assert fused["view_ops"] == 1 and fused["gm_bytes_after"] == 4 * KIB8


@pytest.mark.parametrize("chip", ["Ascend910B1", "Ascend910B2", "Ascend910B4"])
def test_l2_sizes_of_910b(chip: str) -> None:
    want = {"Ascend910B1": 192, "Ascend910B2": 192, "Ascend910B4": 96}[chip]
    assert get_chip(chip).l2_bytes == want * 1024 * 1024
    assert "l2_bytes" not in get_chip(chip).estimated
    for estimated in ("Ascend910", "Ascend910B3", "Ascend310P3"):
        assert "l2_bytes" in get_chip(estimated).estimated


# h = exp(r) (512 KiB); y = x @ w, decode-sized (M = 4: each band of the 8 MiB weight w
# is read once); u = h @ w2. On an L2 of 2 MiB.
DECODE = """
func.func @main(%r: tensor<64x4096xf16>, %x: tensor<4x4096xf16>) -> (tensor<4x1024xf16>, tensor<64x64xf16>) {
  %w = graph.constant {name = "w"} shape_only : tensor<4096x1024xf16>
  %w2 = graph.constant {name = "w2"} shape_only : tensor<4096x64xf16>
  %h = graph.exp %r : tensor<64x4096xf16>
  %y = graph.matmul %x, %w : (tensor<4x4096xf16>, tensor<4096x1024xf16>) -> tensor<4x1024xf16>
  %u = graph.matmul %h, %w2 : (tensor<64x4096xf16>, tensor<4096x64xf16>) -> tensor<64x64xf16>
  func.return %y, %u : tensor<4x1024xf16>, tensor<64x64xf16>
}
"""


@pytest.mark.parametrize("pipeline", ["ub-fusion", "ub-fusion,lower-to-buffer"])
def test_report_reads_decode_weights_past_l2(pipeline: str) -> None:
    """Both weights are read past L2 (at buffer level, as the kernels' l2_bypass says):
    h stays in L2 while w streams, and every variant moves each byte once (the lower
    bound; pessimistically the dead h is written back too). Had w allocated in L2 (a
    transient B band), h would have been evicted: written back and read again."""
    module = parse_module(default_context(), DECODE, "decode.mlir")
    apply_pipeline(module, pipeline)
    chip = dataclasses.replace(get_chip("Ascend910B1"), l2_bytes=2 << 20)
    got = build_report(module, chip)
    traffic = [k.traffic for k in got.kernels if k.traffic is not None]
    assert [sorted(t.name_hint for t in k.bypass) for k in traffic] == [[], ["w"], ["w2"]]
    totals = got.totals()
    bound = totals["gm_bytes_lower_bound"]
    assert bound == (512 + 32 + 8192 + 512 + 8 + 8) * 1024
    assert totals["hbm_bytes_after"] == totals["hbm_bytes_after_optimistic"] == bound
    assert totals["hbm_bytes_after_pessimistic"] == bound + 512 * 1024
    cached = [dataclasses.replace(k, bypass=frozenset(), transient=k.bypass) for k in traffic]
    sizes = {key: n for k in cached for key, n in (*k.reads, *k.writes)}  # all read whole
    outputs = {key for key, _ in (*cached[1].writes, *cached[2].writes)}
    lru = simulate_l2(cached, sizes, outputs, chip.l2_bytes)
    assert lru.total == bound + 2 * 512 * 1024


def test_granule_grows_for_tensors_past_max_granules() -> None:
    """Up to MAX_GRANULES MB the granule is 1 MB; past it, the largest tensor has at
    most MAX_GRANULES granules (bounded work on a large batch)."""
    assert granule_for([]) == granule_for([10, 5]) == GRANULE
    assert granule_for([MAX_GRANULES * GRANULE]) == GRANULE
    big = 80 * (1 << 30)  # 80 GB of logits at batch 128
    g = granule_for([3, big])
    assert g == -(-big // MAX_GRANULES) and -(-big // g) == MAX_GRANULES
