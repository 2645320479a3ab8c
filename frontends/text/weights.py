"""Reading weights for `weight NAME: TYPE from "FILE" ["KEY"]` from .npz and .safetensors.

Both readers check the stored dtype and shape against the declaration before reading
any data, so a wrong declaration never allocates what the file claims. The returned
arrays are in the interpreter's storage form (`autofusion.dtypes`): bf16 as float32.

.safetensors is read here, not with the `safetensors` package (not a run-time
dependency): an 8-byte little-endian header length, a JSON header mapping each name to
`{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the end of the
header), then the raw little-endian data. Only the tensors asked for are read.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType

from autofusion import dtypes

# safetensors dtype -> our element type name
SAFETENSORS_DTYPES = {
    "F32": "f32",
    "F16": "f16",
    "BF16": "bf16",
    "I64": "i64",
    "I32": "i32",
    "I8": "i8",
    "BOOL": "i1",
}
_MAX_HEADER = 256 * 1024 * 1024  # far above any real header; guards against garbage


class WeightFileError(Exception):
    """A weight file is missing, unreadable, or does not hold what was declared."""


def fmt_shape(shape: tuple[int, ...] | list[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _num_elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class _Safetensors:
    """The header of a .safetensors file; tensors are read on demand."""

    def __init__(self, path: Path, shown: str) -> None:
        self.path, self.shown = path, shown
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise self._bad("the file is shorter than the 8-byte header length")
            n = int.from_bytes(head, "little")
            if n > size - 8 or n > _MAX_HEADER:
                raise self._bad(f"the header length {n} exceeds the file size {size}")
            raw = f.read(n)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise self._bad(f"the header is not valid JSON ({type(e).__name__})") from None
        if not isinstance(header, dict):
            raise self._bad("the header is not a JSON object")
        header.pop("__metadata__", None)
        self.entries: dict[str, Any] = header
        self.data_start = 8 + n
        self.data_size = size - 8 - n

    def _bad(self, why: str) -> WeightFileError:
        return WeightFileError(f"'{self.shown}' is not a valid .safetensors file: {why}")

    def keys(self) -> list[str]:
        return sorted(self.entries)

    def read(self, key: str, t: TensorType) -> np.ndarray:
        entry = self.entries.get(key)
        if entry is None:
            raise _missing(self.shown, key, self.keys())
        if not isinstance(entry, dict):
            raise self._bad(f"the entry of '{key}' is not an object")
        stored, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(stored, str):
            raise self._bad(f"the entry of '{key}' has no dtype")
        if not (isinstance(shape, list) and all(_is_size(d) for d in shape)):
            raise self._bad(f"the entry of '{key}' has no valid shape")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_size, offsets))):
            raise self._bad(f"the entry of '{key}' has no valid data_offsets")
        want = dtypes.type_name(t.element_type)
        if SAFETENSORS_DTYPES.get(stored) != want:
            raise WeightFileError(
                f"'{self.shown}' stores '{key}' as {stored}, but it is declared {want}"
            )
        _check_shape(self.shown, key, tuple(shape), t)
        begin, end = offsets
        nbytes = _num_elements(tuple(shape)) * dtypes.byte_width(t.element_type)
        if end - begin != nbytes or end > self.data_size:
            raise self._bad(
                f"the data of '{key}' ({begin}..{end}) does not hold {nbytes} bytes "
                f"within the {self.data_size} bytes of data"
            )
        with open(self.path, "rb") as f:
            f.seek(self.data_start + begin)
            data = f.read(nbytes)
        if len(data) != nbytes:
            raise self._bad(f"the file ends inside the data of '{key}'")
        return dtypes.from_bytes(data, t.element_type, tuple(t.get_shape()))

    def close(self) -> None:
        pass


def _is_size(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class _Npz:
    """An .npz archive, read with numpy (no pickles)."""

    def __init__(self, path: Path, shown: str) -> None:
        self.shown = shown
        try:
            self.archive = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise WeightFileError(f"'{shown}' is not a readable .npz file ({e})") from None
        if not isinstance(self.archive, np.lib.npyio.NpzFile):
            raise WeightFileError(f"'{shown}' is a single .npy array, not an .npz archive")

    def read(self, key: str, t: TensorType) -> np.ndarray:
        if key not in self.archive.files:
            raise _missing(self.shown, key, sorted(self.archive.files))
        try:
            arr = self.archive[key]
        # a damaged member can fail in zlib, zipfile or numpy's header parser
        except Exception as e:
            raise WeightFileError(f"cannot read '{key}' from '{self.shown}' ({e})") from None
        want = dtypes.type_name(t.element_type)
        # numpy has no bf16: a bf16 weight is stored as float32 holding bf16 values
        storage = np.dtype(np.float32) if want == "bf16" else dtypes.storage_dtype(t.element_type)
        if arr.dtype.kind != storage.kind or arr.dtype.itemsize != storage.itemsize:
            raise WeightFileError(
                f"'{self.shown}' stores '{key}' as {arr.dtype.name}, but it is declared {want}"
                + (" (stored as float32 in .npz)" if want == "bf16" else "")
            )
        _check_shape(self.shown, key, tuple(arr.shape), t)
        arr = arr.astype(storage, copy=False)
        if want == "bf16" and not np.array_equal(dtypes.round_bf16(arr), arr, equal_nan=True):
            raise WeightFileError(
                f"'{self.shown}' stores '{key}' as float32 values that are not bf16 numbers; "
                "round them to bf16 before saving"
            )
        return arr

    def close(self) -> None:
        self.archive.close()


def _missing(shown: str, key: str, keys: list[str]) -> WeightFileError:
    listed = ", ".join(keys[:8]) + (f", ... ({len(keys)} in all)" if len(keys) > 8 else "")
    return WeightFileError(f"'{shown}' has no tensor '{key}' (it has: {listed or 'nothing'})")


def _check_shape(shown: str, key: str, shape: tuple[int, ...], t: TensorType) -> None:
    declared = tuple(t.get_shape())
    if shape != declared:
        raise WeightFileError(
            f"'{shown}' stores '{key}' with shape {fmt_shape(shape)}, "
            f"but it is declared {fmt_shape(declared)}"
        )


class WeightFiles:
    """The weight files one model reads, opened once each, paths relative to `base`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._open: dict[Path, _Npz | _Safetensors] = {}

    def read(self, file: str, key: str, t: TensorType) -> np.ndarray:
        """The tensor `key` of `file`, checked against the declared type `t`."""
        path = self.base / file
        reader = self._open.get(path)
        if reader is None:
            suffix = path.suffix.lower()
            if suffix not in (".npz", ".safetensors"):
                raise WeightFileError(
                    f"cannot read weights from '{file}': expected an .npz or .safetensors file"
                )
            if not path.is_file():
                what = "is not a file" if path.exists() else "does not exist"
                raise WeightFileError(f"the weight file '{file}' {what} (looked for {path})")
            try:
                reader = _Npz(path, file) if suffix == ".npz" else _Safetensors(path, file)
            except OSError as e:
                raise WeightFileError(f"cannot read '{file}': {e.strerror or e}") from None
            self._open[path] = reader
        try:
            return reader.read(key, t)
        except OSError as e:
            raise WeightFileError(f"cannot read '{file}': {e.strerror or e}") from None

    def close(self) -> None:
        for reader in self._open.values():
            reader.close()
        self._open.clear()
