"""Shape rules of the graph dialect (ONNX semantics), shared by verifiers and builders.

Dimensions are ints; a dynamic dimension (`?`) is `DYN`. Every rule raises `ShapeError`
with a message that names the offending dimension when the shapes do not fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX

DYN = DYNAMIC_INDEX
Shape = tuple[int, ...]
INT64_MAX = 2**63 - 1  # MLIR stores a dimension in an int64


class ShapeError(ValueError):
    """Operand shapes or attributes that the op's semantics do not allow."""


def check_dims(shape: Sequence[int]) -> None:
    """Refuse a dimension beyond the int64 MLIR stores it in."""
    for i, d in enumerate(shape):
        if d > INT64_MAX:
            raise ShapeError(f"dimension {i} ({d}) does not fit in int64")


def fmt(shape: Sequence[int]) -> str:
    return "x".join("?" if d == DYN else str(d) for d in shape) if shape else "scalar"


def dims_compatible(a: int, b: int) -> bool:
    return a == b or DYN in (a, b)


def shapes_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(dims_compatible(x, y) for x, y in zip(a, b))


def num_elements(shape: Sequence[int]) -> int | None:
    n = 1
    for d in shape:
        if d == DYN:
            return None
        n *= d
    return n


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def broadcast(*shapes: Sequence[int]) -> Shape:
    """numpy/ONNX multidirectional broadcasting."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d not in (1, DYN)}
        if len(known) > 1:
            raise ShapeError(
                "shapes " + ", ".join(fmt(s) for s in shapes) + f" do not broadcast (dim {i})"
            )
        if known:
            out.append(known.pop())
        elif DYN in dims:
            out.append(DYN)
        else:
            out.append(1)
    return tuple(out)


def broadcasts_to(src: Sequence[int], dst: Sequence[int]) -> bool:
    """Whether `src` broadcasts to exactly `dst` (unidirectional broadcasting)."""
    if len(src) > len(dst):
        return False
    try:
        return shapes_compatible(broadcast(src, dst), dst)
    except ShapeError:
        return False


def require_broadcast(src: Sequence[int], dst: Sequence[int], what: str) -> None:
    """Raise unless `src` (named `what`) broadcasts to exactly `dst`."""
    if not broadcasts_to(src, dst):
        raise ShapeError(f"{what} {fmt(src)} does not broadcast to {fmt(dst)}")


def matmul(a: Sequence[int], b: Sequence[int]) -> Shape:
    """ONNX MatMul (numpy matmul): batch dims broadcast, 1-D operands are promoted."""
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else tuple(b)
    if not dims_compatible(a2[-1], b2[-2]):
        raise ShapeError(
            f"matmul contracting dimensions differ: {fmt(a)} has K={fmt(a2[-1:])}, "
            f"{fmt(b)} has K={fmt(b2[-2:-1])}"
        )
    batch = broadcast(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def gemm(a: Sequence[int], b: Sequence[int], trans_a: bool, trans_b: bool) -> Shape:
    if len(a) != 2 or len(b) != 2:
        raise ShapeError(f"gemm operands must be 2-D, got {fmt(a)} and {fmt(b)}")
    m, k = (a[1], a[0]) if trans_a else (a[0], a[1])
    k2, n = (b[1], b[0]) if trans_b else (b[0], b[1])
    if not dims_compatible(k, k2):
        raise ShapeError(f"gemm contracting dimensions differ: {fmt([k])} vs {fmt([k2])}")
    return (m, n)


def _window_out(
    size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int, ceil: bool
) -> int:
    if size == DYN:
        return DYN
    span = dilation * (kernel - 1) + 1
    pad = pad_begin + pad_end
    num = size + pad - span
    # with ceil_mode a window larger than the (padded) input still gives one output when
    # ceil(num / stride) is 0: ONNX AveragePool/MaxPool, ONNX Runtime and PyTorch agree
    # (the transformers EfficientNet pooler is such a window)
    out = -(-num // stride) + 1 if ceil else num // stride + 1
    # with ceil_mode the last window must start inside the input or the left padding
    # (ONNX MaxPool/AveragePool reference, same rule as PyTorch)
    if ceil and (out - 1) * stride >= size + pad_begin:
        out -= 1
    if out < 1:
        raise ShapeError(f"window of extent {span} does not fit input extent {size} + pad {pad}")
    return out


def window_nd(
    x: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool = False,
) -> Shape:
    """Output spatial dims of a sliding window over [N, C, D...], pads = [begin..., end...]."""
    r = len(x) - 2
    for name, vals, n in (
        ("kernel", kernel, r),
        ("strides", strides, r),
        ("pads", pads, 2 * r),
        ("dilations", dilations, r),
    ):
        if len(vals) != n:
            raise ShapeError(f"{name} must have {n} values, got {len(vals)}")
    if any(v < 1 for v in (*kernel, *strides, *dilations)) or any(p < 0 for p in pads):
        raise ShapeError("kernel, strides and dilations must be >= 1 and pads >= 0")
    return tuple(
        _window_out(x[2 + k], kernel[k], strides[k], pads[k], pads[r + k], dilations[k], ceil_mode)
        for k in range(r)
    )


def conv2d(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> Shape:
    if len(x) != 4 or len(w) != 4:
        raise ShapeError(f"conv2d expects 4-D NCHW input and weight, got {fmt(x)}, {fmt(w)}")
    if group < 1:
        raise ShapeError(f"group must be >= 1, got {group}")
    if x[1] != DYN and w[1] != DYN and x[1] != w[1] * group:
        raise ShapeError(
            f"input has {x[1]} channels but weight expects {w[1]} x group {group} = {w[1] * group}"
        )
    if w[0] != DYN and w[0] % group:
        raise ShapeError(f"output channels {w[0]} are not divisible by group {group}")
    h, wd = window_nd(x, w[2:], strides, pads, dilations)
    return (x[0], w[0], h, wd)


def reduce(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> Shape:
    rank = len(x)
    norm = {normalize_axis(a, rank) for a in axes} if axes else set(range(rank))
    if len(norm) != len(axes) and axes:
        raise ShapeError(f"duplicate reduction axes {list(axes)}")
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in norm)


def reshape(x: Sequence[int], shape: Sequence[int]) -> Shape:
    """ONNX Reshape with allowzero=0: 0 copies the input dim, one -1 is inferred."""
    if sum(1 for d in shape if d == -1) > 1:
        raise ShapeError("reshape shape may contain at most one -1")
    out: list[int] = []
    for i, d in enumerate(shape):
        if d == 0:
            if i >= len(x):
                raise ShapeError(f"reshape dim {i} is 0 but the input has rank {len(x)}")
            out.append(x[i])
        elif d < -1:
            raise ShapeError(f"reshape dim {d} is invalid")
        else:
            out.append(d)
    # a dim copied by 0 is the same factor on both sides: it cancels, so a dynamic batch
    # copied through does not hide the -1 ([?, 4, 2048, 128] -> [0, 4, 1, -1, 128])
    copied = {i for i, d in enumerate(shape) if d == 0}
    total = num_elements([d for i, d in enumerate(x) if i not in copied])
    if -1 in out:
        known = num_elements([d for i, d in enumerate(out) if d != -1 and i not in copied])
        idx = out.index(-1)
        if total is None or known is None:
            out[idx] = DYN
        elif known == 0 or total % known:
            raise ShapeError(f"cannot reshape {fmt(x)} into {list(shape)}")
        else:
            out[idx] = total // known
    elif (
        total is not None
        and (n := num_elements([d for i, d in enumerate(out) if i not in copied])) is not None
        and n != total
    ):
        counts = (num_elements(x), num_elements(out))
        if None in counts:
            raise ShapeError(f"cannot reshape {fmt(x)} into {fmt(out)}")
        raise ShapeError(
            f"cannot reshape {fmt(x)} ({counts[0]} elements) into {fmt(out)} ({counts[1]})"
        )
    return tuple(out)


def transpose(x: Sequence[int], perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"perm {list(perm)} is not a permutation of rank {len(x)}")
    return tuple(x[p] for p in perm)


def concat(shapes: Sequence[Sequence[int]], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("concat needs at least one operand")
    rank = len(shapes[0])
    ax = normalize_axis(axis, rank)
    out = list(shapes[0])
    for s in shapes[1:]:
        if len(s) != rank:
            raise ShapeError(f"concat operands have different ranks: {fmt(shapes[0])}, {fmt(s)}")
        for i in range(rank):
            if i == ax:
                out[i] = DYN if DYN in (out[i], s[i]) else out[i] + s[i]
            elif not dims_compatible(out[i], s[i]):
                raise ShapeError(f"concat operands differ in dim {i}: {fmt(shapes[0])}, {fmt(s)}")
            elif out[i] == DYN:
                out[i] = s[i]
    return tuple(out)


def split(x: Sequence[int], axis: int, sizes: Sequence[int]) -> list[Shape]:
    ax = normalize_axis(axis, len(x))
    if any(s < 0 for s in sizes):
        raise ShapeError(f"split sizes must be >= 0, got {list(sizes)}")
    if x[ax] != DYN and sum(sizes) != x[ax]:
        raise ShapeError(f"split sizes {list(sizes)} do not add up to dim {ax} = {x[ax]}")
    return [tuple(s if i == ax else d for i, d in enumerate(x)) for s in sizes]


def slice_dim(size: int, start: int, end: int, step: int) -> int:
    if step == 0:
        raise ShapeError("slice step must not be 0")
    if size == DYN:
        return DYN
    return len(range(*slice(start, end, step).indices(size)))


def slice_(
    x: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int],
) -> Shape:
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ShapeError("slice starts, ends, axes and steps must have the same length")
    out = list(x)
    seen: set[int] = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        ax = normalize_axis(a, len(x))
        if ax in seen:
            raise ShapeError(f"slice axis {a} appears twice")
        seen.add(ax)
        out[ax] = slice_dim(x[ax], s, e, st)
    return tuple(out)


def gather(data: Sequence[int], indices: Sequence[int], axis: int) -> Shape:
    ax = normalize_axis(axis, len(data))
    return (*data[:ax], *indices, *data[ax + 1 :])


def expand(x: Sequence[int], shape: Sequence[int]) -> Shape:
    """ONNX Expand: broadcast x against `shape`; -1 in `shape` means a dynamic size."""
    target = tuple(DYN if d == -1 else d for d in shape)
    if any(d < 0 and d != DYN for d in target):
        raise ShapeError(f"expand shape {list(shape)} is invalid")
    return broadcast(x, target)


def pad(x: Sequence[int], pads: Sequence[int]) -> Shape:
    rank = len(x)
    if len(pads) != 2 * rank:
        raise ShapeError(f"pads must have {2 * rank} values for rank {rank}, got {len(pads)}")
    out = []
    for i, d in enumerate(x):
        if d == DYN:
            out.append(DYN)
            continue
        n = d + pads[i] + pads[i + rank]
        if n < 0:
            raise ShapeError(f"pads remove more than dim {i} holds")
        out.append(n)
    return tuple(out)
