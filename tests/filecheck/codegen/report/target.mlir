// -t report reads the module's target: kernels grouped for Ascend310P3 are reported with
// 310P3 figures (its 16 MB L2, its bandwidth and clock). The report used to take a chip
// option of its own, default Ascend910B1, whatever ub-fusion had planned for.
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion' -t report | filecheck %s --check-prefix=P3
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion' | afc-opt -t report | filecheck %s --check-prefix=P3
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},ub-fusion,lower-to-buffer' -t report | filecheck %s --check-prefix=P3
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' -t report | filecheck %s --check-prefix=B1

// P3:      "chip": "Ascend310P3",
// P3:      "l2_bytes": 16777216,
// P3-NEXT: "time_us_before": 6.207,
// P3-NEXT: "time_us_after": 5.259,

// B1:      "chip": "Ascend910B1",
// B1:      "l2_bytes": 201326592,
// B1-NEXT: "time_us_before": 6.03,
// B1-NEXT: "time_us_after": 4.038,

func.func @main(%x: tensor<8x256xf32>, %y: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %s = graph.add %x, %y : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = graph.relu %s : tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}
