// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' -t 'ascendc{debug=true}' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' -t ascendc | filecheck %s --check-prefix=PLAIN

// With debug, every statement a graph op produced ends with a comment naming the op and
// its source location; the kernel's own bookkeeping (queues, index math) has none.

// CHECK-LABEL: __aicore__ inline void Compute(
// CHECK:         Mul({{.*}});  // graph.rms_norm at model.py:7:9
// CHECK:         ReduceSum({{.*}});  // graph.rms_norm at model.py:7:9
// CHECK:         Rsqrt({{.*}});  // graph.rms_norm at model.py:7:9
// CHECK:         Exp({{.*}});  // graph.silu "/layers.0/act/Silu" at model.py:8:3
// CHECK:         Reciprocal({{.*}});  // graph.silu "/layers.0/act/Silu" at model.py:8:3
// CHECK:         q_out0.EnQue(y);{{$}}

// PLAIN-NOT: model.py

func.func @main(%x: tensor<?x40xf32>, %g: tensor<40xf32>) -> tensor<?x40xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<?x40xf32>, %gg = %g : tensor<40xf32>) -> tensor<?x40xf32> {
    %y = graph.rms_norm %xx, %gg {axis = -1, epsilon = 1.0e-06} : (tensor<?x40xf32>, tensor<40xf32>) -> tensor<?x40xf32> loc("model.py":7:9)
    %s = graph.silu %y : tensor<?x40xf32> loc("/layers.0/act/Silu"("model.py":8:3))
    graph.yield %s : tensor<?x40xf32>
  }
  func.return %r : tensor<?x40xf32>
}
