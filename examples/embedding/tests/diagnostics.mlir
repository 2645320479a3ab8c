// mycc-opt inherits afc-opt's --verify-diagnostics: errors of afc's passes and of mycc's
// own are located at their op and checked against the annotations.
// RUN: %mycc-opt %s --split-input-file -p 'fold-unary-pairs{max-folds=0}' --verify-diagnostics
// RUN: not %mycc-opt %s --split-input-file -p 'fold-unary-pairs{max-folds=0}' 2>&1 | filecheck %s
// CHECK: diagnostics.mlir:10:3: error: 1 unary pairs to fold, max-folds=0

func.func @one_pair(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r1 = graph.relu %x : tensor<8xf32>
  // expected-error @+1 {{1 unary pairs to fold, max-folds=0}}
  %r2 = graph.relu %r1 : tensor<8xf32>
  func.return %r2 : tensor<8xf32>
}

// -----

// A verifier error of afc's graph dialect, under mycc's driver.
func.func @bad(%x: tensor<8xf32>) -> tensor<9xf32> {
  // expected-error @+1 {{'graph.relu' result #0 has type tensor<9xf32>}}
  %r = graph.relu %x : (tensor<8xf32>) -> tensor<9xf32>
  func.return %r : tensor<9xf32>
}
