"""IREE as a peer: the fusion dispatches IREE forms from an ONNX model, and their traffic.

IREE (`pip install iree-base-compiler`, the `bench` extra) imports ONNX with
`iree-import-onnx` and groups ops into dispatches at its flow level:

    iree-import-onnx model.onnx -o m.mlir
    iree-compile m.mlir --iree-hal-target-device=local
        --iree-hal-local-target-device-backends=llvm-cpu --compile-to=flow

Every `flow.dispatch` op of the result is one kernel launch. Counted with the bench's
one-node-one-kernel rule, a dispatch reads each operand and writes each result once, so
its traffic is the bytes of its operand and result types (an i1 takes a byte, as IREE
stores it). `flow.tensor.*` ops outside dispatches (reshapes, and any splat, slice or
update IREE leaves as a transfer) are not counted. IREE's importer does not inline ONNX model-local functions (afc's exporter
writes rsqrt and silu as such), so they are inlined first (onnx.inliner).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

COMPILE_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--compile-to=flow",
)
TIMEOUT_SECONDS = 900
TOOLS = ("iree-import-onnx", "iree-compile")
_DISPATCH = re.compile(r"\bflow\.dispatch\s+[@{]")
_ELEMENT_BITS = re.compile(r"^(?:[a-z]*?)(\d+)")
# bit widths of the element types whose names carry none
_NAMED_BITS = {"index": 64, "i1": 8}


class IreeError(Exception):
    """IREE is missing, failed on a model, or printed a dispatch this parser cannot read."""


@dataclass(frozen=True)
class Dispatch:
    """One `flow.dispatch`: its entry point and the bytes it reads and writes."""

    entry: str
    read_bytes: int
    write_bytes: int


def _split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside every bracket pair; parts stripped, empty ones dropped."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}" and not (ch == ">" and text[i - 1] == "-"):
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _group(text: str, start: int) -> int:
    """Index just past the bracket group opening at `text[start]`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "<([{" and not (text[i] == "<" and i > 0 and text[i - 1] == "-"):
            depth += 1
        elif text[i] in ">)]}" and not (text[i] == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i + 1
    raise IreeError(f"unbalanced brackets in: {text.strip()}")


def type_bytes(t: str) -> int:
    """Bytes of an MLIR type as IREE prints it: `tensor<2x3xf16>{%d}` or a scalar."""
    t = re.sub(r"\{[^}]*\}$", "", t.strip())  # dynamic dims' SSA values
    shape: list[str] = []
    element = t
    if t.startswith("tensor<") and t.endswith(">"):
        body = _split_top(t[len("tensor<") : -1])[0]  # drop an encoding
        dims = re.match(r"(?:[0-9?]+x)*", body)
        assert dims is not None
        shape, element = dims.group(0).split("x")[:-1], body[dims.end() :]
    if any(not d.isdigit() for d in shape):
        raise IreeError(f"dynamic dimension in {t} (give the model static shapes)")
    bits = _NAMED_BITS.get(element)
    if bits is None:
        match = _ELEMENT_BITS.match(element.removeprefix("complex<"))
        if match is None:
            raise IreeError(f"unknown element type {element!r} in {t}")
        bits = int(match.group(1)) * (2 if element.startswith("complex<") else 1)
    return math.ceil(math.prod(int(d) for d in shape) * bits / 8)


def _dispatch(line: str) -> Dispatch:
    """Parse `%r = flow.dispatch @ex::@entry[%w](%a, %b) {attrs} : (T, T) -> R`."""
    at = _DISPATCH.search(line)
    assert at is not None
    rest = line[at.end() - 1 :]
    entry_end = _group(rest, 0) if rest[0] == "{" else len(rest.split("[")[0].split("(")[0])
    entry = rest[:entry_end].strip()
    i = entry_end
    if rest[i : i + 1] == "[":
        i = _group(rest, i)
    if rest[i : i + 1] != "(":
        raise IreeError(f"no operand list in: {line.strip()}")
    args_end = _group(rest, i)
    arguments = _split_top(rest[i + 1 : args_end - 1])
    colon = rest.find(" : (", args_end)
    if colon < 0:
        raise IreeError(f"no function type in: {line.strip()}")
    sig = rest[colon + 3 :]
    ins_end = _group(sig, 0)
    operand_types = _split_top(sig[1 : ins_end - 1])
    if len(operand_types) != len(arguments):
        raise IreeError(f"{len(arguments)} operands but {len(operand_types)} types in: {line}")
    outs = sig[ins_end:].strip().removeprefix("->").strip()
    if outs.startswith("("):
        outs = outs[1 : _group(outs, 0) - 1]
    by_name = dict(zip(arguments, operand_types))
    written = 0
    for result in _split_top(outs):
        # a result tied to an operand prints as `%operand` or `%operand as type`
        name, _, as_type = result.partition(" as ")
        name = re.sub(r"\{[^}]*\}$", "", name.strip())
        if as_type:
            written += type_bytes(as_type)
        elif result.startswith("%"):
            if name not in by_name:
                raise IreeError(f"tied result {name} is not an operand in: {line.strip()}")
            written += type_bytes(by_name[name])
        else:
            written += type_bytes(result)
    return Dispatch(entry, sum(type_bytes(t) for t in operand_types), written)


def parse_dispatches(flow_text: str) -> list[Dispatch]:
    """Every `flow.dispatch` op in IREE's flow-level IR, in order."""
    return [_dispatch(line) for line in flow_text.splitlines() if _DISPATCH.search(line)]


def tool(name: str) -> str | None:
    """Path of an IREE tool: beside this Python (the venv `make bench` fills), else PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def missing_reason() -> str | None:
    """Why IREE cannot run here (None when both tools are found)."""
    missing = [name for name in TOOLS if tool(name) is None]
    if missing:
        return f"{', '.join(missing)} not found (pip install iree-base-compiler onnx)"
    return None


def _run(args: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            args, check=False, capture_output=True, text=True, timeout=TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise IreeError(f"{what} timed out after {TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
        first = (errors or done.stderr.strip().splitlines() or ["no message"])[0]
        first = re.sub(r"^\S+:\d+:\d+: ", "", first.strip())  # the temporary file's location
        op = re.search(r'name = "(onnx\.\w+)"', first)
        if op is not None and "failed to legalize" in first:
            first = f"no lowering for {op.group(1)}"
        raise IreeError(f"{what} failed: {first[:160]}")


def flow_ir(model: object) -> str:
    """IREE's flow-level IR of an ONNX ModelProto (local functions inlined first)."""
    import onnx
    import onnx.inliner

    assert isinstance(model, onnx.ModelProto)
    reason = missing_reason()
    if reason is not None:
        raise IreeError(reason)
    with tempfile.TemporaryDirectory(prefix="afc-iree.") as tmp:
        src, mlir, flow = (Path(tmp) / n for n in ("model.onnx", "m.mlir", "m.flow.mlir"))
        onnx.save(onnx.inliner.inline_local_functions(model), str(src))
        _run([str(tool("iree-import-onnx")), str(src), "-o", str(mlir)], "iree-import-onnx")
        _run(
            [str(tool("iree-compile")), str(mlir), *COMPILE_FLAGS, "-o", str(flow)], "iree-compile"
        )
        return flow.read_text()


def dispatch_traffic(model: object) -> tuple[int, int]:
    """(dispatches, bytes) IREE forms from an ONNX ModelProto; IreeError says why not."""
    dispatches = parse_dispatches(flow_ir(model))
    return len(dispatches), sum(d.read_bytes + d.write_bytes for d in dispatches)
