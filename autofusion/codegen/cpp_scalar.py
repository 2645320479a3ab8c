"""C++ for the scalar part of afc's IR: `arith` expressions, `scf` control flow, names.

Shared by the Ascend C kernel printer and the host tiling printer. Index values are
`int64_t`; `arith` ops become C++ expressions with MLIR's semantics (signed division
truncates; `ceildivsi`/`floordivsi` and NaN-propagating `maximumf` are small helpers in
`namespace afc`, emitted only when used). A pure op whose single use is in the same
block is printed inline at its use; every other value gets a variable named after its
SSA name hint.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, cast

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FusedLoc,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NameLoc,
    Signedness,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion import dtypes
from autofusion.diagnostics import UserError

# C++ operator precedence, higher binds tighter
PRIMARY, UNARY, MUL, ADD, SHIFT, REL, EQ, BITAND, XOR, BITOR, AND, OR, COND = (
    100,
    90,
    80,
    70,
    60,
    50,
    45,
    40,
    35,
    30,
    20,
    15,
    10,
)


@dataclass(frozen=True)
class CppExpr:
    """A C++ expression and the precedence of its outermost operator."""

    text: str
    prec: int = PRIMARY

    def at(self, prec: int) -> str:
        """The text, parenthesized if it binds looser than `prec`."""
        return self.text if self.prec >= prec else f"({self.text})"


def binary(a: CppExpr, op: str, b: CppExpr, prec: int) -> CppExpr:
    """`a op b` for a left-associative operator of precedence `prec`."""
    return CppExpr(f"{a.at(prec)} {op} {b.at(prec + 1)}", prec)


def call(name: str, *args: CppExpr) -> CppExpr:
    return CppExpr(f"{name}({', '.join(a.text for a in args)})")


# ---------------------------------------------------------------------------------------
# Types and literals
# ---------------------------------------------------------------------------------------

# C++ scalar type of an MLIR scalar type; 16-bit floats are Ascend C's half/bfloat16_t
_INT_TYPES = {1: "bool", 8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}


def scalar_type(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "int64_t"
    if isinstance(t, IntegerType) and t.width.data in _INT_TYPES:
        if t.signedness.data == Signedness.UNSIGNED and t.width.data > 1:
            return "u" + _INT_TYPES[t.width.data]
        return _INT_TYPES[t.width.data]
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float16Type):
        return "half"
    if isinstance(t, BFloat16Type):
        return "bfloat16_t"
    if isinstance(t, Float64Type):
        return "double"
    raise UserError(f"type {t} has no C++ scalar type in afc's Ascend C printer")


def unsigned_type(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "uint64_t"
    if isinstance(t, IntegerType) and t.width.data in _INT_TYPES:
        return "bool" if t.width.data == 1 else "u" + _INT_TYPES[t.width.data]
    raise UserError(f"type {t} has no unsigned C++ type")


def int_literal(value: int) -> CppExpr:
    text = str(value) if -(2**31) <= value < 2**31 else f"INT64_C({value})"
    return CppExpr(text, UNARY if value < 0 else PRIMARY)


def float_literal(value: float, t: Attribute) -> CppExpr:
    """The shortest literal that reads back as the same value of type `t`."""
    if math.isnan(value):
        text = '__builtin_nanf("")'
    elif math.isinf(value):
        text = "__builtin_inff()" if value > 0 else "-__builtin_inff()"
    else:
        f64 = isinstance(t, Float64Type)
        v = np.float64(value) if f64 else np.float32(value)
        magnitude = abs(float(v))
        if magnitude != 0 and (magnitude < 1e-4 or magnitude >= 1e16):
            digits = np.format_float_scientific(v, unique=True, trim="0", exp_digits=1)
        else:
            digits = np.format_float_positional(v, unique=True, trim="0")
        text = digits if f64 else digits + "f"
    if isinstance(t, Float16Type | BFloat16Type):
        return CppExpr(f"{scalar_type(t)}({text})")
    return CppExpr(text, UNARY if text.startswith("-") else PRIMARY)


def literal(op: arith.ConstantOp) -> CppExpr:
    value = op.value
    if isinstance(value, IntegerAttr):
        if isinstance(value.type, IntegerType) and value.type.width.data == 1:
            return CppExpr("true" if value.value.data else "false")
        return int_literal(value.value.data)
    if isinstance(value, FloatAttr):
        return float_literal(float(value.value.data), value.type)
    raise UserError(f"arith.constant {value} has no C++ literal (only scalar constants do)")


# ---------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------

_KEYWORD_TEXT = """alignas alignof and and_eq asm auto bitand bitor bool break case catch char
    char16_t char32_t class compl const constexpr const_cast continue decltype default delete do
    double dynamic_cast else enum explicit export extern false float for friend goto if inline int
    long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
    public register reinterpret_cast return short signed sizeof static static_assert static_cast
    struct switch template this thread_local throw true try typedef typeid typename union
    unsigned using virtual void volatile wchar_t while xor xor_eq int8_t int16_t int32_t int64_t
    uint8_t uint16_t uint32_t uint64_t size_t half bfloat16_t main std"""
CPP_KEYWORDS = frozenset(_KEYWORD_TEXT.split())

_IDENT = re.compile(r"[^A-Za-z0-9_]")


class Namer:
    """Unique C++ identifiers from SSA name hints; `reserved` names are never produced."""

    def __init__(self, reserved: frozenset[str] | set[str] = frozenset()) -> None:
        self.taken: set[str] = set(CPP_KEYWORDS) | set(reserved)

    def fresh(self, hint: str | None, fallback: str = "v") -> str:
        base = _IDENT.sub("_", hint) if hint else fallback
        base = base.strip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}{base}"
        name, n = base, 1
        while name in self.taken or name.startswith("__"):
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


def memref_element(value: SSAValue) -> Attribute:
    """The element type of a memref value."""
    return cast(MemRefType, value.type).element_type


def memref_width(value: SSAValue) -> int:
    """The byte width of a memref value's element."""
    return dtypes.byte_width(memref_element(value))


def static_cast_text(text: str, ctype: str) -> str:
    """`static_cast<ctype>(text)`, or the literal itself."""
    return text if text.lstrip("-").isdigit() else f"static_cast<{ctype}>({text})"


def factor_text(text: str) -> str:
    """`text` as an operand of `*`: parenthesized unless it is a number."""
    return text if text.isdigit() else f"({text})"


def camel(name: str) -> str:
    """main_kernel0 -> MainKernel0 (the op type of a snake_case kernel name, ascend.md 2.2)."""
    parts = [p for p in _IDENT.sub("_", name).split("_") if p]
    out = "".join(p[:1].upper() + p[1:] for p in parts) or "Kernel"
    return out if not out[0].isdigit() else f"K{out}"


def describe_location(loc: Attribute) -> str:
    """A location as text for --debug comments: `graph.add "node" at file:3:5`."""
    if isinstance(loc, UnknownLoc):
        return ""
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    if isinstance(loc, NameLoc):
        inner = describe_location(loc.location)
        name = loc.desc.data
        text = name if name.startswith("graph.") else f'"{name}"'
        if not inner:
            return text
        return f"{text} {inner}" if inner.startswith('"') else f"{text} at {inner}"
    if isinstance(loc, FusedLoc):
        parts = cast(ArrayAttr[Attribute], loc.locations).data
        return ", ".join(d for d in (describe_location(x) for x in parts) if d)
    return ""


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


class CppWriter:
    """Lines of C++ with 4-space indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def line(self, text: str = "", comment: str | None = None) -> None:
        if not text:
            self.lines.append("")
            return
        suffix = f"  // {comment}" if comment else ""
        self.lines.append("    " * self.level + text + suffix)

    @contextmanager
    def block(self, head: str, comment: str | None = None) -> Iterator[None]:
        """`head {` ... `}`."""
        self.line(f"{head} {{", comment)
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    @contextmanager
    def function(self, head: str) -> Iterator[None]:
        """A function body in the Ascend C samples' style: the brace on its own line."""
        self.line(head)
        self.line("{")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    def text(self) -> str:
        return "\n".join(self.lines)


# ---------------------------------------------------------------------------------------
# Helpers with MLIR semantics the C++ operators lack
# ---------------------------------------------------------------------------------------

HELPERS: dict[str, str] = {
    "CeilDiv": """int64_t CeilDiv(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}""",
    "FloorDiv": """int64_t FloorDiv(int64_t a, int64_t b)
{
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}""",
    "Max": """int64_t Max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}""",
    "Min": """int64_t Min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}""",
    "Maximum": """float Maximum(float a, float b)
{
    return (a != a || a > b) ? a : b;
}""",
    "Minimum": """float Minimum(float a, float b)
{
    return (a != a || a < b) ? a : b;
}""",
    "MaxNum": """float MaxNum(float a, float b)
{
    return (b != b || a > b) ? a : b;
}""",
    "MinNum": """float MinNum(float a, float b)
{
    return (b != b || a < b) ? a : b;
}""",
}

_HELPER_OPS: dict[type[Operation], str] = {
    arith.MinSIOp: "Min",
    arith.MaxSIOp: "Max",
    arith.CeilDivSIOp: "CeilDiv",
    arith.FloorDivSIOp: "FloorDiv",
    arith.MaximumfOp: "Maximum",
    arith.MinimumfOp: "Minimum",
    arith.MaxnumfOp: "MaxNum",
    arith.MinnumfOp: "MinNum",
}

_BINARY_OPS: dict[type[Operation], tuple[str, int]] = {
    arith.AddiOp: ("+", ADD),
    arith.AddfOp: ("+", ADD),
    arith.SubiOp: ("-", ADD),
    arith.SubfOp: ("-", ADD),
    arith.MuliOp: ("*", MUL),
    arith.MulfOp: ("*", MUL),
    arith.DivfOp: ("/", MUL),
    arith.DivSIOp: ("/", MUL),
    arith.RemSIOp: ("%", MUL),
    arith.AndIOp: ("&", BITAND),
    arith.OrIOp: ("|", BITOR),
    arith.XOrIOp: ("^", XOR),
    arith.ShLIOp: ("<<", SHIFT),
    arith.ShRSIOp: (">>", SHIFT),
}

# operators on the unsigned reinterpretation of both operands
_UNSIGNED_OPS: dict[type[Operation], tuple[str, int]] = {
    arith.DivUIOp: ("/", MUL),
    arith.RemUIOp: ("%", MUL),
    arith.ShRUIOp: (">>", SHIFT),
}

_CASTS = (
    arith.IndexCastOp,
    arith.SIToFPOp,
    arith.FPToSIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.ExtSIOp,
    arith.TruncIOp,
)
_UNSIGNED_CASTS = (arith.UIToFPOp, arith.ExtUIOp)

_CMPI = {
    "eq": ("==", EQ, False),
    "ne": ("!=", EQ, False),
    "slt": ("<", REL, False),
    "sle": ("<=", REL, False),
    "sgt": (">", REL, False),
    "sge": (">=", REL, False),
    "ult": ("<", REL, True),
    "ule": ("<=", REL, True),
    "ugt": (">", REL, True),
    "uge": (">=", REL, True),
}
_CMPI_NAMES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_CMPF_NAMES = (
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
)


def _cmpf(pred: str, a: CppExpr, b: CppExpr) -> CppExpr:
    ordered = {"oeq": ("==", EQ), "ogt": (">", REL), "oge": (">=", REL), "olt": ("<", REL)}
    ordered |= {"ole": ("<=", REL), "une": ("!=", EQ)}
    if pred in ordered:
        op, prec = ordered[pred]
        return binary(a, op, b, prec)
    # an unordered predicate is the negation of the opposite ordered one
    negated = {"ueq": "one", "ugt": "ole", "uge": "olt", "ult": "oge", "ule": "ogt"}
    if pred == "one":
        return CppExpr(f"({a.at(REL + 1)} < {b.at(REL + 1)} || {a.at(REL + 1)} > {b.at(REL + 1)})")
    if pred in negated:
        return CppExpr(f"!{_cmpf(negated[pred], a, b).at(PRIMARY)}", UNARY)
    if pred == "ord":
        return CppExpr(f"({a.at(EQ + 1)} == {a.at(EQ + 1)} && {b.at(EQ + 1)} == {b.at(EQ + 1)})")
    if pred == "uno":
        return CppExpr(f"({a.at(EQ + 1)} != {a.at(EQ + 1)} || {b.at(EQ + 1)} != {b.at(EQ + 1)})")
    return CppExpr("true" if pred == "true" else "false")


# ---------------------------------------------------------------------------------------
# The scalar printer
# ---------------------------------------------------------------------------------------


class ScalarPrinter:
    """Prints ops of `arith` and `scf` as C++ statements and expressions.

    Subclasses add their dialects' ops by overriding `render_op` (pure ops that may be
    inlined) and `statement` (everything else), and decide what may be inlined with
    `may_inline`.
    """

    INLINE_OPS: ClassVar[tuple[type[Operation], ...]] = (
        *_BINARY_OPS,
        *_UNSIGNED_OPS,
        *_HELPER_OPS,
        *_CASTS,
        *_UNSIGNED_CASTS,
        arith.MinUIOp,
        arith.MaxUIOp,
        arith.NegfOp,
        arith.CmpiOp,
        arith.CmpfOp,
        arith.SelectOp,
    )

    def __init__(self, namer: Namer, helper_qualifiers: str) -> None:
        self.namer = namer
        self.helper_qualifiers = helper_qualifiers
        self.helpers_used: set[str] = set()
        self.names: dict[SSAValue, str] = {}
        self.bound: dict[SSAValue, CppExpr] = {}
        self.inlined: set[Operation] = set()
        self.dead: set[Operation] = set()
        self.w = CppWriter()
        self.yield_targets: list[list[str]] = []

    # ---- naming and inlining -----------------------------------------------------------

    def name(self, value: SSAValue, fallback: str = "v") -> str:
        """The variable of `value`, created on first request."""
        if value not in self.names:
            self.names[value] = self.namer.fresh(value.name_hint, fallback)
        return self.names[value]

    def is_pure_expression(self, op: Operation) -> bool:
        return isinstance(op, self.INLINE_OPS) and len(op.results) == 1

    def may_inline(self, op: Operation, user: Operation) -> bool:
        """Whether `op` (pure, single use by `user`) is printed inside `user`'s statement."""
        return user.parent_block() is op.parent_block()

    def live_uses(self, value: SSAValue) -> list[Operation]:
        """The ops that read `value` and are printed (dead pure ops are not)."""
        return [u.operation for u in value.uses if u.operation not in self.dead]

    def find_dead(self, ops: Iterator[Operation]) -> None:
        """Mark the pure ops whose results nothing printed reads (they are not printed)."""
        for op in reversed(list(ops)):
            pure = self.is_pure_expression(op) or isinstance(op, arith.ConstantOp)
            if pure and not any(self.live_uses(r) for r in op.results):
                self.dead.add(op)

    def decide_inlining(self, ops: Iterator[Operation]) -> None:
        """Mark the ops printed inline: constants, and pure ops with one use that
        `may_inline` allows (call `find_dead` first)."""
        for op in ops:
            if op in self.dead:
                continue
            if isinstance(op, arith.ConstantOp):
                self.inlined.add(op)
                continue
            if not self.is_pure_expression(op) or op.results[0] in self.bound:
                continue
            uses = self.live_uses(op.results[0])
            if len(uses) == 1 and self.may_inline(op, uses[0]):
                self.inlined.add(op)

    # ---- expressions -------------------------------------------------------------------

    def expr(self, value: SSAValue) -> CppExpr:
        if value in self.bound:
            return self.bound[value]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp):
            return literal(owner)
        if isinstance(owner, Operation) and owner in self.inlined:
            return self.render_op(owner)
        if value in self.names:
            return CppExpr(self.names[value])
        where = owner.name if isinstance(owner, Operation) else "a block argument"
        raise UserError(f"internal: the value of {where} is used before it is printed")

    def helper(self, name: str) -> str:
        self.helpers_used.add(name)
        return f"afc::{name}"

    def render_op(self, op: Operation) -> CppExpr:
        """The expression of a pure op's result."""
        args = [self.expr(v) for v in op.operands]
        t = op.results[0].type
        if type(op) in _BINARY_OPS:
            sym, prec = _BINARY_OPS[type(op)]
            return binary(args[0], sym, args[1], prec)
        if type(op) in _UNSIGNED_OPS:
            sym, prec = _UNSIGNED_OPS[type(op)]
            u = unsigned_type(t)
            a, b = (CppExpr(f"static_cast<{u}>({x.text})") for x in args)
            return CppExpr(f"static_cast<{scalar_type(t)}>({binary(a, sym, b, prec).text})")
        if type(op) in _HELPER_OPS:
            return call(self.helper(_HELPER_OPS[type(op)]), *args)
        if isinstance(op, arith.MinUIOp | arith.MaxUIOp):
            sym = "<" if isinstance(op, arith.MinUIOp) else ">"
            a, b = args
            u = unsigned_type(t)
            test = f"static_cast<{u}>({a.text}) {sym} static_cast<{u}>({b.text})"
            return CppExpr(f"({test} ? {a.at(COND + 1)} : {b.at(COND + 1)})")
        if isinstance(op, _CASTS):
            return CppExpr(f"static_cast<{scalar_type(t)}>({args[0].text})")
        if isinstance(op, _UNSIGNED_CASTS):
            u = unsigned_type(op.operands[0].type)
            return CppExpr(f"static_cast<{scalar_type(t)}>(static_cast<{u}>({args[0].text}))")
        if isinstance(op, arith.NegfOp):
            return CppExpr(f"-{args[0].at(UNARY)}", UNARY)
        if isinstance(op, arith.CmpiOp):
            sym, prec, unsigned = _CMPI[_CMPI_NAMES[op.predicate.value.data]]
            a, b = args
            if unsigned:
                u = unsigned_type(op.operands[0].type)
                a, b = (CppExpr(f"static_cast<{u}>({x.text})") for x in (a, b))
            return binary(a, sym, b, prec)
        if isinstance(op, arith.CmpfOp):
            return _cmpf(_CMPF_NAMES[op.predicate.value.data], args[0], args[1])
        if isinstance(op, arith.SelectOp):
            c, a, b = args
            return CppExpr(f"{c.at(COND + 1)} ? {a.at(COND + 1)} : {b.at(COND)}", COND)
        raise UserError(f"{op.name}: afc's C++ printer has no expression for this op")

    # ---- statements --------------------------------------------------------------------

    def cpp_type(self, t: Attribute) -> str:
        """The C++ type of a value of type `t` (subclasses add memrefs)."""
        return scalar_type(t)

    def emit_block(self, block: Block) -> None:
        for op in block.ops:
            if op in self.inlined or op in self.dead:
                continue
            self.statement(op)

    def statement(self, op: Operation) -> None:
        """Print one op as statements; the base handles pure ops and `scf`."""
        if isinstance(op, scf.ForOp):
            self.emit_for(op)
        elif isinstance(op, scf.IfOp):
            self.emit_if(op)
        elif isinstance(op, scf.YieldOp):
            self.emit_yield(op)
        elif self.is_pure_expression(op) or isinstance(op, arith.ConstantOp):
            self.emit_definition(op, self.render_op(op))
        else:
            raise UserError(f"{op.name}: afc's Ascend C printer has no translation for this op")

    def comment(self, op: Operation) -> str | None:
        """A trailing comment for `op`'s statement (--debug)."""
        return None

    def emit_definition(self, op: Operation, value: CppExpr) -> None:
        result = op.results[0]
        if not self.live_uses(result):
            return  # a pure value nothing reads
        if result in self.bound:
            self.w.line(f"{self.bound[result].text} = {value.text};", self.comment(op))
            return
        name = self.name(result)
        self.w.line(f"{self.cpp_type(result.type)} {name} = {value.text};", self.comment(op))

    def emit_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        iv = body.args[0]
        iv_name = self.name(iv, "i")
        targets: list[str] = []
        for init, arg, res in zip(op.iter_args, body.args[1:], op.results):
            var = self.name(arg, "acc")
            self.w.line(f"{self.cpp_type(arg.type)} {var} = {self.expr(init).text};")
            self.names[res] = var
            targets.append(var)
        t = self.cpp_type(iv.type)
        lb, ub, step = (self.expr(v) for v in (op.lb, op.ub, op.step))
        inc = f"++{iv_name}" if step.text == "1" else f"{iv_name} += {step.text}"
        head = f"for ({t} {iv_name} = {lb.text}; {iv_name} < {ub.at(REL + 1)}; {inc})"
        self.yield_targets.append(targets)
        with self.w.block(head, self.comment(op)):
            self.emit_block(body)
        self.yield_targets.pop()

    def emit_if(self, op: scf.IfOp) -> None:
        targets = []
        for res in op.results:
            var = self.name(res)
            self.w.line(f"{self.cpp_type(res.type)} {var}{{}};")
            targets.append(var)
        self.yield_targets.append(targets)
        with self.w.block(f"if ({self.expr(op.cond).text})", self.comment(op)):
            self.emit_block(op.true_region.block)
        if op.false_region.blocks and (len(op.false_region.block.ops) > 1 or op.results):
            with self.w.block("else"):
                self.emit_block(op.false_region.block)
        self.yield_targets.pop()

    def emit_yield(self, op: scf.YieldOp) -> None:
        targets = self.yield_targets[-1] if self.yield_targets else []
        values = [self.expr(v) for v in op.operands]
        if len(values) == 1:
            self.w.line(f"{targets[0]} = {values[0].text};")
            return
        # yield values may read the loop-carried variables: assign through temporaries
        temps = []
        for target, value in zip(targets, values):
            tmp = self.namer.fresh(f"{target}_next")
            self.w.line(f"auto {tmp} = {value.text};")
            temps.append(tmp)
        for target, tmp in zip(targets, temps):
            self.w.line(f"{target} = {tmp};")

    def helper_text(self) -> list[str]:
        """Definitions of the helpers used, in `namespace afc` (deterministic order)."""
        if not self.helpers_used:
            return []
        lines = ["namespace afc {"]
        for name in sorted(self.helpers_used):
            body = HELPERS[name].split("\n")
            lines.append(f"{self.helper_qualifiers} {body[0]}")
            lines.extend(body[1:])
        lines.append("}  // namespace afc")
        return lines


def ops_in(op: Operation) -> Iterator[Operation]:
    """Every op nested in `op` (not `op` itself), in program order."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield inner
                yield from ops_in(inner)
