"""The ONNX frontend: ONNX models (up to the newest opset onnx knows) to the graph dialect.

Importing this package does not import `onnx` (the exporter, `frontends.onnx.export`,
is used without it); the entry points below load it on first use and raise a
`UserError` when it is missing.

    module = import_onnx_file(ctx, "model.onnx", input_shapes={"input_ids": (1, 16)})
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from autofusion.diagnostics import UserError
from autofusion.dialects.target import set_target

if TYPE_CHECKING:
    import onnx

    from frontends.onnx.importer import InputShapes

MISSING_ONNX = "ONNX import needs the onnx package: pip install 'afc[onnx]'"


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise UserError(MISSING_ONNX) from e


def import_onnx_bytes(
    ctx: Context,
    data: bytes,
    name: str,
    input_shapes: InputShapes | None = None,
    *,
    chip: str | None = None,
) -> ModuleOp:
    """Import a serialized ModelProto; external data is resolved relative to `name`."""
    _require_onnx()
    from frontends.onnx.importer import load_model_bytes

    model = load_model_bytes(data, name)
    base_dir = Path(name).parent if name and name != "-" else None
    stem = Path(name).stem or "model"
    return import_onnx_model(ctx, model, stem, input_shapes, base_dir, chip=chip)


def import_onnx_file(
    ctx: Context,
    path: str | Path,
    input_shapes: InputShapes | None = None,
    *,
    chip: str | None = None,
) -> ModuleOp:
    """Import an .onnx file; external data files are found relative to it. `chip`, when
    given, becomes the module's target (as set-target{chip=...})."""
    _require_onnx()
    data = Path(path).read_bytes()
    return import_onnx_bytes(ctx, data, str(path), input_shapes, chip=chip)


def import_onnx_model(
    ctx: Context,
    model: onnx.ModelProto,
    name: str = "model",
    input_shapes: InputShapes | None = None,
    base_dir: str | Path | None = None,
    *,
    chip: str | None = None,
) -> ModuleOp:
    """Import an in-memory ModelProto into one `func.func @main`.

    `input_shapes` overrides the declared shapes of graph inputs by name (symbolic dims
    become static); `base_dir` is where tensors stored as external data are looked up;
    `chip`, when given, becomes the module's target (as set-target{chip=...}).
    """
    _require_onnx()
    from frontends.onnx.converters import converter_table
    from frontends.onnx.importer import Importer

    module = Importer(ctx, model, name, input_shapes, base_dir).run(converter_table())
    if chip is not None:
        set_target(module, chip)
    return module
