"""Loading a model file of any supported kind into a graph-dialect module."""

from __future__ import annotations

from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from autofusion.diagnostics import UserError


def load_model(ctx: Context, path: str) -> ModuleOp:
    """Parse `path` with the frontend its extension names (.mlir, .onnx, .afc, ...)."""
    from frontends import get_all_frontends

    frontends = get_all_frontends()
    ext = Path(path).suffix.lstrip(".")
    if ext not in frontends:
        known = ", ".join("." + e for e in sorted(frontends))
        raise UserError(f"unknown model file type '.{ext}' (known: {known})", path)
    data = Path(path).read_bytes()
    return frontends[ext](ctx, data, path)
