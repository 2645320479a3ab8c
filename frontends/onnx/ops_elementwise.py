"""Converters of ONNX elementwise math beyond `ops_math`: rounding, trigonometric and
hyperbolic functions, NaN/Inf tests, Mod, bit shifts and bitwise ops, Shrink, Celu,
Swish and Gelu. Each becomes one op of `autofusion.dialects.graph_math` (Swish with
alpha = 1 is graph.silu, Gelu graph.gelu). Versions are cited as `Op-<since_version>`.
"""

from __future__ import annotations

from autofusion import dtypes
from autofusion.dialects import graph
from autofusion.dialects import graph_math as gm
from autofusion.dialects.graph_base import GraphOp
from frontends.onnx.importer import Node, OpConverters, Value

OPS = OpConverters(
    versions={
        "Acos": (7, 22),
        "Acosh": (9, 22),
        "Asin": (7, 22),
        "Asinh": (9, 22),
        "Atan": (7, 22),
        "Atanh": (9, 22),
        "BitShift": (11, 28),
        "BitwiseAnd": (18,),
        "BitwiseNot": (18,),
        "BitwiseOr": (18,),
        "BitwiseXor": (18,),
        "Ceil": (13,),
        "Celu": (12, 28),
        "Cosh": (9, 22),
        "Floor": (13,),
        "Gelu": (20,),
        "IsInf": (10, 20),
        "IsNaN": (13, 20),
        "Mod": (13, 28),
        "Round": (11, 22),
        "Shrink": (9,),
        "Sign": (13,),
        "Sinh": (9, 22),
        "Swish": (24,),
        "Tan": (7, 22),
    }
)


UNARY: dict[str, type[GraphOp]] = {
    "Tan": gm.TanOp,
    "Asin": gm.AsinOp,
    "Acos": gm.AcosOp,
    "Atan": gm.AtanOp,
    "Sinh": gm.SinhOp,
    "Cosh": gm.CoshOp,
    "Asinh": gm.AsinhOp,
    "Acosh": gm.AcoshOp,
    "Atanh": gm.AtanhOp,
    "Floor": gm.FloorOp,
    "Ceil": gm.CeilOp,
    "Round": gm.RoundOp,
    "Sign": gm.SignOp,
    "BitwiseNot": gm.BitwiseNotOp,
    "IsNaN": gm.IsNanOp,
}


@OPS.register(*UNARY)
def convert_unary(node: Node) -> list[Value]:
    """Tan/Asin/Acos/Atan-7 and -22, Sinh/Cosh/Asinh/Acosh/Atanh-9 and -22, Floor/Ceil-13,
    Round-11 and -22, Sign-13, BitwiseNot-18, IsNaN-13 and -20: one graph op each (the
    newer versions only add element types)."""
    return node.emit(UNARY[node.op_type], [node.input(0)])


BINARY: dict[str, type[GraphOp]] = {
    "BitwiseAnd": gm.BitwiseAndOp,
    "BitwiseOr": gm.BitwiseOrOp,
    "BitwiseXor": gm.BitwiseXorOp,
}


@OPS.register(*BINARY)
def convert_binary(node: Node) -> list[Value]:
    """BitwiseAnd-18, BitwiseOr-18, BitwiseXor-18."""
    return node.emit(BINARY[node.op_type], [node.input(0), node.input(1)])


@OPS.register("IsInf")
def convert_is_inf(node: Node) -> list[Value]:
    """IsInf-10 and -20: which infinities count is chosen by detect_positive/negative."""
    props = {
        "detect_positive": bool(node.attr("detect_positive", 1)),
        "detect_negative": bool(node.attr("detect_negative", 1)),
    }
    return node.emit(gm.IsInfOp, [node.input(0)], props)


@OPS.register("Mod")
def convert_mod(node: Node) -> list[Value]:
    """Mod-13 and -28. fmod=0 on floating-point inputs is Python's floored remainder from
    Mod-28; Mod-13 requires fmod=1 for them."""
    a, b = node.input(0), node.input(1)
    fmod = int(node.attr("fmod", 0))
    if fmod not in (0, 1):
        raise node.reject("fmod", fmod, "0 or 1")
    if not fmod and dtypes.is_float(a.elt) and node.version < 28:
        raise node.error(
            f"fmod=0 on {a.elt} inputs is undefined before Mod-28 (Mod-{node.version} "
            "requires fmod=1 for floating point)"
        )
    return node.emit(gm.ModOp, [a, b], {"fmod": bool(fmod)})


@OPS.register("BitShift")
def convert_bit_shift(node: Node) -> list[Value]:
    """BitShift-11 (unsigned types) and -28 (also signed: arithmetic right shifts)."""
    direction = node.attr("direction")
    if direction not in gm.BIT_SHIFT_DIRECTIONS:
        raise node.reject("direction", direction, "LEFT or RIGHT")
    return node.emit(gm.BitShiftOp, [node.input(0), node.input(1)], {"direction": direction})


@OPS.register("Shrink")
def convert_shrink(node: Node) -> list[Value]:
    """Shrink-9: x < -lambd ? x + bias : (x > lambd ? x - bias : 0)."""
    props = {"lambd": float(node.attr("lambd", 0.5)), "bias": float(node.attr("bias", 0.0))}
    if props["lambd"] < 0:
        raise node.reject("lambd", props["lambd"], "lambd >= 0")
    return node.emit(gm.ShrinkOp, [node.input(0)], props)


@OPS.register("Celu")
def convert_celu(node: Node) -> list[Value]:
    """Celu-12 and -28 (bf16 added): max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 0:
        raise node.reject("alpha", alpha, "alpha != 0")
    return node.emit(gm.CeluOp, [node.input(0)], {"alpha": alpha})


@OPS.register("Swish")
def convert_swish(node: Node) -> list[Value]:
    """Swish-24: x * sigmoid(alpha * x); alpha = 1 is graph.silu (which has a vector
    kernel), other alphas graph.swish."""
    x = node.input(0)
    alpha = float(node.attr("alpha", 1.0))
    if alpha == 1.0:
        return node.emit(graph.SiluOp, [x])
    return node.emit(gm.SwishOp, [x], {"alpha": alpha})


@OPS.register("Gelu")
def convert_gelu(node: Node) -> list[Value]:
    """Gelu-20: graph.gelu with approximate "none" (erf) or "tanh"."""
    approximate = node.attr("approximate", "none")
    if approximate not in graph.GELU_APPROXIMATIONS:
        raise node.reject("approximate", approximate, "none or tanh")
    return node.emit(graph.GeluOp, [node.input(0)], {"approximate": approximate})
