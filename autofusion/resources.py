"""Weights as `dense_resource` blobs, in MLIR's format.

xDSL keeps resource blobs in the builtin dialect's OpAsmDialectInterface as hex strings
(`"0x" + 4-byte little-endian alignment + raw little-endian data`, MLIR's layout), and
prints them in the `{-# dialect_resources: ... #-}` section of the file. This module
converts between those blobs and numpy arrays, caching the decoded arrays.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import Builtin, DenseIntOrFPElementsAttr, DenseResourceAttr, TensorType
from xdsl.ir import Attribute

from autofusion import dtypes

_ALIGNMENT = 16
# decoded arrays by (handle, type); blobs are immutable once registered
_decoded: dict[tuple[str, Attribute], np.ndarray] = {}
# the name each handle was asked for; the process-wide registry renames a handle whose
# name is taken (`w` -> `w_0`), printing restores the asked-for name per module
_asked: dict[str, str] = {}


def declared(handle: str, asked: str) -> str:
    """Record that `handle` was declared for the name `asked`; return `handle`."""
    _asked.setdefault(handle, asked)
    return handle


def _interface() -> OpAsmDialectInterface:
    interface = Builtin.get_interface(OpAsmDialectInterface)
    assert interface is not None, "xDSL's builtin dialect has no OpAsmDialectInterface"
    return interface


def add_blob(hint: str, array: np.ndarray, tensor_type: TensorType) -> DenseResourceAttr:
    """Store `array` (in storage form) as a blob; return the attribute referencing it.

    Blobs are process-wide (xDSL keeps them in the builtin dialect): registering the same
    bytes under the same name again reuses the handle, so a model built twice in one
    process prints the same both times.
    """
    interface = _interface()
    data = dtypes.to_bytes(np.asarray(array), tensor_type.element_type)
    blob = "0x" + _ALIGNMENT.to_bytes(4, "little").hex() + data.hex()
    name = _sanitize(hint)
    candidate, suffix = name, 0
    while (existing := interface.lookup(candidate)) is not None:
        if existing == blob:
            _decoded[(candidate, tensor_type)] = np.asarray(array).reshape(tensor_type.get_shape())
            return DenseResourceAttr.from_params(candidate, tensor_type)
        candidate, suffix = f"{name}_{suffix}", suffix + 1
    handle = declared(interface.declare_resource(name), name)
    interface.parse_resource(handle, blob)
    _decoded[(handle, tensor_type)] = np.asarray(array).reshape(tensor_type.get_shape())
    return DenseResourceAttr.from_params(handle, tensor_type)


def canonical_handles(handles: list[str]) -> dict[str, str]:
    """Print names for the handles one module uses (in order of first use): each gets the
    name it was asked for, or that name with `_1`, `_2`... when the module already uses
    it, so the printed text does not depend on what else the process registered."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for handle in handles:
        if handle in names:
            continue
        base = _asked.get(handle, handle)
        candidate, suffix = base, 0
        while candidate in taken:
            suffix += 1
            candidate = f"{base}_{suffix}"
        taken.add(candidate)
        names[handle] = candidate
    return names


def blob_text(handle: str) -> str | None:
    """The blob of `handle` as MLIR prints it ("0x" + alignment + data), if it has one."""
    return _interface().lookup(handle)


def _sanitize(hint: str) -> str:
    """Resource handles are bare identifiers: letters, digits, `_`, `.`, `$`, `-`."""
    out = "".join(c if c.isalnum() or c in "_.$-" else "_" for c in hint)
    if not out or not (out[0].isalpha() or out[0] == "_"):
        out = "w_" + out
    return out


def blob_array(attr: DenseResourceAttr) -> np.ndarray | None:
    """The values of a resource attribute, or None when its blob was never given."""
    tensor_type = attr.type
    assert isinstance(tensor_type, TensorType)
    key = (attr.resource_handle.data, tensor_type)
    if key in _decoded:
        return _decoded[key]
    blob = _interface().lookup(attr.resource_handle.data)
    if not blob:
        return None
    raw = bytes.fromhex(blob[2:])[4:]  # drop "0x" and the alignment word
    shape = tensor_type.get_shape()
    expected = int(np.prod(shape, dtype=np.int64)) * dtypes.byte_width(tensor_type.element_type)
    if len(raw) != expected:
        raise ValueError(
            f"resource '{attr.resource_handle.data}' holds {len(raw)} bytes, "
            f"but {tensor_type} needs {expected}"
        )
    arr = dtypes.from_bytes(raw, tensor_type.element_type, shape)
    _decoded[key] = arr
    return arr


def dense_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a dense elements attribute, in storage form."""
    tensor_type = attr.type
    assert isinstance(tensor_type, TensorType)
    shape = tensor_type.get_shape()
    arr = dtypes.from_bytes(attr.data.data, tensor_type.element_type, (-1,))
    if arr.size == 1 and int(np.prod(shape, dtype=np.int64)) != 1:
        return np.broadcast_to(arr.reshape(()), shape).copy()
    return arr.reshape(shape)


def dense_attr(array: np.ndarray, tensor_type: TensorType) -> DenseIntOrFPElementsAttr:
    """A dense elements attribute holding `array` (storage form) with `tensor_type`."""
    from xdsl.dialects.builtin import BytesAttr

    data = dtypes.to_bytes(np.asarray(array).reshape(-1), tensor_type.element_type)
    return DenseIntOrFPElementsAttr(tensor_type, BytesAttr(data))  # type: ignore[arg-type]


def constant_array(value: Attribute | None) -> np.ndarray | None:
    """Values of a graph.constant's value property; None for shape-only or missing blobs."""
    if isinstance(value, DenseIntOrFPElementsAttr):
        return dense_array(value)
    if isinstance(value, DenseResourceAttr):
        return blob_array(value)
    return None
