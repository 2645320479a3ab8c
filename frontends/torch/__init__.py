"""The PyTorch frontend: an `nn.Module` and example inputs to the graph dialect.

    from frontends.torch import import_module

    module = import_module(model.eval(), (torch.randn(2, 16),))  # one func.func @main

How it works:

1. `torch.export.export` traces the module (non-strict) with the example inputs into an
   ATen-level FX graph with static shapes.
2. `ExportedProgram.run_decompositions` lowers that graph to core ATen, except for the
   ops in `importer.KEPT_OPS` (linear, matmul, layer_norm, rms_norm, silu,
   scaled_dot_product_attention, reflect/replicate padding), which map more directly
   onto graph ops than their decompositions do. `gelu` is core ATen already.
   `scaled_dot_product_attention` is expanded here into matmul, scale, mask, softmax
   and matmul: fused ops such as `graph.flash_attention` are formed by graph fusion,
   not by frontends.
3. `importer.Importer` walks the live FX nodes and calls the converter that
   `aten.CONVERTERS` registers for each ATen overload. Nodes whose inputs are all
   literal constants (arange, full, ones, scalar_tensor, tensors built in forward, and
   what is computed from them) are evaluated with torch, not imported: they become one
   `graph.constant` where a converted op uses them. An op without a converter that
   depends on weights and literals only is evaluated the same way.

The result is one `func.func @main`. Its arguments and results carry `graph.name`
attributes: the forward() parameter names (or `input_names`) and `output`, `output_1`,
... (or `output_names`). Parameters, buffers and tensor attributes become
`graph.constant dense_resource<...>` with a `name` attribute holding their qualified
name. Every op gets `loc("<fx node name>")`. See README.md in this directory for the
op coverage.

torch is optional: this package imports without it, and `import_module` raises a
`UserError` saying how to install it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from autofusion.diagnostics import UserError
from autofusion.dialects.target import set_target

if TYPE_CHECKING:
    from types import ModuleType

    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

__all__ = [
    "TORCH_MISSING",
    "import_exported_program",
    "import_module",
    "import_pt2",
    "require_torch",
]

TORCH_MISSING = "the PyTorch frontend needs torch: pip install torch==2.13.0 (the CPU build)"


def require_torch() -> ModuleType:
    """The `torch` module, or a `UserError` saying how to install it."""
    try:
        import torch
    except ImportError as e:
        raise UserError(TORCH_MISSING) from e
    return torch


def import_module(
    model: Any,
    example_inputs: Any,
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    ctx: Context | None = None,
    example_kwargs: Mapping[str, Any] | None = None,
) -> ModuleOp:
    """Import `model` (a `torch.nn.Module` in eval mode) traced on `example_inputs`.

    `example_inputs` is a tuple of positional arguments to `forward` (a single tensor is
    accepted too); `example_kwargs` holds keyword arguments. Tensor inputs become the
    function's arguments in order; non-tensor arguments are specialised by
    `torch.export` and do not appear. Outputs are the tensors `forward` returns,
    flattened (tuples, lists, dicts in insertion order); `None` outputs (such as the
    attention weights of `nn.MultiheadAttention(need_weights=False)`) are left out.

    `input_names` and `output_names` override the `graph.name` of the arguments and
    results. If `ctx` is given, the dialects the result uses are loaded into it, so
    that it can print and parse the module.

    Raises `UserError` for a model the frontend cannot import: torch missing, training
    mode, in-place updates of inputs or buffers, dynamic shapes, an ATen op or an
    argument value without a mapping (naming the op and the FX node).
    """
    require_torch()
    from frontends.torch.program import import_program

    return import_program(
        model,
        example_inputs,
        example_kwargs=example_kwargs,
        input_names=input_names,
        output_names=output_names,
        ctx=ctx,
    )


def import_exported_program(
    program: Any,
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    ctx: Context | None = None,
    chip: str | None = None,
) -> ModuleOp:
    """Import a `torch.export.ExportedProgram` (exported in eval mode, static shapes).

    Like `import_module` after the export step: the program is decomposed as described
    above, then imported. `chip`, when given, becomes the module's target (as
    set-target{chip=...}).
    """
    torch = require_torch()
    from frontends.torch.program import import_exported

    if not isinstance(program, torch.export.ExportedProgram):
        raise UserError(f"expected a torch.export.ExportedProgram, got {type(program).__name__}")
    module = import_exported(program, input_names=input_names, output_names=output_names, ctx=ctx)
    if chip is not None:
        set_target(module, chip)
    return module


def import_pt2(ctx: Context, data: bytes, name: str) -> ModuleOp:
    """A `.pt2` file written by `torch.export.save`, as a frontend of `frontends`.

    Its signature is that of `frontends.Frontend`; registering it under "pt2" in
    `frontends.get_all_frontends` lets `afc import model.pt2` use it.
    """
    import io
    import logging

    torch = require_torch()
    # torch.export.load logs the whole traceback of a failed load as a warning before
    # raising; the one-line diagnostic below is all a user should see
    logger = logging.getLogger("torch.export")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        program = torch.export.load(io.BytesIO(data))
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"not a torch.export program (.pt2): {first}", name) from e
    finally:
        logger.setLevel(level)
    return import_exported_program(program, ctx=ctx)
