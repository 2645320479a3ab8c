// -t report: one entry per kernel (fusion group, buffer launch or library op) with its
// ops, GM bytes, UB footprint and time; totals before/after fusion and the lower bound,
// in logical GM bytes and in HBM bytes (the L2 traffic model).
// RUN: afc-opt %s -p ub-fusion -t report | filecheck %s
// RUN: afc-opt %s -p ub-fusion,lower-to-buffer -t report | filecheck %s --check-prefix=BUFFER
// RUN: afc-opt %s -t report | filecheck %s --check-prefix=UNFUSED

// The add+relu chain is one rows kernel that reads x and y (8 KiB each) and writes 8 KiB;
// the gather has no template and stays a library op (op_cost: reads its whole input).
// CHECK:       "chip": "Ascend910B1"
// CHECK:       "kernels": 2,
// CHECK-NEXT:  "fused_kernels": 1,
// CHECK-NEXT:  "library_ops": 1,
// CHECK-NEXT:  "view_ops": 0,
// CHECK-NEXT:  "ops": 3,
// CHECK-NEXT:  "gm_bytes_before": 51208,
// CHECK-NEXT:  "gm_bytes_after": 34824,
// CHECK-NEXT:  "gm_bytes_lower_bound": 26632,
// In HBM terms r stays in L2 for the gather (each op's kernel alone, too), and r and g
// (10 KiB, the outputs) are written back at the end: the lower bound.
// CHECK-NEXT:  "hbm_bytes_before": 26632,
// CHECK-NEXT:  "hbm_bytes_after": 26632,
// CHECK-NEXT:  "hbm_bytes_after_optimistic": 26632,
// CHECK-NEXT:  "hbm_bytes_after_pessimistic": 26632,
// CHECK-NEXT:  "hbm_final_writeback_bytes": 10240,
// CHECK-NEXT:  "l2_bytes": 201326592,
// CHECK:       "name": "kernel0",
// CHECK-NEXT:  "kind": "fused",
// CHECK-NEXT:  "template": "rows",
// CHECK-NEXT:  "ops": [
// CHECK-NEXT:    "graph.add %s",
// CHECK-NEXT:    "graph.relu %r"
// CHECK-NEXT:  ],
// CHECK-NEXT:  "op_count": 2,
// CHECK-NEXT:  "gm_read_bytes": 16384,
// CHECK-NEXT:  "gm_write_bytes": 8192,
// CHECK-NEXT:  "hbm_read_bytes": 16384,
// CHECK-NEXT:  "hbm_write_bytes": 0,
// CHECK:       "name": "graph.gather %g",
// CHECK-NEXT:  "kind": "library",

// BUFFER:      "gm_bytes_after": 34824,
// BUFFER:      "name": "main_kernel0",
// BUFFER-NEXT: "kind": "fused",

// UNFUSED:     "fused_kernels": 0,
// UNFUSED:     "gm_bytes_before": 51208,
// UNFUSED-NEXT: "gm_bytes_after": 51208,
func.func @main(%x: tensor<8x256xf32>, %y: tensor<8x256xf32>, %i: tensor<2xi32>) -> (tensor<8x256xf32>, tensor<2x256xf32>) {
  %s = graph.add %x, %y : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = graph.relu %s : tensor<8x256xf32>
  %g = graph.gather %r, %i {axis = 0} : (tensor<8x256xf32>, tensor<2xi32>) -> tensor<2x256xf32>
  func.return %r, %g : tensor<8x256xf32>, tensor<2x256xf32>
}
