// RUN: afc-opt %s --split-input-file --verify-diagnostics

// The rules of a kernel's host code (autofusion/dialects/host_rules.py) are the
// verifier's: the op_host files compute the tiling, the block count and the output
// shapes in C++ from the input shapes alone (TilingFunc, InferShape), and plain afc-opt
// rejects, in one line at the op, the host code they could not print.

// The tiling rule is a C++ function of integers.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

// expected-error @+1 {{tiling function @k_tiling takes or returns f32; tiling scalars are integers}}
func.func @k_tiling(%n: index, %s: f32) -> (index, index) {
  func.return %n, %n : index, index
}
func.func @main(%x: tensor<64xf32>, %s: f32) -> tensor<64xf32> {
  %n = buffer.dim %x[0] : tensor<64xf32>
  %b, %t = func.call @k_tiling(%n, %s) : (index, f32) -> (index, index)
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// A tiling rule calls no functions.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @half(%n: index) -> index {
  %c2 = arith.constant 2 : index
  %h = arith.divsi %n, %c2 : index
  func.return %h : index
}
func.func @k_tiling(%n: index) -> (index, index) {
  // expected-error @+1 {{func.call @half: a tiling rule calls no functions}}
  %h = func.call @half(%n) : (index) -> index
  func.return %h, %h : index, index
}
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %n = buffer.dim %x[0] : tensor<64xf32>
  %b, %t = func.call @k_tiling(%n) : (index) -> (index, index)
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// The host code before a launch calls only the kernel's tiling rule.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @half(%n: index) -> index {
  %c2 = arith.constant 2 : index
  %h = arith.divsi %n, %c2 : index
  func.return %h : index
}
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %n = buffer.dim %x[0] : tensor<64xf32>
  // expected-error @+1 {{func.call @half: the host code before a launch may call only the kernel's tiling rule}}
  %t = func.call @half(%n) : (index) -> index
  %b = arith.constant 1 : index
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// TilingFunc reads the input shapes: the tiling comes from tensor dimensions.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @main(%x: tensor<64xf32>, %t: index) -> tensor<64xf32> {
  %b = arith.constant 1 : index
  // expected-error @+1 {{the tiling of @k depends on an argument of its host function that is not a tensor dimension}}
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// InferShape computes the output shape from the input shapes alone.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @main(%x: tensor<64xf32>, %m: index) -> tensor<?xf32> {
  %b = arith.constant 1 : index
  %t = arith.constant 8 : index
  // expected-error @+1 {{the output shape of @k depends on an argument of its host function that is not a tensor dimension}}
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims(%m) : (tensor<64xf32>) -> tensor<?xf32>
  func.return %o : tensor<?xf32>
}

// -----

// TilingFunc is straight-line code.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %n = buffer.dim %x[0] : tensor<64xf32>
  %b = arith.constant 1 : index
  %flag = arith.cmpi sgt, %n, %b : index
  // expected-error @+1 {{scf.if: the tiling of @k depends on control flow}}
  %t = scf.if %flag -> (index) {
    scf.yield %n : index
  } else {
    scf.yield %b : index
  }
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// TilingFunc reads the shapes of the tensors the kernel takes.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @main(%x: tensor<64xf32>, %z: tensor<32xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{buffer.dim: the tiling of @k reads the shape of a tensor the kernel does not take}}
  %t = buffer.dim %z[0] : tensor<32xf32>
  %b = arith.constant 1 : index
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}

// -----

// TilingFunc computes with the integer arithmetic the C++ printer has.
buffer.kernel @k(%x: memref<?xf32, #buffer.space<gm>>, %o: memref<?xf32, #buffer.space<gm>>, %t: index) attributes {chip = "Ascend910B1", template = "test", core_type = "aiv", num_inputs = 1, num_outputs = 1} {
  buffer.return
}

func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %n = buffer.dim %x[0] : tensor<64xf32>
  %c3 = arith.constant 3 : index
  // expected-error @+1 {{arith.ceildivui: the tiling of @k depends on it, but a host tiling function computes only with shapes and integers}}
  %t = arith.ceildivui %n, %c3 : index
  %b = arith.constant 1 : index
  %o = buffer.launch @k blocks(%b) (%x) tiling(%t) dims() : (tensor<64xf32>) -> tensor<64xf32>
  func.return %o : tensor<64xf32>
}
