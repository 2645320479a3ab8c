// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910},ub-fusion{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK910
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=LOWERED

// A partial rope (rotary_dim R < D, Phi) is a rows kernel: the first R columns of each
// row rotated with the narrow [rows, R] cos/sin tables, the other D - R copied
// (lowering/row_rope.py).

// Phi's q after the head transpose sank through the rope: BSND, [1, S, 1, R] tables,
// read through the QKV projection's column slice and head reshape (no library op).
// CHECK-LABEL: func.func @phi_q
// CHECK:       graph.fusion_group {{.*}} template = "rows"
// CHECK-NEXT:    graph.slice
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.rope {{.*}} {interleaved = false, rotary_dim = 4}
// CHECK-NEXT:    graph.yield
// CHECK-NOT:   graph.rope
// The tables' rows are copied 4 wide, the halves of 2 gathered within them, then the
// rotated columns computed row by row on 4 of the 8 columns.
// LOWERED:     buffer.kernel @phi_q_kernel0
// LOWERED:     buffer.stage "copy_in"
// LOWERED:     buffer.copy {{.*}} blocks %c1 x %c4 strides %c0, %c0 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>
// LOWERED:     buffer.copy {{.*}} blocks %c1 x %c4 strides %c0, %c0 : memref<?xf16, #buffer.space<gm>> to memref<?xf16, #buffer.space<ub>>
// LOWERED:     buffer.stage "compute"
// LOWERED:     buffer.vgather {{.*}}, %c4 :
// LOWERED:     buffer.vscalar "muls" {{.*}}, %c2 :
// LOWERED:     buffer.vbinary "mul" {{.*}}, %c4 :
// LOWERED:     buffer.vbinary "add" {{.*}}, %c4 :
// LOWERED:     buffer.stage "copy_out"
func.func @phi_q(%qkv: tensor<2x8x64xf16>, %cos: tensor<1x8x1x4xf16>, %sin: tensor<1x8x1x4xf16>) -> tensor<2x8x4x8xf16> {
  %q = graph.slice %qkv {axes = [2], ends = [32], starts = [0], steps = [1]} : tensor<2x8x64xf16> -> tensor<2x8x32xf16>
  %h = graph.reshape %q {shape = [2, 8, -1, 8]} : tensor<2x8x32xf16> -> tensor<2x8x4x8xf16>
  %r = graph.rope %h, %cos, %sin {interleaved = false, rotary_dim = 4} : (tensor<2x8x4x8xf16>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>) -> tensor<2x8x4x8xf16>
  func.return %r : tensor<2x8x4x8xf16>
}

// -----

// Must not be a kernel on Ascend910: without DataCopyPad a table row of 4 halves (8
// bytes) is no 32-byte transfer; the rope stays a library op, saying why.
// CHECK-LABEL: func.func @short_table_rows
// REMARK910: ub-fusion: library op graph.rope %r: table rows of 4 elements are not 32-byte multiples and the chip has no DataCopyPad
func.func @short_table_rows(%x: tensor<2x8x4x16xf16>, %cos: tensor<1x8x1x4xf16>, %sin: tensor<1x8x1x4xf16>) -> tensor<2x8x4x16xf16> {
  %r = graph.rope %x, %cos, %sin {interleaved = false, rotary_dim = 4} : (tensor<2x8x4x16xf16>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>) -> tensor<2x8x4x16xf16>
  func.return %r : tensor<2x8x4x16xf16>
}
