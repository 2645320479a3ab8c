"""Frontends: model files to the graph dialect, chosen by file extension.

Each frontend is `(ctx, data, name) -> ModuleOp`; its imports are deferred so that a
tool only pays for the frontend it uses (and onnx/torch stay optional).
"""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

Frontend = Callable[[Context, bytes, str], ModuleOp]


def _mlir(ctx: Context, data: bytes, name: str) -> ModuleOp:
    from autofusion.mlir_io import parse_module

    return parse_module(ctx, data, name)


def _onnx(ctx: Context, data: bytes, name: str) -> ModuleOp:
    from frontends.onnx import import_onnx_bytes

    return import_onnx_bytes(ctx, data, name)


def _pt2(ctx: Context, data: bytes, name: str) -> ModuleOp:
    from frontends.torch import import_pt2

    return import_pt2(ctx, data, name)


def _text(ctx: Context, data: bytes, name: str) -> ModuleOp:
    from frontends.text import parse_text_model

    return parse_text_model(ctx, data, name)


def get_all_frontends() -> dict[str, Frontend]:
    """Frontends by file extension."""
    return {"mlir": _mlir, "onnx": _onnx, "pt2": _pt2, "afc": _text}
