"""The converter table of the ONNX importer: ONNX op type -> converter, for the default
domain. The converters (ops_math.py, ops_tensor.py) build graph ops through the
importer's `Node`; the importer is given this table, so it does not import them.
"""

from __future__ import annotations

from frontends.onnx import ops_math, ops_tensor
from frontends.onnx.importer import Converter


def converters() -> dict[str, Converter]:
    """ONNX op type -> converter, for the default domain."""
    return {**ops_math.CONVERTERS, **ops_tensor.CONVERTERS}
