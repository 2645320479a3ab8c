// -t hfusion keeps a PURE_ELEMWISE device function that reads f16 and computes a
// reciprocal in f32 within bishengir 1.2.0's UB (hfusion_ub.py UB_LIMITS: at most 24576
// elements with one f16 input, 16384 with two): a 1024x4096 sigmoid + add is emitted for a block of 4 rows and the host
// function calls it per block in an scf.for (extract_slice of each row-holding argument,
// insert_slice of each result). A softmax (LAST_AXIS_PBR: HFusion tiles it, measured at
// this size) and an all-f32 function stay whole. A function whose rows cannot be blocked
// (a transpose, one row already over the limit) is cut at step boundaries into parts that
// each fit whole or row-blocked (hfusion_ub.py ub_cuts), with a remark saying why.
// RUN: afc-opt %s --split-input-file -t hfusion | filecheck %s

func.func @sigmoid_add(%x: tensor<1024x4096xf16>, %g: tensor<1024x4096xf16>) -> tensor<1024x4096xf16> {
  %y = graph.fusion_group (%xa = %x : tensor<1024x4096xf16>, %ga = %g : tensor<1024x4096xf16>) -> tensor<1024x4096xf16> {
    %s = graph.sigmoid %xa : tensor<1024x4096xf16>
    %p = graph.add %s, %ga : tensor<1024x4096xf16>
    graph.yield %p : tensor<1024x4096xf16>
  }
  func.return %y : tensor<1024x4096xf16>
}

// CHECK:      // remark: afc_g1: 4194304 elements exceed bishengir's UB limit of 16384 (reads two f16 tensors, computes a reciprocal in f32): called on 256 blocks of 4 rows (16384 elements; measured: sigmoid+g, sigmoid*g
// CHECK:      func.func @afc_g1(%x: tensor<4x4096xf16>, %g: tensor<4x4096xf16>) -> tensor<4x4096xf16> attributes {hacc.entry, hacc.function_kind = #hacc.function_kind<DEVICE>}
// CHECK:        return %{{.*}} : tensor<4x4096xf16>
// CHECK-NEXT: }
// CHECK:      func.func @main(%x: tensor<1024x4096xf16>, %g: tensor<1024x4096xf16>) -> tensor<1024x4096xf16>
// CHECK-NEXT:   %afc_g1_lo = arith.constant 0 : index
// CHECK-NEXT:   %afc_g1_hi = arith.constant 1024 : index
// CHECK-NEXT:   %afc_g1_step = arith.constant 4 : index
// CHECK-NEXT:   %afc_g1_init0 = tensor.empty() : tensor<1024x4096xf16>
// CHECK-NEXT:   %[[Y:.*]] = scf.for %afc_g1_i = %afc_g1_lo to %afc_g1_hi step %afc_g1_step iter_args(%afc_g1_acc0 = %afc_g1_init0) -> (tensor<1024x4096xf16>) {
// CHECK-NEXT:     %afc_g1_a0 = tensor.extract_slice %x[%afc_g1_i, 0] [4, 4096] [1, 1] : tensor<1024x4096xf16> to tensor<4x4096xf16>
// CHECK-NEXT:     %afc_g1_a1 = tensor.extract_slice %g[%afc_g1_i, 0] [4, 4096] [1, 1] : tensor<1024x4096xf16> to tensor<4x4096xf16>
// CHECK-NEXT:     %afc_g1_y0 = func.call @afc_g1(%afc_g1_a0, %afc_g1_a1) : (tensor<4x4096xf16>, tensor<4x4096xf16>) -> tensor<4x4096xf16>
// CHECK-NEXT:     %afc_g1_n0 = tensor.insert_slice %afc_g1_y0 into %afc_g1_acc0[%afc_g1_i, 0] [4, 4096] [1, 1] : tensor<4x4096xf16> into tensor<1024x4096xf16>
// CHECK-NEXT:     scf.yield %afc_g1_n0 : tensor<1024x4096xf16>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %[[Y]] : tensor<1024x4096xf16>

// -----

func.func @softmax(%x: tensor<1024x4096xf16>) -> tensor<1024x4096xf16> {
  %y = graph.fusion_group (%xa = %x : tensor<1024x4096xf16>) -> tensor<1024x4096xf16> {
    %p = graph.softmax %xa {axis = -1 : i64} : tensor<1024x4096xf16>
    graph.yield %p : tensor<1024x4096xf16>
  }
  func.return %y : tensor<1024x4096xf16>
}

// CHECK-NOT:  remark
// CHECK:      func.func @afc_g1(%x: tensor<1024x4096xf16>) -> tensor<1024x4096xf16>
// CHECK-NOT:  scf.for
// CHECK:      func.call @afc_g1(%x)

// -----

func.func @f32(%x: tensor<1024x4096xf32>) -> tensor<1024x4096xf32> {
  %y = graph.fusion_group (%xa = %x : tensor<1024x4096xf32>) -> tensor<1024x4096xf32> {
    %p = graph.softmax %xa {axis = -1 : i64} : tensor<1024x4096xf32>
    graph.yield %p : tensor<1024x4096xf32>
  }
  func.return %y : tensor<1024x4096xf32>
}

// CHECK-NOT:  remark
// CHECK:      func.func @afc_g1(%{{.*}}: tensor<1024x4096xf32>) -> tensor<1024x4096xf32>
// CHECK-NOT:  scf.for
// CHECK:      func.call @afc_g1(%x)

// -----

func.func @transposed(%x: tensor<256x256xf16>) -> tensor<256x256xf16> {
  %y = graph.fusion_group (%xa = %x : tensor<256x256xf16>) -> tensor<256x256xf16> {
    %t = graph.transpose %xa {perm = array<i64: 1, 0>} : tensor<256x256xf16> -> tensor<256x256xf16>
    %s = graph.reciprocal %t : tensor<256x256xf16>
    graph.yield %s : tensor<256x256xf16>
  }
  func.return %y : tensor<256x256xf16>
}

// CHECK:      // remark: afc_g1: cut at 1 more step boundary so each part fits bishengir's UB (the part up to the first cut: 65536 elements exceed bishengir's UB limit of 24576 (reads/writes f16, computes a reciprocal in f32); not row-blocked: linalg.transpose has no row-blocked form)
// CHECK-NEXT: // remark: afc_g1_1: 65536 elements exceed bishengir's UB limit of 24576 (reads/writes f16, computes a reciprocal in f32): called on 4 blocks of 64 rows
// CHECK:      func.func @afc_g1_0(%x: tensor<256x256xf16>) -> tensor<256x256xf32>
// CHECK:        linalg.transpose
// CHECK-NOT:    unary_fn<rec>
// CHECK:        return %[[T:.*]] : tensor<256x256xf32>
// CHECK:      func.func @afc_g1_1(%{{.*}}: tensor<64x256xf32>) -> tensor<64x256xf16>
// CHECK-NEXT:   tensor.empty
// CHECK-NEXT:   hfusion.elemwise_unary {fun = #hfusion.unary_fn<rec>}
// CHECK:      func.func @main
// CHECK-NEXT:   %[[T]] = func.call @afc_g1_0(%x)
// CHECK:        scf.for
// CHECK:          func.call @afc_g1_1

// -----

func.func @one_row(%x: tensor<2x32768xf16>) -> tensor<2x32768xf16> {
  %y = graph.fusion_group (%xa = %x : tensor<2x32768xf16>) -> tensor<2x32768xf16> {
    %p = graph.sigmoid %xa : tensor<2x32768xf16>
    graph.yield %p : tensor<2x32768xf16>
  }
  func.return %y : tensor<2x32768xf16>
}

// One row (32768 elements) is over the limit: the reciprocal is cut away from the f16
// boundary, each part whole (f16 in, f32 out without a reciprocal; f32 throughout).
// CHECK:      // remark: afc_g1: cut at 2 more step boundaries so each part fits bishengir's UB (the part up to the first cut: 65536 elements exceed bishengir's UB limit of 24576 (reads/writes f16, computes a reciprocal in f32); not row-blocked: one row of 32768 elements is already too large)
// CHECK-NOT:  remark
// CHECK:      func.func @afc_g1_0(%x: tensor<2x32768xf16>) -> tensor<2x32768xf32>
// CHECK-NOT:    unary_fn<rec>
// CHECK:      func.func @afc_g1_1(%{{.*}}: tensor<2x32768xf32>) -> tensor<2x32768xf32>
// CHECK:        hfusion.elemwise_unary {fun = #hfusion.unary_fn<rec>}
// CHECK:      func.func @afc_g1_2(%{{.*}}: tensor<2x32768xf32>) -> tensor<2x32768xf16>
// CHECK-NOT:    unary_fn<rec>
// CHECK:      func.func @main
// CHECK-NOT:  scf.for
// CHECK:        func.call @afc_g1_0
// CHECK-NEXT:   func.call @afc_g1_1
// CHECK-NEXT:   func.call @afc_g1_2
