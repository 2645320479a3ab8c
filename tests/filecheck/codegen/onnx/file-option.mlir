// With file="PATH" the binary model is written to PATH and one summary line printed;
// a failed export writes nothing and reports one line.
// RUN: rm -rf %t && mkdir -p %t
// RUN: afc-opt %s -t 'onnx{file="%t/model.onnx" opset=18}' | filecheck %s --check-prefix=SUMMARY
// RUN: %python -c "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=True); print([n.op_type for n in m.graph.node], m.opset_import[0].version)" %t/model.onnx | filecheck %s --check-prefix=MODEL
// RUN: sed -e 's/xf32/xbf16/g' %s > %t/bf16.mlir
// RUN: not afc-opt %t/bf16.mlir -t 'onnx{file="%t/bad.onnx"}' 2>&1 | filecheck %s --check-prefix=ERROR
// RUN: not test -e %t/bad.onnx

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.sin %x : tensor<2x3xf32>
  %r = graph.reduce_mean %e {axes = [1], keepdims = true} : tensor<2x3xf32> -> tensor<2x1xf32>
  %d = graph.sub %e, %r : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}

// SUMMARY: wrote {{.*}}/model.onnx: ONNX opset 18, 4 nodes, 0 functions, 0 initializers, {{[0-9]+}} bytes
// MODEL: ['Sin', 'Constant', 'ReduceMean', 'Sub'] 18
// ERROR: afc-opt: error: cannot export 'graph.sin' to ONNX opset 17: ONNX Sin-7 does not accept bf16 for its input 'input' (it takes f16, f32, f64)
// ERROR-NOT: Traceback
