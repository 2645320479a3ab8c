// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{max-ops=2}' | filecheck %s --check-prefix=CAP
// RUN: afc-opt %s --split-input-file -p 'set-target{chip=Ascend910B1},ub-fusion{remarks=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: not afc-opt %s -p 'set-target{chip=Ascend999},ub-fusion' 2>&1 | filecheck %s --check-prefix=CHIP

// The matmul takes the bias add and the residual add as its epilogue (one cube
// kernel); the decomposed RMSNorm is one vector kernel (a reduction cannot be a cube
// op's epilogue).
// CHECK-LABEL: func.func @norm_chain
// CHECK:         %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>, %b_1 = %b : tensor<256xf16>) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">, template = "matmul", {{.*}}} attributes {afc.benefit_us = {{.*}}, afc.rules = "ATbeMatMulElemwiseFusionPass,TbeEltwiseFusionPass"} {
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.*}} = graph.fusion_group (%r_1 = %r : tensor<16x256xf16>, %g_1 = %g : tensor<256xf16>) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">, template = "rows", {{.*}}} attributes {afc.benefit_us = {{.*}}, afc.rules = "TbeEltwiseFusionPass,TbeReduceElemwiseFusionPass"} {
// CHECK:           graph.reduce_mean
// CHECK:           graph.rsqrt
// CHECK:           graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CAP-LABEL:   func.func @norm_chain
// CAP-COUNT-5:   graph.fusion_group
// REMARK:      ub-fusion: not fused graph.add %r -> graph.pow %sq: graph.reduce_mean after a cube op: cube templates take elementwise/broadcast epilogues only
func.func @norm_chain(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>, %b: tensor<256xf16>, %g: tensor<256xf16>) -> tensor<16x256xf16> {
  %m = graph.matmul %x, %w : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
  %a = graph.add %m, %b : (tensor<16x256xf16>, tensor<256xf16>) -> tensor<16x256xf16>
  %r = graph.add %a, %x : tensor<16x256xf16>
  %two = graph.constant dense<2.0> : tensor<f16>
  %sq = graph.pow %r, %two : (tensor<16x256xf16>, tensor<f16>) -> tensor<16x256xf16>
  %ms = graph.reduce_mean %sq {axes = [-1], keepdims = true} : tensor<16x256xf16> -> tensor<16x1xf16>
  %eps = graph.constant dense<1.0e-05> : tensor<f16>
  %v = graph.add %ms, %eps : (tensor<16x1xf16>, tensor<f16>) -> tensor<16x1xf16>
  %rs = graph.rsqrt %v : tensor<16x1xf16>
  %n = graph.mul %r, %rs : (tensor<16x256xf16>, tensor<16x1xf16>) -> tensor<16x256xf16>
  %y = graph.mul %n, %g : (tensor<16x256xf16>, tensor<256xf16>) -> tensor<16x256xf16>
  func.return %y : tensor<16x256xf16>
}

// -----

// Two producers joined by a library op in between: fusing %e with %s would put the
// transpose's input and output in one kernel around it, a cycle. (The transpose keeps
// the innermost axis, so no rows kernel reads it: row_transpose.py.)
// CHECK-LABEL: func.func @no_cycle
// CHECK:         %[[E:.*]] = graph.fusion_group (%x_1 = %x
// CHECK:           graph.exp
// CHECK:         %t = graph.transpose %[[E]]
// CHECK:         graph.fusion_group (%[[A:.*]] = %[[E]] : tensor<4x4x8xf32>, %{{.*}} = %t : tensor<4x4x8xf32>)
// CHECK:           graph.add
// REMARK:      ub-fusion: not fused graph.exp %e -> graph.add %s: fusing them would create a cycle through another kernel
func.func @no_cycle(%x: tensor<4x4x8xf32>) -> tensor<4x4x8xf32> {
  %e = graph.exp %x : tensor<4x4x8xf32>
  %t = graph.transpose %e {perm = [1, 0, 2]} : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
  %s = graph.add %e, %t : tensor<4x4x8xf32>
  func.return %s : tensor<4x4x8xf32>
}

// -----

// A value used by two later kernels is written once by a multi-output kernel.
// CHECK-LABEL: func.func @multi_output
// CHECK:         %e, %r = graph.fusion_group
// CHECK-SAME:      afc.rules = "TbeEltwiseFusionPass,TbeMultiOutputFusionPass"
func.func @multi_output(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %e = graph.exp %x : tensor<64x64xf32>
  %r = graph.relu %e : tensor<64x64xf32>
  func.return %e, %r : tensor<64x64xf32>, tensor<64x64xf32>
}

// CHIP: afc-opt: error: unknown chip 'Ascend999'; known chips: Ascend310P3, Ascend910, Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4
