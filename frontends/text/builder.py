"""From the lark tree of an .afc file to a verified `func.func @main` of graph ops.

Statements are processed in order; a name must be defined before it is used and is
defined once. Calls are resolved against the graph dialect itself: the op class is
looked up by name in `graph.Graph`, operands are checked against its IRDL operand
definitions and keyword attributes against its property definitions, and the result
types come from the op's `make` (its shape rules). A new graph op is therefore callable
without touching this file. `cast(x, to=DTYPE)` is the one op whose result type is an
argument rather than inferred.

Expression trees are evaluated with an explicit stack, so deeply nested input cannot
overflow Python's recursion limit. Every problem raises a one-line `UserError` located
at the offending part of the statement; nothing is returned unless the whole module
verified. Blobs of file weights are registered only then, so a failed import leaves no
resources behind.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import cast

import numpy as np
from lark import Token, Tree
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    bf16,
    f16,
    f32,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import AttrConstraint, OptOperandDef, OptPropertyDef, VarOperandDef
from xdsl.irdl.constraints import VerificationContext
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from autofusion import dtypes, resources
from autofusion.diagnostics import SourceLocation, UserError
from autofusion.dialects import graph
from autofusion.dialects import shape_inference as si
from autofusion.interpreter import name_attr
from frontends.text.weights import WeightFileError, WeightFiles, fmt_shape

# dtype names of the language; f64 exists in the dialect only for imported constants
DTYPES: dict[str, Attribute] = {
    "f32": f32,
    "f16": f16,
    "bf16": bf16,
    "i64": i64,
    "i32": i32,
    "i8": i8,
    "i1": i1,
}
MAX_RANK = 32  # numpy's limit; the interpreter could not run more
MAX_DIM = 2**62
_INT_RANGES = {"i64": (-(2**63), 2**63 - 1), "i32": (-(2**31), 2**31 - 1), "i8": (-128, 127)}
_FLOAT_MAX = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0, "bf16": 3.3895313892515355e38}
# the arg/res attribute naming inputs and outputs (autofusion.interpreter.NAME_ATTR)
NAME_ATTR = "graph.name"
_SSA_SUFFIX = re.compile(r"_([0-9]+)$")
# keywords of the grammar: a value of this name could not be referred to everywhere
RESERVED = frozenset(
    ["input", "weight", "const", "output", "return", "from", "true", "false", "inf", "nan"]
)
_BINARY_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "@": "matmul"}
_DTYPE_LIST = ", ".join(DTYPES)

Scalar = bool | int | float


@dataclass
class _Literal:
    """A number in an operand position; it becomes a rank-0 constant once its type is known."""

    value: Scalar
    text: str
    node: Tree


@dataclass
class _Results:
    """The results of a multi-result op, before they are assigned to names."""

    values: list[SSAValue]
    op_name: str


_Value = SSAValue | _Literal | _Results


@dataclass
class _Binding:
    value: SSAValue
    line: int


# --------------------------------------------------------------------------------------
# What the dialect says about an op
# --------------------------------------------------------------------------------------

_PROP_KINDS = {
    "int": "an integer",
    "bool": "true or false",
    "float": "a number",
    "str": 'a "string"',
    "ints": "a list of integers",
}


def _accepts(constraint: AttrConstraint, attr: Attribute) -> bool:
    try:
        constraint.verify(attr, VerificationContext())
    except VerifyException:
        return False
    return True


@dataclass(frozen=True)
class OpSignature:
    """A callable graph op as the language sees it."""

    name: str
    op_class: type[graph.GraphOp]
    operands: tuple[str, ...]  # operand names; "[x]" optional, "x..." variadic
    min_operands: int
    max_operands: int | None
    properties: tuple[tuple[str, str, bool], ...]  # (name, kind, required)

    def describe(self) -> str:
        return f"{self.name}({', '.join(self.operands)})"

    def property_kind(self, name: str) -> str | None:
        for pname, kind, _ in self.properties:
            if pname == name:
                return kind
        return None


def _property_kind(constraint: AttrConstraint) -> str:
    # ints before bools: a property typed IntegerAttr also accepts an i1 value
    samples: list[tuple[str, Attribute]] = [
        ("int", graph.int_attr(0)),
        ("bool", graph.bool_attr(False)),
        ("float", graph.float_attr(0.0)),
        ("str", StringAttr("")),
        ("ints", graph.ints_attr([])),
    ]
    for kind, sample in samples:
        if _accepts(constraint, sample):
            return kind
    return "unsupported"


@cache
def op_table() -> dict[str, type[Operation]]:
    """Every graph op by its name without the `graph.` prefix."""
    return {op.name.removeprefix("graph."): op for op in graph.Graph.operations}


@lru_cache(maxsize=1024)  # bounded: unknown names come from user input
def signature(name: str) -> OpSignature | str:
    """The signature of the op called `name`, or why it cannot be called."""
    op = op_table().get(name)
    if op is None:
        return f"unknown op '{name}'" + _suggest(name, list(op_table()))
    if op is graph.ConstantOp:
        return "'constant' cannot be called; declare constants with `const` or `weight`"
    defn = op.get_irdl_definition()  # type: ignore[attr-defined]
    if not issubclass(op, graph.GraphOp) or defn.regions or defn.successors:
        return f"'{name}' is not a tensor op that can be called"
    names, singles, groups = [], 0, 0
    for oname, odef in defn.operands:
        if isinstance(odef, OptOperandDef):
            names.append(f"[{oname}]")
            groups += 1
        elif isinstance(odef, VarOperandDef):
            names.append(f"{oname}...")
            groups += 1
        else:
            names.append(oname)
            singles += 1
    if groups > 1:
        return f"'{name}' has several optional operand groups, which calls cannot express"
    has_var = any(
        isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef) for _, d in defn.operands
    )
    max_operands = None if has_var else singles + groups
    props = tuple(
        (pname, _property_kind(pdef.constr), not isinstance(pdef, OptPropertyDef))
        for pname, pdef in defn.properties.items()
    )
    return OpSignature(name, op, tuple(names), singles, max_operands, props)


def describe_ops() -> str:
    """One line per callable op: `name(operands) attr: kind, [optional: kind]`."""
    lines = []
    for name in sorted(op_table()):
        sig = signature(name)
        if isinstance(sig, str):
            continue
        attrs = [
            f"{p}: {_PROP_KINDS.get(kind, kind)}"
            if required
            else f"[{p}: {_PROP_KINDS.get(kind, kind)}]"
            for p, kind, required in sig.properties
        ]
        if sig.op_class is graph.CastOp:
            attrs = ["to: a dtype"]
        lines.append(sig.describe() + ("  " + ", ".join(attrs) if attrs else ""))
    return "\n".join(lines)


def _suggest(word: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=3, cutoff=0.75)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"


# --------------------------------------------------------------------------------------
# Scalars
# --------------------------------------------------------------------------------------


def _describe_scalar(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"the integer {value}" if isinstance(value, int) else f"the number {value!r}"


def check_scalar(value: Scalar, dtype: str) -> str | None:
    """Why `value` cannot be an element of `dtype`, or None if it can."""
    if dtype == "i1":
        return None if isinstance(value, bool) else f"{_describe_scalar(value)} is not a bool"
    if isinstance(value, bool):
        return f"{_describe_scalar(value)} is not a number"
    if dtype in _INT_RANGES:
        if not isinstance(value, int):
            return f"{_describe_scalar(value)} is not an integer"
        lo, hi = _INT_RANGES[dtype]
        return None if lo <= value <= hi else f"{value} is out of range for {dtype}"
    try:
        as_float = float(value)
    except OverflowError:
        return f"{value} is out of range for {dtype}"
    if math.isfinite(as_float) and abs(as_float) > _FLOAT_MAX[dtype]:
        return f"{value} is out of range for {dtype} (largest finite value {_FLOAT_MAX[dtype]:g})"
    return None


def scalar_array(values: list[Scalar], t: TensorType) -> np.ndarray:
    """Checked scalars -> storage array of element type of `t` (rounded like the type)."""
    name = dtypes.type_name(t.element_type)
    if name in _INT_RANGES or name == "i1":
        raw = np.array(values, dtype=dtypes.storage_dtype(t.element_type))
    else:
        raw = np.array([float(v) for v in values], dtype=np.float64)
    with np.errstate(over="ignore"):  # values are range-checked; f16 rounding of the limit
        return dtypes.to_storage(raw, t.element_type)


# --------------------------------------------------------------------------------------
# The builder
# --------------------------------------------------------------------------------------


class ModelBuilder:
    """Builds one function from the statements of one file."""

    def __init__(self, file_name: str) -> None:
        self.file = file_name
        self.block = Block()
        self.env: dict[str, _Binding] = {}
        self.arg_names: list[str] = []
        self.arg_dims: list[tuple[str, ...]] = []  # each input's symbolic dim names
        self.outputs: list[tuple[str, SSAValue]] = []
        self.output_style: str | None = None  # "output" or "return"
        self.returned = False
        self.literals: dict[tuple[str, str], SSAValue] = {}
        self.pending_blobs: list[tuple[graph.ConstantOp, str, np.ndarray]] = []
        self.weights = WeightFiles(Path(file_name).parent)
        self.target = ""  # the name the current statement assigns (for op locations)

    # ---- locations and errors --------------------------------------------------

    def where(self, node: Tree | Token) -> SourceLocation:
        if isinstance(node, Token):
            return SourceLocation(self.file, node.line or 1, node.column or 1)
        meta = node.meta
        line = getattr(meta, "line", 1) if not meta.empty else 1
        col = getattr(meta, "column", 1) if not meta.empty else 1
        return SourceLocation(self.file, line, col)

    def error(self, message: str, node: Tree | Token) -> UserError:
        return UserError(message, self.where(node))

    def location(self, node: Tree | Token) -> NameLoc:
        w = self.where(node)
        return NameLoc(
            StringAttr(self.target),
            FileLineColLoc(StringAttr(self.file), IntAttr(w.line), IntAttr(w.col)),
        )

    def check_new(self, name: Token) -> None:
        if name in RESERVED:
            raise self.error(f"'{name}' is a reserved word and cannot name a value", name)
        if name in self.env:
            raise self.error(f"'{name}' is already defined (at line {self.env[name].line})", name)

    def define(self, name: Token, value: SSAValue) -> None:
        self.check_new(name)
        self.env[str(name)] = _Binding(value, name.line or 1)
        if value.name_hint is None:
            # xDSL drops a `_<digits>` suffix from name hints (it reads them as its own
            # renaming), which would print `h_1` as `%h`; `%h.1` cannot clash with any name
            value.name_hint = _SSA_SUFFIX.sub(r".\1", str(name))

    def append(self, op: Operation, node: Tree | Token) -> None:
        op.location = self.location(node)
        self.block.add_op(op)

    # ---- statements ----------------------------------------------------------------

    def build(self, tree: Tree) -> ModuleOp:
        try:
            for stmt in tree.children:
                assert isinstance(stmt, Tree)
                if self.returned:
                    raise self.error("nothing may follow 'return'", stmt)
                self.target = ""
                getattr(self, "stmt_" + str(stmt.data))(stmt)
            return self.finish(tree)
        finally:
            self.weights.close()

    def stmt_input_decl(self, stmt: Tree) -> None:
        name, type_tree = cast(Token, stmt.children[0]), cast(Tree, stmt.children[1])
        t = self.tensor_type(type_tree, what=None)
        arg = self.block.insert_arg(t, len(self.block.args))
        self.define(name, arg)
        self.arg_names.append(str(name))
        dims = [cast(Token, c) for c in type_tree.children[1:]]
        self.arg_dims.append(tuple(str(d) if d.type == "NAME" else "" for d in dims))

    def stmt_weight_decl(self, stmt: Tree) -> None:
        name, type_tree = cast(Token, stmt.children[0]), cast(Tree, stmt.children[1])
        self.target = str(name)
        t = self.tensor_type(type_tree, what=f"weight '{name}'")
        op = graph.ConstantOp(None, t, {"name": StringAttr(str(name))})
        if len(stmt.children) > 2:
            path_tok = cast(Token, stmt.children[2])
            key = str(name)
            if len(stmt.children) > 3:
                key = self.string(cast(Token, cast(Tree, stmt.children[3]).children[0]))
            try:
                array = self.weights.read(self.string(path_tok), key, t)
            except WeightFileError as e:
                raise self.error(f"weight '{name}': {e}", path_tok) from None
            self.pending_blobs.append((op, str(name), array))
        self.append(op, name)
        self.define(name, op.result)

    def stmt_const_decl(self, stmt: Tree) -> None:
        name = cast(Token, stmt.children[0])
        type_tree, literal = cast(Tree, stmt.children[1]), cast(Tree, stmt.children[2])
        self.target = str(name)
        t = self.tensor_type(type_tree, what=f"const '{name}'")
        values = self.const_values(literal, t, str(name))
        attr = resources.dense_attr(scalar_array(values, t), t)
        op = graph.ConstantOp(attr, None, {"name": StringAttr(str(name))})
        self.append(op, name)
        self.define(name, op.result)

    def stmt_assign(self, stmt: Tree) -> None:
        *targets, expr = stmt.children
        names = [cast(Token, t) for t in targets]
        self.target = str(names[0])
        for i, n in enumerate(names):
            if n in names[:i]:
                raise self.error(f"'{n}' is assigned twice in one statement", n)
            self.check_new(n)  # before evaluating: the error is about the name
        value = self.evaluate(cast(Tree, expr))
        self.bind(names, value, cast(Tree, expr))

    def stmt_output(self, stmt: Tree) -> None:
        name = cast(Token, stmt.children[0])
        self.output_kind("output", stmt)
        if len(stmt.children) > 1:
            self.target = str(name)
            self.check_new(name)
            expr = cast(Tree, stmt.children[1])
            self.bind([name], self.evaluate(expr), expr)
        self.add_output(name)

    def stmt_return_(self, stmt: Tree) -> None:
        self.output_kind("return", stmt)
        for name in stmt.children:
            self.add_output(cast(Token, name))
        self.returned = True

    def output_kind(self, kind: str, stmt: Tree) -> None:
        if self.output_style is not None and self.output_style != kind:
            raise self.error("use either `output` statements or one `return`, not both", stmt)
        self.output_style = kind

    def add_output(self, name: Token) -> None:
        if name not in self.env:
            raise self.error(f"undefined name '{name}'", name)
        if any(n == name for n, _ in self.outputs):
            raise self.error(f"'{name}' is already an output", name)
        self.outputs.append((str(name), self.env[name].value))

    def bind(self, names: list[Token], value: _Value, node: Tree) -> None:
        if isinstance(value, _Literal):
            raise self.error(
                f"a literal alone has no type; declare it with "
                f"`const {names[0]}: f32[] = {value.text}` (with its dtype)",
                node,
            )
        if isinstance(value, _Results):
            if len(value.values) != len(names):
                raise self.error(
                    f"'{value.op_name}' gives {len(value.values)} results, "
                    f"but {len(names)} name{'s are' if len(names) > 1 else ' is'} assigned",
                    node,
                )
            for n, v in zip(names, value.values):
                self.define(n, v)
            return
        if len(names) != 1:
            owner = value.owner
            what = (
                f"'{owner.name.removeprefix('graph.')}'"
                if isinstance(owner, Operation)
                else f"'{value.name_hint}'"
            )
            raise self.error(f"{what} gives 1 result, but {len(names)} names are assigned", node)
        self.define(names[0], value)

    def finish(self, tree: Tree) -> ModuleOp:
        if not self.outputs:
            # where the missing output would go: after the last statement
            last = tree.children[-1] if tree.children else None
            line = last.meta.end_line + 1 if isinstance(last, Tree) else 1
            raise UserError(
                "the model has no outputs; add `output NAME = ...` or `return NAME, ...`",
                SourceLocation(self.file, line, 1),
            )
        values = [v for _, v in self.outputs]
        ret = func.ReturnOp(*values)
        self.block.add_op(ret)
        function = func.FuncOp(
            "main",
            ([a.type for a in self.block.args], [v.type for v in values]),
            Region(self.block),
            arg_attrs=_names_attr(self.arg_names, self.arg_dims),
            res_attrs=_names_attr([n for n, _ in self.outputs]),
        )
        module = ModuleOp([function])
        try:
            # the graph ops were verified one by one as they were built
            ret.verify()
            function.verify(verify_nested_ops=False)
            module.verify(verify_nested_ops=False)
        except DiagnosticException as e:  # a bug: report it without a traceback
            message = str(e).strip().splitlines()[0] if str(e).strip() else "verification failed"
            raise UserError(f"the built module does not verify: {message}", self.file) from e
        for op, hint, array in self.pending_blobs:
            t = cast(TensorType, op.result.type)
            op.properties["value"] = resources.add_blob(hint, array, t)
        return module

    # ---- types and constants ----------------------------------------------------------

    def dtype(self, tok: Token) -> Attribute:
        elt = DTYPES.get(str(tok))
        if elt is None:
            raise self.error(
                f"unknown dtype '{tok}' (expected one of {_DTYPE_LIST})"
                + _suggest(tok, list(DTYPES)),
                tok,
            )
        return elt

    def tensor_type(self, tree: Tree, what: str | None) -> TensorType:
        """`f16[B, 2048]`; symbolic dims become `?` unless `what` (a weight) needs static."""
        dtype_tok, *dim_toks = (cast(Token, c) for c in tree.children)
        elt = self.dtype(dtype_tok)
        if len(dim_toks) > MAX_RANK:
            raise self.error(f"a tensor has at most {MAX_RANK} dimensions", dim_toks[MAX_RANK])
        shape: list[int] = []
        for d in dim_toks:
            if d.type == "NAME":
                if what is not None:
                    raise self.error(f"{what} needs a static shape, but '{d}' is symbolic", d)
                shape.append(si.DYN)
                continue
            size = int(d)
            if size > MAX_DIM:
                raise self.error(f"dimension {d} is too large", d)
            shape.append(size)
        return TensorType(elt, shape)

    def string(self, tok: Token) -> str:
        """The value of a string literal: `\\n`, `\\t`; a backslash keeps any other char."""
        body, out, i = str(tok)[1:-1], [], 0
        while i < len(body):
            c = body[i]
            if c == "\\" and i + 1 < len(body):
                i += 1
                c = {"n": "\n", "t": "\t"}.get(body[i], body[i])
            out.append(c)
            i += 1
        return "".join(out)

    def signed(self, tree: Tree) -> tuple[Scalar, str]:
        """The value of `signed` (`-`? number) and its spelling."""
        *sign, number = tree.children
        value, text = self.number(cast(Tree, number))
        if sign:
            if isinstance(value, bool):
                raise self.error(f"'-' cannot apply to {text}", tree)
            return -value, "-" + text
        return value, text

    def number(self, tree: Tree) -> tuple[Scalar, str]:
        tok = cast(Token, tree.children[0])
        text = str(tok)
        kind = tok.type
        if kind == "INT":
            return int(text), text
        if kind == "FLOAT":
            value = float(text)
            if math.isinf(value):  # float() rounds 1e999 to inf
                raise self.error(f"{text} is too large for a number (write inf for infinity)", tok)
            return value, text
        if kind == "INF":
            return math.inf, text
        if kind == "NAN":
            return math.nan, text
        return kind == "TRUE", text

    def const_values(self, literal: Tree, t: TensorType, name: str) -> list[Scalar]:
        """The elements of a const literal: a splat scalar or a list nested per dim."""
        dtype = dtypes.type_name(t.element_type)
        shape = t.get_shape()
        if literal.data == "literal":  # one number: a splat
            value, _ = self.signed(cast(Tree, literal.children[0]))
            self.check_element(value, dtype, f"const '{name}'", literal)
            return [value]
        values: list[Scalar] = []

        # depth is bounded by the declared rank (at most MAX_RANK)
        def walk(node: Tree, depth: int) -> None:
            if depth == len(shape):
                if node.data != "literal":
                    raise self.error(
                        f"const '{name}' has rank {len(shape)}, but its value nests deeper", node
                    )
                value, _ = self.signed(cast(Tree, node.children[0]))
                self.check_element(value, dtype, f"const '{name}'", node)
                values.append(value)
                return
            if node.data != "literal_list":
                raise self.error(
                    f"const '{name}' needs a list of {shape[depth]} values here "
                    f"(its shape is {fmt_shape(shape)})",
                    node,
                )
            if len(node.children) != shape[depth]:
                raise self.error(
                    f"const '{name}' needs {shape[depth]} values in dim {depth}, "
                    f"got {len(node.children)} (its shape is {fmt_shape(shape)})",
                    node,
                )
            for child in node.children:
                walk(cast(Tree, child), depth + 1)

        walk(literal, 0)
        return values

    def check_element(self, value: Scalar, dtype: str, what: str, node: Tree) -> None:
        problem = check_scalar(value, dtype)
        if problem is not None:
            raise self.error(f"{what} is {dtype}, but {problem}", node)

    # ---- expressions ------------------------------------------------------------------

    @staticmethod
    def operand_nodes(node: Tree) -> list[Tree]:
        """The sub-expressions of `node` that are evaluated before it, in order."""
        data = node.data
        if data == "call":
            return [c for c in node.children[1:] if isinstance(c, Tree) and c.data != "kwarg"]
        if data == "binary":
            return [cast(Tree, node.children[0]), cast(Tree, node.children[2])]
        if data == "negate":
            return [cast(Tree, node.children[1])]
        return []

    def evaluate(self, root: Tree) -> _Value:
        """Evaluate an expression, creating its ops in source order (post-order, iterative)."""
        todo: list[tuple[Tree, bool]] = [(root, False)]
        done: list[_Value] = []
        while todo:
            node, ready = todo.pop()
            kids = self.operand_nodes(node)
            if not ready:
                todo.append((node, True))
                todo.extend((k, False) for k in reversed(kids))
                continue
            args = done[len(done) - len(kids) :] if kids else []
            del done[len(done) - len(kids) :]
            done.append(self.apply(node, args))
        return done[0]

    def apply(self, node: Tree, args: list[_Value]) -> _Value:
        data = node.data
        if data == "ref":
            name = cast(Token, node.children[0])
            binding = self.env.get(str(name))
            if binding is None:
                hint = " (ops are called with parentheses)" if name in op_table() else ""
                raise self.error(f"undefined name '{name}'{hint}", name)
            return binding.value
        if data == "number":
            value, text = self.number(node)
            return _Literal(value, text, node)
        if data == "negate":
            (x,) = args
            minus = cast(Token, node.children[0])
            if isinstance(x, _Literal):
                if isinstance(x.value, bool):
                    raise self.error(f"'-' cannot apply to {x.text}", minus)
                return _Literal(-x.value, "-" + x.text, node)
            return self.call("neg", "'-' (neg)", args, [node.children[1]], [], minus)
        if data == "binary":
            op_tok = cast(Token, node.children[1])
            op_name = _BINARY_OPS[str(op_tok)]
            return self.call(
                op_name,
                f"'{op_tok}' ({op_name})",
                args,
                [node.children[0], node.children[2]],
                [],
                op_tok,
            )
        if data == "call":
            callee = cast(Token, node.children[0])
            first_kwarg = None
            kwargs: list[Tree] = []
            operand_nodes: list[Tree | Token] = []
            for child in node.children[1:]:
                assert isinstance(child, Tree)
                if child.data == "kwarg":
                    kwargs.append(child)
                    first_kwarg = child
                else:
                    if first_kwarg is not None:
                        raise self.error(
                            "an operand cannot follow a keyword attribute; put operands first",
                            child,
                        )
                    operand_nodes.append(child)
            return self.call(str(callee), str(callee), args, operand_nodes, kwargs, callee)
        raise self.error(f"unexpected {data}", node)  # pragma: no cover - grammar-bound

    # ---- calls ------------------------------------------------------------------------

    def call(
        self,
        name: str,
        spelling: str,
        args: list[_Value],
        arg_nodes: Sequence[Tree | Token],
        kwargs: list[Tree],
        node: Token,
    ) -> _Value:
        sig = signature(name)
        if isinstance(sig, str):
            raise self.error(sig, node)
        for arg, arg_node in zip(args, arg_nodes):
            if isinstance(arg, _Results):
                raise self.error(
                    f"'{arg.op_name}' gives {len(arg.values)} results; assign them to names "
                    "first (`a, b = ...`)",
                    arg_node,
                )
        n = len(args)
        if n < sig.min_operands or (sig.max_operands is not None and n > sig.max_operands):
            if sig.max_operands is None:
                count = f"at least {sig.min_operands}"
            elif sig.max_operands == sig.min_operands:
                count = str(sig.min_operands)
            else:
                count = f"{sig.min_operands} or {sig.max_operands}"
            plural = "" if count == "1" else "s"
            raise self.error(
                f"{spelling} takes {count} operand{plural} ({sig.describe()}), got {n}", node
            )
        operands = self.materialize(args, spelling)
        given: dict[str, tuple[Tree, Tree]] = {}
        for kw in kwargs:
            key = cast(Token, kw.children[0])
            if key in given:
                raise self.error(f"attribute '{key}' is given twice", key)
            given[str(key)] = (kw, cast(Tree, kw.children[1]))
        try:
            if sig.op_class is graph.CastOp:
                op: Operation = self.make_cast(operands, given, node)
            else:
                props = self.properties(sig, spelling, given, node)
                op = sig.op_class.make(operands, props)
            op.verify()
        except (ValueError, VerifyException, NotImplementedError) as e:
            raise self.error(f"{spelling}: {_verify_message(e)}", node) from None
        self.append(op, node)
        if len(op.results) == 1:
            return op.results[0]
        return _Results(list(op.results), name)

    def materialize(self, args: list[_Value], spelling: str) -> list[SSAValue]:
        """Literal operands become rank-0 constants of the other operands' element type.

        i1 operands (a `where` condition) do not decide the type when others exist.
        """
        tensors = [cast(TensorType, a.type).element_type for a in args if isinstance(a, SSAValue)]
        typed = [e for e in tensors if e != i1] or tensors
        out: list[SSAValue] = []
        for arg in args:
            if isinstance(arg, SSAValue):
                out.append(arg)
                continue
            assert isinstance(arg, _Literal)
            if not typed:
                raise self.error(
                    f"cannot tell the type of the literal {arg.text}: {spelling} has no tensor "
                    "operand to take it from; declare it with `const`",
                    arg.node,
                )
            elt = typed[0]
            dtype = dtypes.type_name(elt)
            problem = check_scalar(arg.value, dtype)
            if problem is not None:
                raise self.error(
                    f"the literal {arg.text} takes the element type of the other operands, "
                    f"{dtype}, but {problem}",
                    arg.node,
                )
            out.append(self.literal_constant(arg, TensorType(elt, [])))
        return out

    def literal_constant(self, lit: _Literal, t: TensorType) -> SSAValue:
        dtype = dtypes.type_name(t.element_type)
        # 2 and 2.0 are the same f32 constant; -0.0 and 0.0 are not
        key = (dtype, repr(float(lit.value) if dtypes.is_float(t.element_type) else lit.value))
        cached = self.literals.get(key)
        if cached is None:
            op = graph.ConstantOp(resources.dense_attr(scalar_array([lit.value], t), t))
            self.append(op, lit.node)
            cached = self.literals[key] = op.result
        return cached

    def make_cast(
        self, operands: list[SSAValue], given: dict[str, tuple[Tree, Tree]], node: Token
    ) -> Operation:
        for key, (kw, _) in given.items():
            if key != "to":
                raise self.error(f"cast has no attribute '{key}' (it takes: to)", kw)
        if "to" not in given:
            raise self.error("cast needs attribute 'to' (a dtype, e.g. to=f32)", node)
        _, value = given["to"]
        tok = value.children[0] if value.data == "attr_scalar" else None
        if not isinstance(tok, Token) or tok.type != "NAME":
            raise self.error(f"attribute 'to' of cast expects a dtype ({_DTYPE_LIST})", value)
        return graph.CastOp.to(operands[0], self.dtype(tok))

    def properties(
        self, sig: OpSignature, spelling: str, given: dict[str, tuple[Tree, Tree]], node: Token
    ) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {}
        for key, (kw, value) in given.items():
            kind = sig.property_kind(key)
            if kind is None:
                names = ", ".join(p for p, _, _ in sig.properties)
                raise self.error(
                    f"{spelling} has no attribute '{key}' "
                    + (f"(it takes: {names})" if names else "(it takes none)")
                    + _suggest(key, [p for p, _, _ in sig.properties]),
                    kw,
                )
            props[key] = self.attribute(kind, value, f"attribute '{key}' of {spelling}")
        missing = [(p, k) for p, k, required in sig.properties if required and p not in props]
        if missing:
            what = ", ".join(f"'{p}' ({_PROP_KINDS.get(k, k)})" for p, k in missing)
            plural = "s" if len(missing) > 1 else ""
            raise self.error(f"{spelling} needs attribute{plural} {what}", node)
        defn = sig.op_class.get_irdl_definition()
        for key, attr in props.items():
            try:
                defn.properties[key].constr.verify(attr, VerificationContext())
            except VerifyException as e:
                raise self.error(
                    f"attribute '{key}' of {spelling}: {_verify_message(e)}", given[key][0]
                ) from None
        return props

    def attribute(self, kind: str, value: Tree, what: str) -> Attribute:
        """A keyword value as the property attribute `kind` calls for."""
        expects = f"{what} expects {_PROP_KINDS.get(kind, kind)}"
        if kind == "unsupported":
            raise self.error(f"{what} has a type the text language cannot write", value)
        if value.data == "attr_list":
            if kind != "ints":
                raise self.error(f"{expects}, got a list", value)
            items: list[int] = []
            for item in value.children:
                v = self.attr_scalar(cast(Tree, item))
                if not isinstance(v, int) or isinstance(v, bool):
                    raise self.error(f"{expects}, got {self.describe_attr(v)} in the list", item)
                if not -(2**63) <= v < 2**63:
                    raise self.error(f"{what}: {v} does not fit in 64 bits", item)
                items.append(v)
            return graph.ints_attr(items)
        v = self.attr_scalar(value)
        if kind == "int" and isinstance(v, int) and not isinstance(v, bool):
            if not -(2**63) <= v < 2**63:
                raise self.error(f"{what}: {v} does not fit in 64 bits", value)
            return graph.int_attr(v)
        if kind == "bool" and isinstance(v, bool):
            return graph.bool_attr(v)
        if kind == "float" and isinstance(v, int | float) and not isinstance(v, bool):
            try:
                return graph.float_attr(float(v))
            except OverflowError:
                raise self.error(f"{what}: {v} is out of range for a float", value) from None
        if kind == "str" and isinstance(v, _Str):
            return StringAttr(v.text)
        hint = ""
        if kind == "str" and isinstance(v, _Name):
            hint = f' (strings are written in quotes: "{v.text}")'
        raise self.error(f"{expects}, got {self.describe_attr(v)}{hint}", value)

    def attr_scalar(self, tree: Tree) -> Scalar | _Str | _Name:
        child = tree.children[0]
        if isinstance(child, Tree):
            return self.signed(child)[0]
        if child.type == "STRING":
            return _Str(self.string(child))
        return _Name(str(child))

    @staticmethod
    def describe_attr(v: Scalar | _Str | _Name) -> str:
        if isinstance(v, _Str):
            return f'the string "{v.text}"'
        if isinstance(v, _Name):
            return f"the name '{v.text}'"
        return _describe_scalar(v)


@dataclass
class _Str:
    text: str


@dataclass
class _Name:
    text: str


def _names_attr(
    names: list[str], dims: list[tuple[str, ...]] | None = None
) -> ArrayAttr[DictionaryAttr]:
    """Each value's name and, where it has symbolic dims, their names (graph.dims)."""
    return ArrayAttr(
        [name_attr(n, d) for n, d in zip(names, dims or [()] * len(names), strict=True)]
    )


def _verify_message(e: BaseException) -> str:
    """The first line of a shape or verifier error, without the `'graph.op': ` prefix."""
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    line = line.removeprefix("Operation does not verify: ")
    if line.startswith("'graph."):
        end = line.find("': ")
        if end > 0:
            line = line[end + 3 :]
    return line
