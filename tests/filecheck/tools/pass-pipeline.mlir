// Both pipeline syntaxes reach the same passes (dce removes the unused relu).
// Giving both -p and --pass-pipeline is an error, not "the last one wins".
// RUN: afc-opt %s --pass-pipeline='builtin.module(dce,cse)' | filecheck %s
// RUN: afc-opt %s --pass-pipeline='dce,cse' | filecheck %s
// RUN: afc-opt %s --pass-pipeline='builtin.module(func.func(dce),cse)' | filecheck %s
// RUN: afc-opt %s -p dce,cse | filecheck %s
// RUN: not afc-opt %s -p 'dce' --pass-pipeline 'builtin.module()' 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: afc-opt %s --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=EMPTY
// RUN: not afc-opt %s --pass-pipeline='builtin.module(dce' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// RUN: not afc-opt %s --pass-pipeline='gpu.module(dce)' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not afc-opt %s -p 'no-such-pass' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not afc-opt %s -p 'cse{bogus=1}' 2>&1 | filecheck %s --check-prefix=OPTION

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %unused = graph.relu %a : tensor<4xf32>
  %e = graph.exp %a : tensor<4xf32>
  %e2 = graph.exp %a : tensor<4xf32>
  %s = graph.add %e, %e2 : tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @f
// CHECK-NOT:     graph.relu
// CHECK:         %e = graph.exp %a
// CHECK-NEXT:    %s = graph.add %e, %e
// BOTH:          afc-opt: error: give the pipeline with -p/--passes or with --pass-pipeline, not both
// EMPTY:         graph.relu
// UNCLOSED:      afc-opt: error: argument --pass-pipeline: invalid --pass-pipeline at column {{[0-9]+}}: unexpected end of pipeline
// ANCHOR:        unsupported anchor 'gpu.module'
// UNKNOWN:       afc-opt: error: unknown pass 'no-such-pass' (afc-opt --list-passes lists afc's passes, --help all of them)
// OPTION:        afc-opt: error: pass 'cse' has no option 'bogus' (it takes none)
