"""Activation epilogues: conv, gemm or matmul followed by relu, relu6/clip, gelu, silu or
sigmoid becomes one cube op with `activation` set.

On Ascend the activation then runs on the L0C->GM/UB path (FixPipe applies ReLU
natively; the others run in the vector epilogue of the same kernel), instead of a second
kernel that re-reads the whole output from GM.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import PatternRewriter

from autofusion.dialects import graph
from autofusion.passes import matching as m
from autofusion.passes.fusion_rule import FusionRule, Refusal

ACTIVATION_OPS = (graph.ReluOp, graph.ClipOp, graph.GeluOp, graph.SiluOp, graph.SigmoidOp)


@dataclass
class Epilogue:
    cube: Operation
    props: dict[str, Attribute]


def _activation_props(op: Operation) -> dict[str, Attribute]:
    """The cube-op properties that express the activation `op`."""
    if isinstance(op, graph.ReluOp):
        return {"activation": StringAttr("relu")}
    if isinstance(op, graph.ClipOp):
        props: dict[str, Attribute] = {"activation": StringAttr("clip")}
        if op.min is not None:
            props["clip_min"] = op.min
        if op.max is not None:
            props["clip_max"] = op.max
        return props
    if isinstance(op, graph.GeluOp):
        tanh = graph.Props(op.properties, op.name).text("approximate") == "tanh"
        return {"activation": StringAttr("gelu_tanh" if tanh else "gelu")}
    if isinstance(op, graph.SiluOp):
        return {"activation": StringAttr("silu")}
    return {"activation": StringAttr("sigmoid")}


class ActivationEpilogue(FusionRule[Epilogue]):
    """Shared matching: the activation's input is the single-use output of a cube op."""

    cube_ops: tuple[type[Operation], ...]
    anchors = ACTIVATION_OPS

    def match(self, op: Operation) -> Epilogue | Refusal | None:
        cube = op.operands[0].owner
        if not isinstance(cube, self.cube_ops):
            return None
        if "activation" in cube.properties:
            return Refusal("the cube op already applies an activation")
        if not m.single_use(cube.results[0]):
            return Refusal("the cube op's output has other users than the activation")
        return Epilogue(cube, _activation_props(op))

    def rewrite(self, op: Operation, match: Epilogue, rewriter: PatternRewriter) -> None:
        cube = match.cube
        assert isinstance(cube, graph.GraphOp)
        new = type(cube).make(list(cube.operands), {**cube.properties, **match.props})
        new.location = m.fused_location([cube, op])
        rewriter.replace(op, [new])


class ConvActivation(ActivationEpilogue):
    rule_name = "ConvActivationFusionPass"
    pattern = "Conv2D->Relu|Clip|Gelu|Silu|Sigmoid"
    cube_ops = (graph.Conv2dOp,)


class MatMulActivation(ActivationEpilogue):
    rule_name = "MatMulActivationFusionPass"
    pattern = "MatMul|Gemm->Relu|Clip|Gelu|Silu|Sigmoid"
    cube_ops = (graph.MatmulOp, graph.GemmOp)
