// A module without afc.target gets the default chip (Ascend910B1) once, at the first
// pass that needs a chip: a remark on stderr, and the attribute written onto the module
// so that later stages see the same chip. graph-fusion does not need one (without a
// target every rule runs, as on the default chip), so it neither remarks nor writes.
// RUN: afc-opt %s -p 'graph-fusion,ub-fusion,lower-to-buffer' 2>%t.err | filecheck %s
// RUN: filecheck %s --input-file=%t.err --check-prefix=REMARK
// RUN: afc-opt %s -p 'graph-fusion' 2>&1 | filecheck %s --check-prefix=GRAPH

// CHECK: builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
// CHECK: buffer.kernel @main_kernel0
// CHECK-SAME: chip = "Ascend910B1"

// REMARK:     remark: ub-fusion: the module has no afc.target; using the default Ascend910B1 (set one with set-target{chip=...})
// REMARK-NOT: remark

// GRAPH:     builtin.module {
// GRAPH-NOT: remark

func.func @main(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %e = graph.exp %x : tensor<8x256xf32>
  %r = graph.relu %e : tensor<8x256xf32>
  func.return %r : tensor<8x256xf32>
}
