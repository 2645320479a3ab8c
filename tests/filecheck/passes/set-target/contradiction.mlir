// One target per module: a set-target that contradicts the module's afc.target is a
// one-line error (its groups were planned for the other chip), and the per-pass chip=
// options are gone, with an error naming the new way.
// RUN: afc-opt %s -p 'set-target{chip=ascend910b1},ub-fusion' | filecheck %s
// RUN: not afc-opt %s -p 'set-target{chip=Ascend310P3}' 2>&1 | filecheck %s --check-prefix=CONTRA
// RUN: not afc-opt %s -p 'ub-fusion{chip=Ascend910B1}' 2>&1 | filecheck %s --check-prefix=UB
// RUN: not afc-opt %s -p 'lower-to-buffer{chip=Ascend310P3}' 2>&1 | filecheck %s --check-prefix=LOWER
// RUN: not afc-opt %s -p 'graph-fusion{chip=Ascend910B1}' 2>&1 | filecheck %s --check-prefix=GRAPH
// RUN: not afc-opt %s -p 'split-fusion{chip=Ascend910B1}' 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not afc-opt %s -t 'report{chip=Ascend910B1}' 2>&1 | filecheck %s --check-prefix=REPORT
// RUN: not afc-opt %s --pass-pipeline='builtin.module(ub-fusion{chip=Ascend910B1})' 2>&1 | filecheck %s --check-prefix=UB
// RUN: not afc-opt %s -p 'ub-fusion{chip=Ascend910B1}' 2> %t.err; %python -c "import sys; t=open(sys.argv[1]).read(); assert t.count(chr(10)) == 1 and 'Traceback' not in t, t" %t.err

// CHECK: builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
// CHECK: graph.fusion_group

// CONTRA: afc-opt: error: chip Ascend310P3 contradicts the module's afc.target = #afc.target<"Ascend910B1">
// UB:     afc-opt: error: ub-fusion{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before ub-fusion
// LOWER:  afc-opt: error: lower-to-buffer{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before lower-to-buffer
// GRAPH:  afc-opt: error: graph-fusion{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before graph-fusion
// SPLIT:  afc-opt: error: split-fusion{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before split-fusion
// REPORT: afc-opt: error: argument -t/--target: report{chip=...} is gone: the chip is the module's afc.target; run set-target{chip=...} before report

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @main(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
    %e = graph.exp %x : tensor<8x256xf32>
    %r = graph.relu %e : tensor<8x256xf32>
    func.return %r : tensor<8x256xf32>
  }
}
