"""ONNX sequences and optionals resolved at compile time (frontends/onnx/ops_sequence.py,
ops_optional.py): models whose sequences live inside the graph, against ONNX Runtime; a
sequence that reaches a graph output or whose length or positions depend on run-time data
is refused naming the node."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_import import check_against_ort, error_of, init, make_model, ops, vi  # noqa: E402

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(11)


def node(op: str, inputs: list[str], outputs: list[str], **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


def const(name: str, value: object, elem: int = I64) -> onnx.NodeProto:
    array = np.asarray(value)
    tensor = helper.make_tensor(name, elem, array.shape, array.reshape(-1).tolist())
    return helper.make_node("Constant", [], [name], name=name, value=tensor)


def x_feed(*shape: int) -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal(shape).astype(np.float32)}


def test_split_edit_and_concat() -> None:
    """SplitToSequence (keepdims=0), SequenceErase/At/Insert at negative positions,
    SequenceLength and ConcatFromSequence stacking along a new axis."""
    nodes = [
        node("SplitToSequence", ["x"], ["s"], axis=1, keepdims=0),
        const("p", -2),
        node("SequenceErase", ["s", "p"], ["s2"]),
        node("SequenceAt", ["s2", "p"], ["t"]),
        node("SequenceInsert", ["s2", "t", "p"], ["s3"]),
        node("ConcatFromSequence", ["s3"], ["y"], axis=-1, new_axis=1),
        node("SequenceLength", ["s3"], ["n"]),
    ]
    outputs = [vi("y", F, None), vi("n", I64, [])]
    m = make_model(nodes, [vi("x", F, [4, 6])], outputs)
    module = check_against_ort(m, x_feed(4, 6))
    assert "graph.split" in ops(module)


@pytest.mark.parametrize("split", [None, 2, [1, 3, 1]])
def test_split_sizes_and_concat(split: object) -> None:
    """SplitToSequence by chunks of 1, of a scalar size (last part smaller) and by sizes;
    ConcatFromSequence along an existing axis puts the parts back."""
    inits = [] if split is None else [init("split", np.asarray(split, np.int64))]
    inputs = ["x"] if split is None else ["x", "split"]
    nodes = [
        node("SplitToSequence", inputs, ["s"], axis=0),
        node("SequenceAt", ["s", "last"], ["t"]),
        node("ConcatFromSequence", ["s"], ["y"], axis=0),
    ]
    outputs = [vi("y", F, None), vi("t", F, None)]
    inits.append(init("last", np.asarray(-1, np.int64)))
    m = make_model(nodes, [vi("x", F, [5, 3])], outputs, inits)
    check_against_ort(m, x_feed(5, 3))


def test_construct_empty_and_insert() -> None:
    """SequenceEmpty, SequenceInsert (appending) and SequenceConstruct."""
    nodes = [
        node("SequenceEmpty", [], ["e"], dtype=F),
        node("Relu", ["x"], ["r"]),
        node("SequenceInsert", ["e", "r"], ["s1"]),
        node("SequenceInsert", ["s1", "x"], ["s2"]),
        node("SequenceConstruct", ["x", "r", "x"], ["c"]),
        node("ConcatFromSequence", ["s2"], ["y"], axis=1),
        node("ConcatFromSequence", ["c"], ["z"], axis=0, new_axis=1),
    ]
    m = make_model(nodes, [vi("x", F, [2, 3])], [vi("y", F, None), vi("z", F, None)])
    check_against_ort(m, x_feed(2, 3))


def test_sequence_map_is_unrolled() -> None:
    """SequenceMap over a split sequence and a tensor: one copy of the body per element."""
    body = helper.make_graph(
        [node("Add", ["a", "b"], ["c"]), node("Shape", ["c"], ["d"])],
        "body",
        [vi("a", F, None), vi("b", F, None)],
        [vi("c", F, None), vi("d", I64, None)],
    )
    nodes = [
        node("SplitToSequence", ["x", "two"], ["s"], axis=0),
        node("SequenceMap", ["s", "x0"], ["m", "shapes"], body=body),
        node("ConcatFromSequence", ["m"], ["y"], axis=0),
        node("ConcatFromSequence", ["shapes"], ["z"], axis=0, new_axis=1),
    ]
    inits = [init("two", np.asarray(2, np.int64))]
    m = make_model(
        nodes, [vi("x", F, [6, 3]), vi("x0", F, [3])], [vi("y", F, None), vi("z", I64, None)], inits
    )
    feeds = {**x_feed(6, 3), "x0": RNG.standard_normal(3).astype(np.float32)}
    module = check_against_ort(m, feeds)
    assert ops(module).count("graph.add") == 3


def test_if_and_loop_carry_sequences() -> None:
    """An If with a constant condition whose branches give sequences, and a Loop with a
    constant trip count that appends to a loop-carried sequence."""

    def branch(name: str, items: list[str]) -> onnx.GraphProto:
        made = node("SequenceConstruct", items, [f"{name}_s"])
        return helper.make_graph(
            [made], name, [], [helper.make_tensor_sequence_value_info(f"{name}_s", F, None)]
        )

    loop_body = helper.make_graph(
        [
            node("Cast", ["i"], ["fi"], to=F),
            node("Mul", ["x", "fi"], ["xi"]),
            node("SequenceInsert", ["acc", "xi"], ["acc2"]),
            node("Identity", ["c"], ["c2"]),
        ],
        "body",
        [
            vi("i", I64, []),
            vi("c", BOOL, []),
            helper.make_tensor_sequence_value_info("acc", F, None),
        ],
        [vi("c2", BOOL, []), helper.make_tensor_sequence_value_info("acc2", F, None)],
    )
    nodes = [
        const("cond", True, BOOL),
        node(
            "If",
            ["cond"],
            ["s"],
            then_branch=branch("then", ["x", "x"]),
            else_branch=branch("else", ["x"]),
        ),
        const("m", 3),
        node("Loop", ["m", "", "s"], ["acc"], body=loop_body),
        node("Identity", ["acc"], ["acc_id"]),
        node("ConcatFromSequence", ["acc_id"], ["y"], axis=0),
    ]
    m = make_model(nodes, [vi("x", F, [2])], [vi("y", F, None)])
    check_against_ort(m, x_feed(2))


def test_optionals() -> None:
    """Optional of a tensor and of nothing; OptionalHasElement and OptionalGetElement of
    each; an Optional of a sequence."""
    t = helper.make_tensor_type_proto(F, [3])
    nodes = [
        node("Optional", ["x"], ["o"]),
        node("Optional", [], ["none"], type=t),
        node("OptionalHasElement", ["o"], ["h1"]),
        node("OptionalHasElement", ["none"], ["h2"]),
        node("OptionalGetElement", ["o"], ["g"]),
        node("SequenceConstruct", ["x"], ["s"]),
        node("Optional", ["s"], ["os"]),
        node("OptionalGetElement", ["os"], ["gs"]),
        node("SequenceAt", ["gs", "zero"], ["y"]),
    ]
    outputs = [vi("h1", BOOL, []), vi("h2", BOOL, []), vi("g", F, [3]), vi("y", F, [3])]
    inits = [init("zero", np.asarray(0, np.int64))]
    m = make_model(nodes, [vi("x", F, [3])], outputs, inits)
    module = check_against_ort(m, x_feed(3))
    assert ops(module) == ["graph.constant", "graph.constant"]


# ---- refusals ----------------------------------------------------------------------


def test_sequence_output_is_refused() -> None:
    nodes = [node("SplitToSequence", ["x"], ["s"])]
    out = helper.make_tensor_sequence_value_info("s", F, None)
    m = make_model(nodes, [vi("x", F, [2, 3])], [out])
    assert error_of(m) == (
        "graph output 's' is a sequence; afc compiles models whose outputs are tensors"
    )


def test_optional_output_is_refused() -> None:
    nodes = [node("Optional", ["x"], ["o"])]
    out = helper.make_value_info(
        "o", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [3]))
    )
    m = make_model(nodes, [vi("x", F, [3])], [out])
    assert error_of(m) == (
        "graph output 'o' is an optional; afc compiles models whose outputs are tensors"
    )


def test_run_time_position_is_refused() -> None:
    nodes = [node("SplitToSequence", ["x"], ["s"]), node("SequenceAt", ["s", "p"], ["y"])]
    m = make_model(nodes, [vi("x", F, [2, 3]), vi("p", I64, [])], [vi("y", F, None)])
    assert error_of(m) == (
        "node 'y' (SequenceAt-11): the position (input #1) must be a constant, but it is computed"
    )


def test_symbolic_sequence_length_is_refused() -> None:
    nodes = [
        node("SplitToSequence", ["x"], ["s"]),
        node("ConcatFromSequence", ["s"], ["y"], axis=0),
    ]
    m = make_model(nodes, [vi("x", F, ["n", 3])], [vi("y", F, None)])
    assert error_of(m).startswith(
        "node 's' (SplitToSequence-11): the sequence length (dim 0 of the input) depends on "
        "symbolic input dims"
    )


@pytest.mark.parametrize(
    ("split", "message"),
    [
        ([1, 0, 1], "split sizes [1, 0, 1] must be positive"),
        ([1, 1], "split sizes [1, 1] do not add up to the dim's extent 3"),
        (0, "the split size 0 must be positive"),
    ],
)
def test_bad_split_is_refused(split: object, message: str) -> None:
    nodes = [
        node("SplitToSequence", ["x", "split"], ["s"], axis=1),
        node("ConcatFromSequence", ["s"], ["y"], axis=1),
    ]
    inits = [init("split", np.asarray(split, np.int64))]
    m = make_model(nodes, [vi("x", F, [2, 3])], [vi("y", F, None)], inits)
    assert error_of(m) == f"node 's' (SplitToSequence-11): {message}"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            [const("p", 2), node("SequenceAt", ["s", "p"], ["y"])],
            "node 'y' (SequenceAt-11): position 2 is out of range for a sequence of length 2",
        ),
        (
            [node("Cast", ["x"], ["xi"], to=I64), node("SequenceInsert", ["s", "xi"], ["y"])],
            "node 'y' (SequenceInsert-11): a i64 tensor cannot join a sequence of f32 tensors",
        ),
        (
            [
                node("Optional", [], ["o"], type=helper.make_tensor_type_proto(F, [3])),
                node("OptionalGetElement", ["o"], ["y"]),
            ],
            "node 'y' (OptionalGetElement-18): the optional 'o' is empty",
        ),
        (
            [node("Relu", ["s"], ["y"])],
            "node 'y' (Relu-14): input #0 ('s') is a sequence, not a tensor",
        ),
        (
            [node("SequenceLength", ["x"], ["y"])],
            "node 'y' (SequenceLength-11): input #0 ('x') is a tensor, not a sequence",
        ),
    ],
)
def test_bad_sequence_use_is_refused(extra: list[onnx.NodeProto], message: str) -> None:
    nodes = [node("SplitToSequence", ["x"], ["s"]), *extra]
    m = make_model(nodes, [vi("x", F, [2, 3])], [vi("y", F, None)])
    assert error_of(m) == message
