"""The program-level driver of the torch frontend: `torch.export` a module, decompose
the program to core ATen, check its signature, and import it with `Importer` (graph
building, importer.py) and the converter table (aten.py).

torch is imported inside functions only, so that this module imports without it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from autofusion.diagnostics import UserError
from autofusion.dialects import graph
from autofusion.interpreter import NAME_ATTR
from frontends.torch.aten import convert
from frontends.torch.importer import KEPT_OPS, Folded, Importer, tensor_type

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import Node
    from xdsl.context import Context


@functools.cache
def decomposition_table() -> dict[Any, Callable[..., Any]]:
    """torch.export's core-ATen decomposition table without the ops in `KEPT_OPS`.

    Built once per process (it takes a while); `run_decompositions` copies it.
    """
    import torch

    table = torch.export.default_decompositions()
    for name in KEPT_OPS:
        packet, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        if op in table:
            del table[op]
    return dict(table.items())


def export_program(
    model: Any, example_inputs: Any, example_kwargs: Mapping[str, Any] | None
) -> ExportedProgram:
    """`torch.export` the model (in eval mode) with static shapes."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise UserError(f"expected a torch.nn.Module, got {type(model).__name__}")
    training = [name for name, m in model.named_modules() if m.training]
    if training:
        which = "the model" if training[0] == "" else f"submodule '{training[0]}' of the model"
        raise UserError(f"{which} is in training mode; call model.eval() before importing it")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, tuple | list):
        raise UserError(
            "example_inputs must be a tuple of forward() arguments, got "
            f"{type(example_inputs).__name__}"
        )
    _check_distinct(example_inputs, example_kwargs)
    try:
        return torch.export.export(
            model, tuple(example_inputs), dict(example_kwargs or {}), strict=False
        )
    except Exception as e:
        raise UserError(f"torch.export failed: {_first_line(e)}") from e


def decompose_program(program: ExportedProgram) -> ExportedProgram:
    """Decompose an exported program to core ATen, except the ops in `KEPT_OPS`."""
    try:
        return program.run_decompositions(decomposition_table())
    except Exception as e:
        raise UserError(f"decomposing the exported program failed: {_first_line(e)}") from e


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def _check_distinct(args: Sequence[Any], kwargs: Mapping[str, Any] | None) -> None:
    """Reject the same tensor object passed twice: torch.export would make them one input."""
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    leaves, _ = tree_flatten_with_path((tuple(args), dict(kwargs or {})))
    seen: dict[int, str] = {}
    for path, leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            continue
        # path[0] selects args or kwargs; the rest is the position within them
        where = ("args" if cast(Any, path[0]).idx == 0 else "kwargs") + keystr(path[1:])
        if id(leaf) in seen:
            raise UserError(
                f"example inputs '{seen[id(leaf)]}' and '{where}' are the same tensor; "
                "torch.export would trace them as one input: pass distinct tensors "
                "(e.g. x.clone())"
            )
        seen[id(leaf)] = where


def _live_nodes(program: ExportedProgram) -> set[Node]:
    """The nodes the outputs depend on (dead nodes, e.g. asserts, are not imported)."""
    output = next(n for n in program.graph.nodes if n.op == "output")
    live: set[Node] = set()
    stack = [output]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(node.all_input_nodes)
    return live


def _check_signature(program: ExportedProgram) -> None:
    from torch.export.graph_signature import OutputKind

    for spec in program.graph_signature.output_specs:
        if spec.kind == OutputKind.BUFFER_MUTATION:
            raise UserError(
                f"the model updates buffer '{spec.target}' in place; only models that do "
                "not mutate their state can be imported"
            )
        if spec.kind == OutputKind.USER_INPUT_MUTATION:
            raise UserError(
                f"the model updates its input '{spec.target}' in place; only models that "
                "do not mutate their inputs can be imported"
            )
        if spec.kind not in (OutputKind.USER_OUTPUT,):
            raise UserError(f"unsupported output kind {spec.kind.name} of the exported program")


def _names(given: Sequence[str] | None, defaults: list[str], what: str) -> list[str]:
    if given is None:
        return defaults
    names = list(given)
    if len(names) != len(defaults):
        raise UserError(f"{len(names)} {what} names given, but the model has {len(defaults)}")
    if len(set(names)) != len(names):
        raise UserError(f"the {what} names are not unique: {', '.join(names)}")
    return names


def import_program(
    model: Any,
    example_inputs: Any,
    *,
    example_kwargs: Mapping[str, Any] | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    ctx: Context | None = None,
) -> ModuleOp:
    """Export `model` and import it as `func.func @main` (see `frontends.torch`)."""
    program = export_program(model, example_inputs, example_kwargs)
    return import_exported(program, input_names=input_names, output_names=output_names, ctx=ctx)


def import_exported(
    program: ExportedProgram,
    *,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    ctx: Context | None = None,
) -> ModuleOp:
    """Decompose an exported program and import it as `func.func @main`."""
    import torch
    from torch.export.graph_signature import InputKind

    program = decompose_program(program)
    _check_signature(program)
    live = _live_nodes(program)
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}

    # user inputs become arguments; weights and constants are emitted where they are
    user_inputs: list[Node] = []
    weights: list[tuple[Node, str, torch.Tensor]] = []
    lifted: list[tuple[Node, torch.Tensor]] = []
    for spec in program.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            if isinstance(node.meta.get("val"), torch.Tensor):
                user_inputs.append(node)
            continue  # a non-tensor input was specialised into the graph by torch.export
        target = cast(str, spec.target)
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            value = (
                program.state_dict[target]
                if target in program.state_dict
                else program.constants[target]
            )
            weights.append((node, target, cast("torch.Tensor", value)))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            value = program.constants[target]
            if target.startswith("lifted_tensor_"):
                # a tensor literal written in forward(), e.g. torch.tensor([1.0, 2.0])
                lifted.append((node, cast("torch.Tensor", value)))
            else:
                weights.append((node, target, cast("torch.Tensor", value)))
        else:
            raise UserError(f"unsupported input kind {spec.kind.name} ('{spec.arg.name}')")

    arg_types = [tensor_type(n.meta["val"], f"input '{n.name}'") for n in user_inputs]
    block = Block(arg_types=arg_types)
    importer = Importer(program, block)
    in_names = _names(input_names, [n.name for n in user_inputs], "input")
    for node, arg in zip(user_inputs, block.args):
        arg.name_hint = node.name
        arg.location = NameLoc(StringAttr(node.name), NoneAttr())
        importer.env[node] = arg
    for node, value in lifted:
        importer.env[node] = Folded(value, node.name)
    for node, target, value in weights:
        if node in live:
            importer.at(node)
            constant = importer.weight(target, value)
            constant.name_hint = node.name
            importer.env[node] = constant
            importer.weights[node] = value

    results = importer.run(live, convert)
    out_names = _names(
        output_names,
        ["output"] + [f"output_{i}" for i in range(1, len(results))],
        "output",
    )
    ret = func.ReturnOp(*results)
    ret.location = NameLoc(StringAttr("output"), NoneAttr())
    block.add_op(ret)

    def attrs(names: list[str]) -> ArrayAttr[DictionaryAttr]:
        return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in names])

    main = func.FuncOp(
        "main",
        (arg_types, [r.type for r in results]),
        Region(block),
        arg_attrs=attrs(in_names),
        res_attrs=attrs(out_names),
    )
    module = ModuleOp([main])
    try:
        module.verify()
    except VerifyException as e:
        raise RuntimeError(f"internal error: the imported module does not verify: {e}") from e
    if ctx is not None:
        _load_dialects(ctx)
    return module


def _load_dialects(ctx: Context) -> None:
    """Make sure `ctx` knows the dialects of an imported module (for printing/parsing)."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    for dialect in (Builtin, Func, graph.Graph):
        if ctx.get_optional_dialect(dialect.name) is None:
            ctx.load_dialect(dialect)
