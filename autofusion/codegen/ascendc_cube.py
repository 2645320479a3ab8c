"""The cube path of the Ascend C printer (ascend.md 2.10): the copies that move fractals
(GM -> L1 by DataCopy's ND2NZ or strips, L1 -> L0A/L0B by LoadData, L0C -> GM by Fixpipe,
CO1 -> CO2 and Nz -> ND in UB) and Mmad with its pipe barrier. KernelPrinter
(ascendc.py) prints them; its other statements stay there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from autofusion import dtypes
from autofusion.codegen.ascendc_analysis import root_of
from autofusion.codegen.cpp_scalar import (
    MUL,
    CppExpr,
    CppWriter,
    Namer,
    factor_text,
    memref_element,
    memref_width,
    static_cast_text,
)
from autofusion.diagnostics import UserError
from autofusion.dialects import buffer
from autofusion.dialects.ascendc_rules import view_offset
from autofusion.dialects.ascendc_rules import where as _where

if TYPE_CHECKING:
    from autofusion.codegen.ascendc_api import AscendCApi
    from autofusion.dialects.fractal_rules import FractalLayouts
    from autofusion.dialects.tiling_facts import Divisibility


class StageMethod(Protocol):
    """A buffer.stage as the printer's method: the values it takes as parameters."""

    @property
    def params(self) -> Sequence[SSAValue]: ...


class KernelPrinter(Protocol):
    """What the cube path uses of codegen/ascendc.py's KernelPrinter (a protocol, so
    this module does not import the printer that imports it)."""

    api: AscendCApi
    facts: Divisibility
    layouts: FractalLayouts
    namer: Namer
    w: CppWriter

    @property
    def bound(self) -> Mapping[SSAValue, CppExpr]: ...
    @property
    def stages(self) -> Mapping[buffer.StageOp, StageMethod]: ...

    def e(self, value: SSAValue) -> str: ...
    def expr(self, value: SSAValue) -> CppExpr: ...
    def comment(self, op: Operation) -> str | None: ...
    def line(self, op: Operation, text: str) -> None: ...
    def _aligned(self, value: SSAValue, width: int) -> bool: ...
    def _ctype(self, element: Attribute) -> str: ...
    def _scaled(self, value: SSAValue, width: int, unit: int = 1) -> str: ...


class CubePath:
    """The cube-path statements of one kernel's printer `p`, which writes them."""

    def __init__(self, p: KernelPrinter) -> None:
        self.p = p

    def _whole(self, op: Operation, value: SSAValue, what: str) -> SSAValue:
        """The buffer `value` is, which must be a whole buffer (no view offset)."""
        assert not self.p.layouts.at_offset(value), f"fractal_rules: the {what} of {op.name}"
        return root_of(value)

    def _visible(self, op: Operation, value: SSAValue, what: str) -> CppExpr:
        """`value` as an expression valid at `op` (a layout recorded elsewhere)."""
        exact = self.p.facts.exact(value)
        if exact is not None:
            return CppExpr(str(exact))
        method = self._method_of(op)
        if value in self.p.bound or (
            isinstance(method, buffer.StageOp) and value in self.p.stages[method].params
        ):
            return self.p.expr(value)
        block = value.owner if isinstance(value.owner, Block) else value.owner.parent_block()
        if self._method_of(value) is method and block is not None and block.is_ancestor(op):
            return self.p.expr(value)
        raise UserError(
            f"{_where(op)}: the {what} of its fractal matrix is computed in another stage; "
            "pass it as a tiling scalar",
            op,
        )

    def _fractals(self, op: Operation, rows: SSAValue, rows_of_16: bool = False) -> str:
        """ceil(rows / 16) (fractal rows), or rows rounded up to 16; folded when static."""
        exact = self.p.facts.exact(rows)
        if exact is not None:
            n = -(-exact // 16)
            return str(n * 16 if rows_of_16 else n)
        text = f"({self._visible(op, rows, 'row count').at(70)} + 15) / 16"
        return f"{text} * 16" if rows_of_16 else text

    def _method_of(self, value: SSAValue | Operation) -> Operation:
        """The buffer.stage (or the kernel) whose method prints `value`."""
        node = value if isinstance(value, Operation) else value.owner
        op = node if isinstance(node, Operation) else node.parent_op()
        while op is not None and not isinstance(op, buffer.StageOp | buffer.KernelOp):
            op = op.parent_op()
        return cast(Operation, op)

    def _params(
        self, op: Operation, struct: str, hint: str, fields: Sequence[tuple[str, str]]
    ) -> str:
        """Declare an API's parameter struct (`struct`, a variable named from `hint`) and
        set its `fields` in order; the variable."""
        p = self.p.namer.fresh(hint)
        self.p.line(op, f"{struct} {p};")
        for name, value in fields:
            self.p.line(op, f"{p}.{name} = {value};")
        return p

    def copy_nd2nz(self, op: buffer.CopyOp) -> None:
        """GM/UB -> L1: a row-major [blocks x length] block lands as Nz fractals
        (Nd2NzParams, ascend.md 2.10); the IR's row stride in L1 is kept for views."""
        dst = self._whole(op, op.dest, "destination")
        self.p.layouts.record(op)
        rows = self.p.expr(op.blocks)
        fields = [
            ("ndNum", "1"),
            ("nValue", rows.text),
            ("dValue", self.p.e(op.length)),
            ("srcNdMatrixStride", "0"),
            ("srcDValue", self.p.e(op.src_stride)),
            ("dstNzC0Stride", f"({rows.at(70)} + 15) / 16 * 16"),
            ("dstNzNStride", "1"),
            ("dstNzMatrixStride", "0"),
        ]
        p = self._params(op, self.p.api.nd2nz_params, "nd2nzParams", fields)
        self.p.line(op, f"{self.p.api.data_copy}({self.p.e(dst)}, {self.p.e(op.source)}, {p});")

    def copy_strips(self, op: buffer.CopyOp) -> None:
        """UB -> L1 on coupled chips: the 1001/2002 DataCopy has no Nd2Nz from UB (CANN
        8.1 dav_c100/dav_m200), so each C0-wide column strip of the row-major block is
        one strided DataCopy into its Nz fractal column (rows of 32 bytes, the source's
        gap its row stride; the Ascend samples' CopyND2NZ, there from GM)."""
        dst = self._whole(op, op.dest, "destination")
        self.p.layouts.record(op)
        w = memref_width(op.dest)
        c0 = 32 // w
        assert self.p._aligned(op.src_stride, w), "fractal_rules: a 32-byte UB row stride"
        rows = self.p.expr(op.blocks)
        strip = self.p.namer.fresh("strip")
        exact = self.p.facts.exact(op.src_stride)
        if exact is not None:
            gap = str(exact * w // 32 - 1)
        else:
            gap = f"static_cast<uint16_t>({self.p._scaled(op.src_stride, w, 32)} - 1)"
        p = self.p.namer.fresh("stripParams")
        head = f"for (int64_t {strip} = 0; {strip} < {self._ceil(op.length, c0)}; ++{strip})"
        with self.p.w.block(head, self.p.comment(op)):
            self.p.line(
                op,
                f"{self.p.api.copy_params} {p}{{{static_cast_text(rows.text, 'uint16_t')}, 1, {gap}, 0}};",
            )
            rows16 = factor_text(self._fractals(op, op.blocks, rows_of_16=True))
            column = f"{strip} * {rows16} * {c0}"
            self.p.line(
                op,
                f"{self.p.api.data_copy}({self.p.e(dst)}[{column}], "
                f"{self.p.expr(op.source).at(100)}[{strip} * {c0}], {p});",
            )

    def _ceil(self, value: SSAValue, unit: int) -> str:
        """ceil(value / unit), folded when static."""
        exact = self.p.facts.exact(value)
        if exact is not None:
            return str(-(-exact // unit))
        return f"({self.p.expr(value).at(70)} + {unit - 1}) / {unit}"

    def co1_to_co2(self, op: buffer.CopyOp) -> None:
        """L0C -> UB on coupled chips (CO1 -> CO2, ascend.md 1.7): DataCopy with
        DataCopyEnhancedParams in BLOCK_MODE_MATRIX moves whole 16x16 fractals (blockLen
        counts them, asc-devkit; docs/codegen.md), so the rows land in UB as the Nz
        fractals they are in L0C; the ub -> ub copy that reads them reorders them. A copy
        of the mmad's whole result is one contiguous DataCopy; a chunk of rows (a
        multiple of 16 from a row that is one) is one DataCopy per fractal column."""
        src = root_of(op.source)
        rows_c, n_c = self.p.layouts.layout(op, src, "L0C source")
        dst = self._whole(op, op.dest, "destination")
        self.p.layouts.record(op)
        n1 = self._fractals(op, n_c)
        mode = [("blockMode", self.p.api.block_mode_matrix)]
        enhanced = self._params(op, self.p.api.copy_enhanced_params, "co2Enhanced", mode)
        params = self.p.namer.fresh("co2Params")
        whole = not any(self.p.facts.exact(o) != 0 for o in view_offset(op.source))
        if whole and self.p.layouts.same(op.blocks, rows_c):
            m1 = self._fractals(op, rows_c)
            static = m1.isdigit() and n1.isdigit()
            fractals = str(int(m1) * int(n1)) if static else f"{m1} * ({n1})"
            self.p.line(
                op,
                f"{self.p.api.copy_params} {params}{{1, {static_cast_text(fractals, 'uint16_t')}, 0, 0}};",
            )
            self.p.line(
                op,
                f"{self.p.api.data_copy}({self.p.e(dst)}, {self.p.e(src)}, {params}, {enhanced});",
            )
            return
        row0 = "0"
        if not whole:
            stride = self._visible(op, n_c, "row stride").at(80)
            row0 = self.p.namer.fresh("row0")
            self.p.line(op, f"int64_t {row0} = {self._offset_expr(op.source)} / {stride};")
        r1 = self._fractals(op, op.blocks)
        self.p.line(
            op, f"{self.p.api.copy_params} {params}{{1, {static_cast_text(r1, 'uint16_t')}, 0, 0}};"
        )
        m16 = factor_text(self._fractals(op, rows_c, rows_of_16=True))
        r16 = factor_text(self._fractals(op, op.blocks, rows_of_16=True))
        j = self.p.namer.fresh("j")
        with self.p.w.block(f"for (int64_t {j} = 0; {j} < {n1}; ++{j})", self.p.comment(op)):
            self.p.line(
                op,
                f"{self.p.api.data_copy}({self.p.e(dst)}[{j} * {r16} * 16], "
                f"{self.p.e(src)}[({j} * {m16} + {row0}) * 16], {params}, {enhanced});",
            )

    def nz_to_nd(self, op: buffer.CopyOp) -> None:
        """UB (the Nz fractals a CO1 -> CO2 copy left) -> UB rows: per fractal column one
        strided DataCopy, each row's 16 elements to their place in the destination row
        (blocks of 32 bytes; the destination's row stride a 32-byte multiple)."""
        w = memref_width(op.dest)
        src = self._whole(op, op.source, "source")
        j = self.p.namer.fresh("j")
        length = self.p.expr(op.length)
        r16 = factor_text(self._fractals(op, op.blocks, rows_of_16=True))
        with self.p.w.block(
            f"for (int64_t {j} = 0; {j} < {self._ceil(op.length, 16)}; ++{j})", self.p.comment(op)
        ):
            block = self.p.namer.fresh("blockLen")
            cols_left = f"{length.at(71)} - {j} * 16"
            self.p.line(
                op,
                f"uint16_t {block} = static_cast<uint16_t>((({cols_left} < 16 ? {cols_left} : 16) * {w} + 31) / 32);",
            )
            stride = self.p._scaled(op.dst_stride, w, 32)
            p = self.p.namer.fresh("nz2ndParams")
            self.p.line(
                op,
                f"{self.p.api.copy_params} {p}{{{static_cast_text(self.p.e(op.blocks), 'uint16_t')}, {block}, 0, "
                f"static_cast<uint16_t>({stride} - {block})}};",
            )
            self.p.line(
                op,
                f"{self.p.api.data_copy}({self.p.expr(op.dest).at(100)}[{j} * 16], "
                f"{self.p.e(src)}[{j} * {r16} * 16], {p});",
            )

    def load_data(self, op: buffer.CopyOp) -> None:
        """L1 (Nz) -> L0A (Zz) or L0B (Zn) (ascend.md 1.5, 2.10; the asc-devkit sample
        mmad_s8_f16_f32_with_A_B_transpose_option gives the instruction per case).

        A plain copy into L0A and a `transpose` copy into L0B move whole fractals
        (LoadData, one row / column of destination fractals per call). A plain copy into
        L0B and a `transpose` copy into L0A transpose each fractal: LoadData's
        `ifTranspose` for half, LoadDataWithTranspose for bf16, LoadData3DV2 (a 1x1
        im2col) for a float B operand (the verifier refuses a transposed float A operand)."""
        src_root = root_of(op.source)
        rows_l1, stride_l1 = self.p.layouts.layout(op, src_root, "L1 source")
        dst = self._whole(op, op.dest, "destination")
        w = memref_width(op.dest)
        c0 = 32 // w
        elt = dtypes.type_name(memref_element(op.dest))
        to_b = op.path == ("l1", "l0b")
        transpose = op.transpose is not None
        fractal_transpose = to_b != transpose
        if fractal_transpose and elt == "f32":
            # the verifier refuses a transposed float A operand (fractal_rules.load_data)
            assert to_b, "a transposed float A operand passed the verifier"
            self._load_3d_transpose(op, dst, src_root, rows_l1, stride_l1)
            return
        m1_src = self.p.namer.fresh("srcFractalRows")
        self.p.line(op, f"int64_t {m1_src} = {self._fractals(op, rows_l1)};")
        start = "0"
        if view_offset(op.source):
            offset = self._offset_expr(op.source)
            stride = self._visible(op, stride_l1, "row stride").at(80)
            start = self.p.namer.fresh("startFractal")
            self.p.line(
                op,
                f"int64_t {start} = ({offset} % {stride}) / {c0} * {m1_src} + "
                f"({offset} / {stride}) / 16;",
            )
        # without transpose: one call per 16 source rows, along the row's fractals; with:
        # one per source fractal column (c0 columns), down the column's fractals
        outer_len, inner_len = (op.length, op.blocks) if transpose else (op.blocks, op.length)
        outer_unit, inner_unit = (c0, 16) if transpose else (16, c0 if not to_b else 16)
        repeat = self.p.namer.fresh("fractals")
        self.p.line(
            op,
            f"int64_t {repeat} = ({self.p.expr(inner_len).at(70)} + {inner_unit - 1}) / {inner_unit};",
        )
        outer = self.p.namer.fresh("k1" if to_b != transpose else "m1")
        step = f"{outer} * {m1_src}" if transpose else outer
        bf16_transpose = fractal_transpose and elt == "bf16"
        head = (
            f"for (int64_t {outer} = 0; {outer} < ({self.p.expr(outer_len).at(70)} + "
            f"{outer_unit - 1}) / {outer_unit}; ++{outer})"
        )
        with self.p.w.block(head, self.p.comment(op)):
            params = (
                self.p.api.load2d_transpose_params if bf16_transpose else self.p.api.load2d_params
            )
            fields = [
                ("startIndex", step if start == "0" else f"{start} + {step}"),
                ("repeatTimes", repeat),
                ("srcStride", "1" if transpose else m1_src),
            ]
            if not bf16_transpose:
                fields.append(("ifTranspose", "true" if fractal_transpose else "false"))
            p = self._params(op, params, "loadParams", fields)
            call = self.p.api.load_data_with_transpose if bf16_transpose else self.p.api.load_data
            # one fractal is 512 bytes (ascend.md 1.5)
            self.p.line(
                op,
                f"{call}({self.p.e(dst)}[{outer} * {repeat} * {512 // w}], {self.p.e(src_root)}, {p});",
            )

    def _load_3d_transpose(
        self,
        op: buffer.CopyOp,
        dst: SSAValue,
        src_root: SSAValue,
        rows_l1: SSAValue,
        stride_l1: SSAValue,
    ) -> None:
        """A float B operand [K x N] from its Nz in L1 into L0B (Zn): LoadData3DV2 reads
        the Nz matrix as an NC1HWC0 feature map of l1H = its padded rows, l1W = 1 and
        channelSize = its row stride, and a 1x1 kernel makes rows the pixels (K) and
        columns the channels (N) (asc-devkit sample mmad_s8_f16_f32, case 3.3)."""
        t = self.p._ctype(memref_element(op.dest))
        row0, col0 = "0", "0"
        if view_offset(op.source):
            offset = self._offset_expr(op.source)
            stride = self._visible(op, stride_l1, "row stride").at(80)
            row0, col0 = f"{offset} / {stride}", f"{offset} % {stride}"
        fields = [
            ("l1H", self._fractals(op, rows_l1, rows_of_16=True)),
            ("l1W", "1"),
            ("channelSize", self._visible(op, stride_l1, "row stride").text),
            ("kExtension", f"({self.p.expr(op.length).at(70)} + 15) / 16 * 16"),
            ("mExtension", f"({self.p.expr(op.blocks).at(70)} + 15) / 16 * 16"),
            ("kStartPt", col0),
            ("mStartPt", row0),
        ]
        p = self._params(op, f"{self.p.api.load3d_params}<{t}>", "load3dParams", fields)
        self.p.line(op, f"{self.p.api.load_data}({self.p.e(dst)}, {self.p.e(src_root)}, {p});")

    def _offset_expr(self, value: SSAValue) -> str:
        offsets = view_offset(value)
        if not offsets:
            return "0"
        return "(" + " + ".join(self.p.expr(o).at(71) for o in offsets) + ")"

    def mmad(self, op: buffer.MmadOp) -> None:
        c = self._whole(op, op.c, "C operand")
        a = self._whole(op, op.a, "A operand")
        b = self._whole(op, op.b, "B operand")
        self.p.layouts.record(op)
        owner = op.accumulate.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            init = "false" if owner.value.value.data else "true"
        else:
            init = f"!{self.p.expr(op.accumulate).at(90)}"
        fields = [
            ("m", self.p.e(op.m)),
            ("n", self.p.e(op.n)),
            ("k", self.p.e(op.k)),
            ("cmatrixInitVal", init),
        ]
        p = self._params(op, self.p.api.mmad_params, "mmadParams", fields)
        self.p.line(op, f"{self.p.api.mmad}({self.p.e(c)}, {self.p.e(a)}, {self.p.e(b)}, {p});")

    def pipe_barrier(self, op: buffer.PipeBarrierOp) -> None:
        """PipeBarrier<PIPE_X>(); with `small_mmad`, under the matmul library's test
        (mmad_compute.h:86), folded when both sizes are static."""
        call = f"{self.p.api.pipe_barrier}<PIPE_{op.pipe.data}>();"
        if not op.sizes:
            self.p.line(op, call)
            return
        m, n = op.sizes
        sizes = [self.p.facts.exact(v) for v in (m, n)]
        if sizes[0] is not None and sizes[1] is not None:
            if (sizes[0] // 16) * (sizes[1] // 16) < buffer.MMAD_BARRIER_LIMIT:
                self.p.line(op, call)
            return
        test = f"({self.p.expr(m).at(MUL)} / 16) * ({self.p.expr(n).at(MUL)} / 16)"
        with self.p.w.block(f"if ({test} < {buffer.MMAD_BARRIER_LIMIT})", self.p.comment(op)):
            self.p.line(op, call)

    def fixpipe(self, op: buffer.CopyOp) -> None:
        """L0C (Nz of 16x16) -> GM (ND), converting to the GM type and ReLU on the fly."""
        src = self._whole(op, op.source, "source")
        rows, _ = self.p.layouts.layout(op, src, "L0C source")
        out = dtypes.type_name(memref_element(op.dest))
        fields = [
            ("nSize", self.p.e(op.length)),
            ("mSize", self.p.e(op.blocks)),
            ("srcStride", self._fractals(op, rows, rows_of_16=True)),
            ("dstStride", self.p.e(op.dst_stride)),
            ("reluEn", "true" if op.relu is not None else "false"),
            ("quantPre", self.p.api.fixpipe_quant[out]),
        ]
        p = self._params(op, self.p.api.fixpipe_params, "fixpipeParams", fields)
        self.p.line(op, f"{self.p.api.fixpipe}({self.p.e(op.dest)}, {self.p.e(src)}, {p});")
