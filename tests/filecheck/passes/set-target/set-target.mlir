// set-target writes the chip as the module's one afc.target attribute: the name is
// matched case-insensitively and printed as CANN spells it.
// RUN: afc-opt %s -p 'set-target{chip=ascend310p3}' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3}' | afc-opt | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend310P3},set-target{chip=ASCEND310P3}' | filecheck %s
// RUN: not afc-opt %s -p 'set-target{chip=Ascend999}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not afc-opt %s -p 'set-target' 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK:      builtin.module attributes {afc.target = #afc.target<"Ascend310P3">} {
// CHECK-NEXT:   func.func @main

// UNKNOWN: afc-opt: error: unknown chip 'Ascend999'; known chips: Ascend310P3, Ascend910, Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4
// MISSING: afc-opt: error: {{.*}}chip

func.func @main(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %r = graph.relu %x : tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}
