// `-t onnx -o PATH` writes the binary model, as `onnx{file=PATH}` does, with nothing on
// stdout; a failed export leaves no file.
// RUN: rm -rf %t && mkdir -p %t
// RUN: afc-opt %s -t onnx -o %t/model.onnx | filecheck %s --allow-empty --check-prefix=STDOUT
// RUN: %python -c "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=True); print([n.op_type for n in m.graph.node])" %t/model.onnx | filecheck %s
// RUN: afc-opt %s -t 'onnx{opset=18}' --output-file=%t/o18.onnx
// RUN: %python -c "import onnx, sys; print(onnx.load(sys.argv[1]).opset_import[0].version)" %t/o18.onnx | filecheck %s --check-prefix=OPSET
// RUN: sed -e 's/xf32/xbf16/g' %s > %t/bf16.mlir
// RUN: not afc-opt %t/bf16.mlir -t onnx -o %t/bad.onnx 2>&1 | filecheck %s --check-prefix=ERROR
// RUN: not test -e %t/bad.onnx
// RUN: not afc-opt %s --split-input-file -t onnx -o %t/split.onnx 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not test -e %t/split.onnx
// Without -o the text format still goes to stdout.
// RUN: afc-opt %s -t onnx | filecheck %s --check-prefix=TEXT

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = graph.sin %x : tensor<2x3xf32>
  %r = graph.relu %e : tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// STDOUT-NOT: {{.}}
// CHECK: ['Sin', 'Relu']
// OPSET: 18
// ERROR: afc-opt: error: cannot export 'graph.sin'
// TEXT: Sin
// SPLIT: afc-opt: error: -t onnx -o writes one binary model; with --split-input-file, leave out -o to print each chunk as text{{$}}
