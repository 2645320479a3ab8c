"""The buffer interpreter's memory references: a memref is a view into a numpy buffer.

Its own module because the buffer interpreter (buffer.py) and the loops it compiles
(vector_loops.py) both read them, and the interpreter imports those loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.utils.exceptions import InterpretationError

# Ascend C's UB address alignment for vector instructions and copies (ascend.md 1.5)
UB_ALIGN = 32


@dataclass
class Ref:
    """A view into a buffer: `data[offset:]` in memory space `space`."""

    data: np.ndarray
    offset: int
    space: str
    name: str
    width: int  # bytes per element on the device (bf16 is stored as float32 here)

    def window(self, count: int, what: str) -> np.ndarray:
        if count < 0:
            raise InterpretationError(f"{what}: negative count {count}")
        end = self.offset + count
        if end > self.data.size:
            raise InterpretationError(
                f"{what}: {count} elements at offset {self.offset} overrun {self.name} "
                f"({self.data.size} elements)"
            )
        return self.data[self.offset : end]

    def check_aligned(self, what: str) -> None:
        if self.space != "gm" and (self.offset * self.width) % UB_ALIGN:
            raise InterpretationError(
                f"{what}: {self.space} address {self.offset * self.width} of "
                f"{self.name} is not {UB_ALIGN}-byte aligned"
            )
