"""HBM traffic behind a program's GM traffic: an L2 model over kernels in program order.

Every MTE transfer to and from GM goes through the chip's L2 (ascend.md 1.6; 192 MB on
Ascend910B1/B2, 96 MB on 910B4, chips.toml). The fusion report counts *logical* GM
bytes: what the kernels' DataCopies request. This module estimates how many of them
reach HBM: a least-recently-used write-back cache of `capacity` bytes, simulated over
the kernels in program order at the granularity of `GRANULE`-byte pieces of tensors.

A kernel's accesses are interleaved in time, as a kernel streams its operands from its
first tile to its last: with S steps (the most granules any of its streamed accesses
touches, at most MAX_STEPS), step j touches the j-th S-th of the granules of every
streamed read and write. Per kernel:

1. Reads. A granule of a tensor in L2 is a hit; a miss is read from HBM. A granule
   read for the last time (not re-read by this kernel, no later reader) dies there and
   leaves L2 when dead data is dropped (below). A read of b
   bytes of a tensor of s (a column slice read through strides) touches all its
   granules for b/s of their bytes. Inputs the kernel re-reads throughout (`hot`: a
   matmul's A, whose bands every N tile reads again; attention's K, V and mask; a
   vector kernel's row vectors and per-row tables) are touched at every step: they
   stay most recently used, and a hot granule evicted in the meantime is read again.
   `extra_read` adds the kernel's own re-reads that its template says L2 cannot serve.
2. Allocation. A missed granule is kept in L2 (clean) if the tensor is read again
   later, if the kernel re-reads it (hot, or `transient`: a matmul's B band, read by
   the group's M tiles one after the other), and is not a partial (strided) read. A
   tensor read once, for the last time, streams past L2 without allocating, as CANN
   does for operands that are not re-read (MatMulV3's tiling disables L2 for A or B
   unless the other dimension is split across cores, hicann/ops-nn
   matmul_v3_l2_cache.cpp; pypto's CachePolicy.NONE_CACHEABLE for weights read once,
   hicann/pypto docs/api/tensor/pypto-Tensor-set_cache_policy.md). afc's kernels ask
   for that only for weights (`bypass`, below); for an intermediate read for the last
   time it is an assumption (no hint can bypass data that may be dirty in L2, and a
   real L2 would keep such a miss as a clean line until it is evicted).
3. Writes allocate dirty granules, most recently used.
4. Eviction. While L2 holds more than `capacity`, the least recently used granule
   leaves; a dirty one is written back to HBM if its tensor is still live (read by this
   or a later kernel, or a graph output).
5. After the kernel, tensors that are dead (no later reader, not an output) leave L2
   without a write-back when `drop_dead` (below). At the end, the graph outputs' dirty
   granules are written back.

Bypass. A kernel input in `bypass` is read through a GlobalTensor whose L2 cache mode
is disabled (`SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE)`, asc-devkit docs
atlasascendc_api_07_00033; lowering/l2_hint.py decides which inputs, and the buffer
kernel's `l2_bypass` attribute records it): its bytes come straight from HBM and
allocate nothing in L2, under every variant below. On 2201 (910B) the hint is an address
alias (asc-devkit kernel_operator L2CacheAlter adds the runtime's `l2Cacheoffset` to the
GM address), so a bypassed read does not look in L2 either: it is only correct for data
that no dirty L2 line can hold newer, and the model refuses a bypassed read of a tensor
with dirty granules in L2. Each bypassed byte is read from HBM as often as the kernel
reads it; afc bypasses only inputs its tiling reads once, so the model takes a bypassed
input to be neither hot nor transient (it refuses one that is).

Scratch. A kernel's own GM tensors that live through it (a workspace it writes first
and reads and rewrites throughout: the ffn kernel's f32 accumulator, which every band
adds to, and its slots) are `scratch`: written at the kernel's first step (allocated
dirty, nothing read from HBM), touched at every step after (the most recently used
data, like hot inputs; a granule evicted meanwhile is written back, since the kernel
still needs it, and read back at its next touch), and dead when the kernel ends (dropped
without a write-back when dead data is dropped; pessimistically written back like
other dead dirty data).

First reads. An input a kernel reads whole before the rest of its work (`first`: the
ffn kernel's residual, which seeds its accumulator before the weights stream) is read
at its first step, in full, instead of a part per step.

Streams. Under LRU a matmul's B bands (a weight read once from HBM, then again by
the group's next M tiles) displace older data as they pass, intermediates written
before included. `scan_resistant=True` models a replacement policy that keeps such
briefly re-read data from displacing older lines (or an evict-first hint): transient
reads then allocate nothing. The report gives it as the optimistic figure.

Dead data. A write-back cache writes every dirty line back when it evicts it, dead or
not, unless the line is overwritten first. `drop_dead=True` (optimistic, the default)
assumes the memory planner reuses freed blocks, so later outputs overwrite dead lines
in L2 before they are evicted; `drop_dead=False` (pessimistic) keeps dead tensors in the
LRU order like live ones and writes every evicted or remaining dirty byte back (pypto's
note on large outputs says that happens when the next op's first buffer is not the
previous op's last output). The report gives both.

What the granules approximate: within a kernel, LRU order between its streams (a
weight streamed through L2 pushes out what was written before it, as real LRU does);
not modelled: set associativity, line size (128-512 B), prefetch, and L2 bandwidth (the
cost model's roofline has that). Graph inputs and weights start outside L2 (a cold L2
per run).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

GRANULE = 1 << 20  # bytes of a tensor moved in and out of the model's L2 together
MAX_STEPS = 64  # time steps a kernel's accesses are interleaved over
# the most granules of one tensor: the model's cost is linear in granules (hot inputs
# are touched at every step), so for tensors past MAX_GRANULES MB the granule grows
MAX_GRANULES = 2048


@dataclass
class TrafficKernel:
    """One kernel as the L2 model sees it: which tensors it reads and writes.

    `reads` and `writes` name each tensor once: (tensor, bytes the kernel reads or
    writes of it, each byte once). `hot` inputs are re-read throughout the kernel,
    `transient` ones briefly, `bypass` ones are read past L2, `first` ones whole before
    the rest; `scratch` tensors are the kernel's own, written first and used throughout
    (see the module docstring).
    `extra_read` is HBM traffic of the kernel's own re-reads that L2 cannot serve (its
    template's estimate)."""

    name: str
    reads: list[tuple[Hashable, int]] = field(default_factory=list)
    writes: list[tuple[Hashable, int]] = field(default_factory=list)
    extra_read: int = 0
    hot: frozenset[Hashable] = frozenset()
    transient: frozenset[Hashable] = frozenset()
    bypass: frozenset[Hashable] = frozenset()  # inputs read past L2 (module docstring)
    # the kernel's own GM tensors (key, bytes), live through the kernel only (docstring)
    scratch: list[tuple[Hashable, int]] = field(default_factory=list)
    first: frozenset[Hashable] = frozenset()  # inputs read whole at the first step


@dataclass
class HbmTraffic:
    """HBM bytes per kernel (reads, writes incl. write-backs of evicted lines) and the
    write-back of dirty graph outputs (and, pessimistically, dead data) at the end."""

    read: list[int]
    write: list[int]
    final_writeback: int

    @property
    def total(self) -> int:
        return sum(self.read) + sum(self.write) + self.final_writeback


def granule_for(sizes: Iterable[int]) -> int:
    """The granule for tensors of `sizes`: GRANULE, or coarser so that the largest has at
    most MAX_GRANULES (a batch of 128 long sequences has activations of GBs: bounded
    work per kernel, at the price of a coarser LRU order)."""
    largest = max(sizes, default=0)
    return max(GRANULE, -(-largest // MAX_GRANULES))


def granules(size: int, granule: int = GRANULE) -> list[int]:
    """The byte sizes of a tensor's granules (the last one partial)."""
    if size <= 0:
        return []
    n = -(-size // granule)
    return [granule] * (n - 1) + [size - granule * (n - 1)]


@dataclass
class _Access:
    tensor: Hashable
    sizes: list[int]  # its granules' bytes
    part: float  # the fraction of each granule this kernel reads (1.0: all of it)
    allocate: bool  # whether a missed granule is kept in L2
    write: bool = False
    last: bool = False  # this kernel reads it for the last time and dead data is dropped


class _L2:
    """Granules (tensor, index) -> (bytes, dirty) in LRU order."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.lines: OrderedDict[tuple[Hashable, int], tuple[int, bool]] = OrderedDict()
        self.total = 0

    def touch(self, key: tuple[Hashable, int]) -> bool:
        if key in self.lines:
            self.lines.move_to_end(key)
            return True
        return False

    def insert(self, key: tuple[Hashable, int], nbytes: int, dirty: bool) -> None:
        old = self.lines.pop(key, None)
        if old is not None:
            self.total -= old[0]
        self.lines[key] = (nbytes, dirty)
        self.total += nbytes

    def remove(self, key: tuple[Hashable, int]) -> bool:
        """Drop one granule if present (without a write-back); whether it was."""
        line = self.lines.pop(key, None)
        if line is None:
            return False
        self.total -= line[0]
        return True

    def drop(self, tensor: Hashable, count: int) -> None:
        for j in range(count):
            line = self.lines.pop((tensor, j), None)
            if line is not None:
                self.total -= line[0]

    def evict(self, live: Callable[[Hashable], bool]) -> int:
        """Evict LRU granules down to capacity; return the bytes written back."""
        written = 0
        while self.total > self.capacity and self.lines:
            (tensor, _), (nbytes, dirty) = self.lines.popitem(last=False)
            self.total -= nbytes
            if dirty and live(tensor):
                written += nbytes
        return written


def simulate_l2(
    kernels: Sequence[TrafficKernel],
    sizes: dict[Hashable, int],
    outputs: set[Hashable],
    capacity: int,
    drop_dead: bool = True,
    granule: int = GRANULE,
    scan_resistant: bool = False,
) -> HbmTraffic:
    """The HBM traffic of `kernels` run in order on an L2 of `capacity` bytes.

    `sizes` gives every tensor's full size in bytes; `outputs` are the tensors that must
    reach HBM (graph outputs). See the module docstring for the model."""
    last_use: dict[Hashable, int] = {}
    for i, k in enumerate(kernels):
        for t, _ in (*k.reads, *k.scratch):
            last_use[t] = i
    for t in outputs:
        last_use[t] = len(kernels)
    l2 = _L2(capacity)
    reads: list[int] = []
    writes: list[int] = []
    for i, k in enumerate(kernels):

        def live(t: Hashable, i: int = i) -> bool:
            # during kernel i: read by it or later, or an output (or kept when
            # pessimistic); a granule of an input read at a later step must come back
            return last_use.get(t, -1) >= i or not drop_dead

        hbm_read = float(k.extra_read)
        hbm_write = 0
        hot: list[_Access] = []
        firsts: list[_Access] = []
        streams: list[_Access] = []
        bypassed: list[_Access] = []
        for t, b in k.reads:
            size = max(sizes.get(t, b), b, 1)
            part = b / size
            if t in k.bypass:
                bypassed.append(_bypass(k, t, granules(size, granule), part, l2))
                hbm_read += b  # straight from HBM, nothing allocated or looked up
                continue
            again = last_use.get(t, -1) > i or t in k.hot
            again = again or (t in k.transient and not scan_resistant)
            access = _Access(t, granules(size, granule), part, part >= 1.0 and again)
            access.last = drop_dead and not again and last_use.get(t, -1) == i
            (hot if t in k.hot else firsts if t in k.first else streams).append(access)
        for t, b in k.writes:
            streams.append(_Access(t, granules(b, granule), 1.0, True, write=True))
        scratch = [_Access(t, granules(b, granule), 1.0, True, write=True) for t, b in k.scratch]
        steps = max(1, min(MAX_STEPS, max((len(a.sizes) for a in streams), default=1)))
        for step in range(steps):
            for a in scratch:
                for j, nbytes in enumerate(a.sizes):
                    # written at the first step; later a granule evicted meanwhile comes back
                    if not l2.touch((a.tensor, j)):
                        hbm_read += nbytes if step else 0
                        l2.insert((a.tensor, j), nbytes, True)
            for a in hot:
                for j, nbytes in enumerate(a.sizes):
                    if not l2.touch((a.tensor, j)):
                        hbm_read += nbytes * a.part
                        if a.allocate:
                            l2.insert((a.tensor, j), nbytes, False)
            for a in (*(firsts if step == 0 else ()), *streams):
                n = len(a.sizes)
                lo, hi = (0, n) if a in firsts else (step * n // steps, (step + 1) * n // steps)
                for j in range(lo, hi):
                    if a.write:
                        l2.insert((a.tensor, j), a.sizes[j], True)
                    elif a.last and a.part >= 1.0:
                        # its last read: the granule dies here and leaves (drop_dead)
                        if not l2.remove((a.tensor, j)):
                            hbm_read += a.sizes[j]
                    elif not l2.touch((a.tensor, j)):
                        hbm_read += a.sizes[j] * a.part
                        if a.allocate:
                            l2.insert((a.tensor, j), a.sizes[j], False)
            hbm_write += l2.evict(live)
        if drop_dead:
            for a in (*hot, *firsts, *streams, *bypassed, *scratch):
                if last_use.get(a.tensor, -1) <= i:
                    l2.drop(a.tensor, len(a.sizes))
        reads.append(round(hbm_read))
        writes.append(hbm_write)
    final = sum(
        nbytes
        for (t, _), (nbytes, dirty) in l2.lines.items()
        if dirty and (t in outputs or not drop_dead)
    )
    return HbmTraffic(reads, writes, final)


def _bypass(k: TrafficKernel, t: Hashable, sizes: list[int], part: float, l2: _L2) -> _Access:
    """A bypassed read of `t` by `k`, checked against the model's preconditions."""
    if t in k.hot or t in k.transient:
        raise ValueError(f"{k.name}: a bypassed input is read once, it cannot be hot or transient")
    if any(l2.lines.get((t, j), (0, False))[1] for j in range(len(sizes))):
        raise ValueError(f"{k.name}: a bypassed read of data dirty in L2 would read stale HBM")
    return _Access(t, sizes, part, allocate=False)
