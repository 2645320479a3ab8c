// -t hfusion cuts a fusion group where bishengir 1.2.0 could not compile it whole
// (hfusion_kinds.PART_RULES): a slice of a matmul part's own result starts a part (the
// slices become host views), independent computations of different element counts are
// parts of their own. Negatives: two ropes of one shape, a matmul with a bias and relu
// epilogue stay one device function each, with no cut remark.
// RUN: afc-opt %s --split-input-file -t hfusion | filecheck %s
// RUN: afc-opt %s --split-input-file -t hfusion | filecheck %s --check-prefix=NEG

// A rope on a matmul's result: the matmul part, then the rope on host slices of it.
// CHECK:      // remark: afc_g1: cut into 2 parts before each slice of a matmul part's own result
// CHECK:      // graph.matmul, graph.rope: fusion kind SHALLOW_CV
// CHECK-NEXT: func.func @afc_g1_0(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>) -> tensor<16x64xf32>
// CHECK:        %[[MM:v[0-9]+]] = linalg.matmul
// CHECK-NEXT:   return %[[MM]] : tensor<16x64xf32>
// CHECK:      // graph.matmul, graph.rope: fusion kind PURE_ELEMWISE
// CHECK-NEXT: func.func @afc_g1_1(%cos: tensor<16x64xf32>, %sin: tensor<16x64xf32>, %[[HI:v[0-9]+]]: tensor<16x32xf32>, %[[LO:v[0-9]+]]: tensor<16x32xf32>, %[[MM]]: tensor<16x64xf32>)
// CHECK-NOT:    tensor.extract_slice
// CHECK:        tensor.concat
// CHECK:      func.func @main(
// CHECK-NEXT:   %[[R:v[0-9]+]] = func.call @afc_g1_0(%x, %w)
// CHECK-NEXT:   %[[LO]] = tensor.extract_slice %[[R]][0, 0] [16, 32]
// CHECK-NEXT:   %[[HI]] = tensor.extract_slice %[[R]][0, 32] [16, 32]
// CHECK-NEXT:   func.call @afc_g1_1(%cos, %sin, %[[HI]], %[[LO]], %[[R]])

func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>, %cos: tensor<16x64xf32>, %sin: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %y = graph.fusion_group (%a = %x : tensor<16x32xf32>, %b = %w : tensor<32x64xf32>, %c = %cos : tensor<16x64xf32>, %s = %sin : tensor<16x64xf32>) -> tensor<16x64xf32> {
    %m = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %r = graph.rope %m, %c, %s {interleaved = false} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    graph.yield %r : tensor<16x64xf32>
  }
  func.return %y : tensor<16x64xf32>
}

// -----

// Two ropes of 64 and 32 columns in one group: one device function each.
// CHECK:      // remark: afc_g1: cut into 2 parts between independent computations of different shapes
// CHECK:      func.func @afc_g1_0(%q: tensor<16x64xf32>, %cq: tensor<16x64xf32>, %sq: tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK:      func.func @afc_g1_1(%k: tensor<16x32xf32>, %ck: tensor<16x32xf32>, %sk: tensor<16x32xf32>) -> tensor<16x32xf32>

func.func @main(%q: tensor<16x64xf32>, %k: tensor<16x32xf32>, %cq: tensor<16x64xf32>, %sq: tensor<16x64xf32>, %ck: tensor<16x32xf32>, %sk: tensor<16x32xf32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
  %y:2 = graph.fusion_group (%a = %q : tensor<16x64xf32>, %b = %k : tensor<16x32xf32>, %c = %cq : tensor<16x64xf32>, %s = %sq : tensor<16x64xf32>, %c2 = %ck : tensor<16x32xf32>, %s2 = %sk : tensor<16x32xf32>) -> (tensor<16x64xf32>, tensor<16x32xf32>) {
    %e = graph.exp %a : tensor<16x64xf32>
    %rq = graph.rope %e, %c, %s {interleaved = false} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %f = graph.exp %b : tensor<16x32xf32>
    %rk = graph.rope %f, %c2, %s2 {interleaved = false} : (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
    graph.yield %rq, %rk : tensor<16x64xf32>, tensor<16x32xf32>
  }
  func.return %y#0, %y#1 : tensor<16x64xf32>, tensor<16x32xf32>
}

// -----

// Two ropes of one shape compile together: no cut.
// NEG:        remark: afc_g1: cut into 2 parts between independent computations
// NEG:        {{^// -{5}$}}
// NEG-NOT:    remark
// NEG:        func.func @afc_g1(%q: tensor<16x64xf32>, %k: tensor<16x64xf32>, %cq: tensor<16x64xf32>, %sq: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>)
// NEG-NOT:    func.func @afc_g1_

func.func @main(%q: tensor<16x64xf32>, %k: tensor<16x64xf32>, %cq: tensor<16x64xf32>, %sq: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %y:2 = graph.fusion_group (%a = %q : tensor<16x64xf32>, %b = %k : tensor<16x64xf32>, %c = %cq : tensor<16x64xf32>, %s = %sq : tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
    %e = graph.exp %a : tensor<16x64xf32>
    %rq = graph.rope %e, %c, %s {interleaved = false} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %f = graph.exp %b : tensor<16x64xf32>
    %rk = graph.rope %f, %c, %s {interleaved = false} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    graph.yield %rq, %rk : tensor<16x64xf32>, tensor<16x64xf32>
  }
  func.return %y#0, %y#1 : tensor<16x64xf32>, tensor<16x64xf32>
}

// -----

// A matmul with an elementwise epilogue: one SHALLOW_CV device function.
// NEG:        {{^// -{5}$}}
// NEG-NOT:    remark
// NEG:        // graph.add, graph.matmul, graph.relu: fusion kind SHALLOW_CV
// NEG-NEXT:   func.func @afc_g1(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>, %bias: tensor<64xf32>)
// NEG-NOT:    func.func @afc_g1_

func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x64xf32>, %bias: tensor<64xf32>) -> tensor<16x64xf32> {
  %y = graph.fusion_group (%a = %x : tensor<16x32xf32>, %b = %w : tensor<32x64xf32>, %c = %bias : tensor<64xf32>) -> tensor<16x64xf32> {
    %m = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
    %s = graph.add %m, %c : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %r = graph.relu %s : tensor<16x64xf32>
    graph.yield %r : tensor<16x64xf32>
  }
  func.return %y : tensor<16x64xf32>
}
