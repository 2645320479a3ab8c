// RUN: not afc-opt %s -p 'ub-fusion{chip=Ascend910},lower-to-buffer{chip=Ascend910}' -t ascendc 2>&1 | filecheck %s

// On coupled chips (910, 310P) a cube kernel's result reaches the vector epilogue
// through CO1 -> CO2 (L0C -> UB), which is not printed: one line naming the copy.

// CHECK: afc-opt: error: buffer.copy{{.*}}: afc's Ascend C printer has no copy l0c -> ub: on coupled chips CO1 -> CO2 moves Nz fractals
// CHECK-NOT: Traceback

func.func @mlp(%x: tensor<40x64xf16>, %w: tensor<64x64xf16>) -> tensor<40x64xf16> {
  %m = graph.matmul %x, %w : (tensor<40x64xf16>, tensor<64x64xf16>) -> tensor<40x64xf16>
  %y = graph.relu %m : tensor<40x64xf16>
  func.return %y : tensor<40x64xf16>
}
