"""The afc model language (`.afc`): models written by hand, weights optional.

A model is a list of statements, one per line (a line break inside (...) or [...]
continues the statement); `#` starts a comment. It becomes one `func.func @main` of
graph-dialect ops. The full reference is docs/text-language.md; in short:

    # a Llama-style MLP block
    input x: f16[B, S, 3584]            # B and S are symbolic: `?` in the IR
    weight norm_w: f16[3584] from "weights.safetensors" ["model.norm.weight"]
    weight w_gate: f16[3584, 18944]     # shape only: no values, fusion can still plan
    weight w_up: f16[3584, 18944] from "mlp.npz"          # key defaults to the name
    const eps: f32[] = 1e-6             # literal constants: a number or nested lists
    const pos: i64[4] = [0, 1, 2, 3]

    h = cast(x, to=f32)                                   # cast's target is `to=`
    var = reduce_mean(pow(h, 2.0), axes=[-1], keepdims=true)
    hn = cast(h * rsqrt(var + eps), to=f16) * norm_w      # + - * / @ and unary -
    a, b = split(hn, axis=-1, sizes=[1792, 1792])         # several results
    output y = silu(hn @ w_gate) * (hn @ w_up)            # or: return y, ...

Statements:

* `input NAME: TYPE` declares a function argument. `TYPE` is `DTYPE[DIM, ...]` with
  DTYPE one of f32 f16 bf16 i64 i32 i8 i1; a DIM is an integer or a symbolic name.
* `weight NAME: TYPE` is a shape-only weight; `... from "FILE"` loads it from an .npz or
  .safetensors file (relative to the .afc file) under the key NAME, or `["KEY"]`. The
  stored dtype and shape must match the declaration.
* `const NAME: TYPE = VALUE` is a constant given in the file.
* `NAME = EXPR` and `NAME1, NAME2 = EXPR` (multi-result ops) bind names.
* `output NAME = EXPR` / `output NAME` adds a result; `return NAME, ...` (last statement)
  gives all results instead. Input and output names become `graph.name` attributes.

Expressions are calls `op(operands..., attr=value...)` of any graph op by its name
without `graph.`: operands first, then keyword attributes, one per property of the op
(ints, floats, true/false, "strings", [int lists]). Operators: `a + b` (add), `-`
(sub, neg), `*` (mul), `/` (div), `@` (matmul), Python precedence, parentheses. A
number used as an operand (`x * 0.5`, `pow(x, 2)`) becomes a rank-0 constant of the
other operands' element type.

Every op gets the location `loc("NAME"("FILE":LINE:COL))`: the variable the statement
assigns, at the position of the call or operator that made the op.

Errors are one line, `FILE:LINE:COL: error: ...`: syntax errors say what was expected and
quote the text near the error; semantic errors (unknown op, attribute or name, bad
dtype, shape errors from the op's rules, redefinition, weight files) point at the
offending part of the statement.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func

from autofusion.dialects.graph import Graph
from autofusion.dialects.target import set_target
from frontends.text.builder import ModelBuilder
from frontends.text.syntax import decode, parse_text

__all__ = ["parse_text_model"]


def parse_text_model(
    ctx: Context, data: bytes | str, name: str, *, chip: str | None = None
) -> ModuleOp:
    """Parse an .afc model into a verified module with one function, `@main`.

    `name` is the file's path: weight files are looked up relative to its directory,
    and it is the file name in diagnostics and op locations. `chip`, when given, becomes
    the module's target (as set-target{chip=...}). Raises `UserError`.
    """
    text = decode(data, name)
    tree = parse_text(text, name)
    module = ModelBuilder(name).build(tree)
    # the printer finds resource blobs through the dialects loaded in the context
    for dialect in (Builtin, Func, Graph):
        if ctx.get_optional_dialect(dialect.name) is None:
            ctx.load_dialect(dialect)
    if chip is not None:
        set_target(module, chip)
    return module
