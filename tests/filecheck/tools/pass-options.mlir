// Pass and target options follow MLIR's conventions: a bare boolean option means true,
// and every mistake is one line naming the pass or option as the user writes it.
// RUN: afc-opt %s -p 'ub-fusion{remarks max-ops=1}' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARKS
// RUN: afc-opt %s --pass-pipeline='builtin.module(ub-fusion{max-ops=1 remarks})' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARKS
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion{max-ops=1}' 2>&1 >/dev/null | filecheck %s --allow-empty --check-prefix=QUIET
// RUN: afc-opt %s -p 'ub-fusion,lower-to-buffer' -t 'ascendc{debug}' | filecheck %s --check-prefix=DEBUG
// RUN: afc-opt %s -p 'ub-fusion,lower-to-buffer' -t 'ascendc' | filecheck %s --check-prefix=NODEBUG
// RUN: not afc-opt %s -p 'ub-fuson' 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// RUN: not afc-opt %s -p 'ub-fusion{max-op=3}' 2>&1 | filecheck %s --check-prefix=UNKNOWN-OPTION
// RUN: not afc-opt %s -p 'ub-fusion{max-ops=many}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not afc-opt %s -p 'ub-fusion{max-ops}' 2>&1 | filecheck %s --check-prefix=NO-VALUE
// RUN: not afc-opt %s -p 'graph-fusion{log=1}' 2>&1 | filecheck %s --check-prefix=BOOL
// RUN: not afc-opt %s -t 'ascnedc' 2>&1 | filecheck %s --check-prefix=UNKNOWN-TARGET
// RUN: not afc-opt %s -t 'onnx{opset=new}' 2>&1 | filecheck %s --check-prefix=TARGET-TYPE
// RUN: not afc-opt %s -t 'report{chipp=Ascend910B1}' 2>&1 | filecheck %s --check-prefix=TARGET-OPTION

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.exp %x : tensor<2x3xf32>
  %f = graph.exp %e : tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}

// REMARKS: ub-fusion: not fused graph.exp %e -> graph.exp %f: 2 ops exceed max-ops=1
// DEBUG: Exp({{.*}});  // graph.exp
// NODEBUG-NOT: // graph.exp
// QUIET-NOT: ub-fusion
// UNKNOWN-PASS: afc-opt: error: unknown pass 'ub-fuson'; did you mean 'ub-fusion'? (afc-opt --list-passes lists afc's passes, --help all of them){{$}}
// UNKNOWN-OPTION: afc-opt: error: pass 'ub-fusion' has no option 'max-op'; did you mean 'max-ops'? (its options: max-ops, max-inputs, dynamic-size, switch-file, remarks, stats-file, log){{$}}
// TYPE: afc-opt: error: option 'max-ops' of pass 'ub-fusion' expects int, got 'many'{{$}}
// NO-VALUE: afc-opt: error: option 'max-ops' of pass 'ub-fusion' expects int, got no value{{$}}
// BOOL: afc-opt: error: option 'log' of pass 'graph-fusion' expects bool, got '1'{{$}}
// UNKNOWN-TARGET: afc-opt: error: argument -t/--target: unknown target 'ascnedc'; did you mean 'ascendc'?{{$}}
// TARGET-TYPE: afc-opt: error: argument -t/--target: option 'opset' of target 'onnx' expects int|None, got 'new'{{$}}
// TARGET-OPTION: afc-opt: error: argument -t/--target: target 'report' has no option 'chipp' (its options: dynamic-size){{$}}
