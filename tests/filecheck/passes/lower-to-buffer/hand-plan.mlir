// RUN: not afc-opt %s --split-input-file -p 'lower-to-buffer' 2>&1 | filecheck %s
// RUN: not afc-opt %s -p 'lower-to-buffer' --split-input-file 2>&1 | filecheck %s --check-prefix=BAD

// lower-to-buffer carries out the group's plan: the hand-edited tiling (tn = 128, where
// ub-fusion plans 256 on 910B1) sizes the L0B and L0C buffers (tk x tn and tm x tn).
// CHECK-LABEL: func.func @narrow
// CHECK:       buffer.kernel @narrow_kernel0
// CHECK:         %q_b2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 16384 of f16 : !buffer.queue<b2>
// CHECK:         %q_c = buffer.alloc_queue %{{.*}} buffers 1 max_bytes 65536 of f32 : !buffer.queue<co1>
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @narrow(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {target = #afc.target<"Ascend910B1">, template = "matmul", tiling = {c_depth = 1 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 128 : i64, tn = 128 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// The planned tiling (tn = 256) gives the larger buffers.
// CHECK-LABEL: func.func @planned
// CHECK:       buffer.kernel @planned_kernel0
// CHECK:         %q_b2 = buffer.alloc_queue %{{.*}} buffers 2 max_bytes 32768 of f16 : !buffer.queue<b2>
// CHECK:         %q_c = buffer.alloc_queue %{{.*}} buffers 1 max_bytes 131072 of f32 : !buffer.queue<co1>
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @planned(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}

// -----

// A tiling the template cannot carry out is a one-line error naming the group.
// BAD: cannot lower fusion group bad_kernel0 ({{.*}}): the tiling needs 524288 bytes of L0C, Ascend910B1 has 131072
builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @bad(%x: tensor<16x256xf16>, %w: tensor<256x256xf16>) -> tensor<16x256xf16> {
    %r = graph.fusion_group (%x_1 = %x : tensor<16x256xf16>, %w_1 = %w : tensor<256x256xf16>) -> tensor<16x256xf16> plan {template = "matmul", tiling = {c_depth = 2 : i64, step_k = 4 : i64, tk = 64 : i64, tm = 256 : i64, tn = 256 : i64}} {
      %m = graph.matmul %x_1, %w_1 : (tensor<16x256xf16>, tensor<256x256xf16>) -> tensor<16x256xf16>
      graph.yield %m : tensor<16x256xf16>
    }
    func.return %r : tensor<16x256xf16>
  }
}
