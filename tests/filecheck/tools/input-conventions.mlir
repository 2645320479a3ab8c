// `-` reads stdin; --no-implicit-module is honoured: the input must be one builtin.module,
// and what follows it (a second op, the resource blobs) is not silently dropped.
// RUN: afc-opt - -p cse < %s | filecheck %s
// RUN: afc-opt - < %s | filecheck %s
// RUN: not afc-opt %s --no-implicit-module 2>&1 | filecheck %s --check-prefix=BARE
// RUN: sed -e '1i builtin.module {' -e '$a }' %s > %t.mlir
// RUN: afc-opt %t.mlir --no-implicit-module | filecheck %s
// RUN: cp %t.mlir %t.two.mlir && echo 'builtin.module {}' >> %t.two.mlir
// RUN: not afc-opt %t.two.mlir --no-implicit-module 2>&1 | filecheck %s --check-prefix=TWO
// RUN: afc-opt - --no-implicit-module -p cse < %t.mlir | filecheck %s

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.exp %x : tensor<2x3xf32>
  func.return %e : tensor<2x3xf32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @main
// CHECK-NEXT:     %e = graph.exp %x : tensor<2x3xf32>
// BARE: input-conventions.mlir:12:1: error: --no-implicit-module needs the input to be a single builtin.module; found a top-level func.func here{{$}}
// TWO: two.mlir:{{[0-9]+}}:1: error: --no-implicit-module needs the input to be a single builtin.module; found a top-level builtin.module here{{$}}
