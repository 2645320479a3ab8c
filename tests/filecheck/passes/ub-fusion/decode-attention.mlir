// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion' | filecheck %s
// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},ub-fusion,lower-to-buffer' | filecheck %s --check-prefix=LOWERED
// RUN: afc-opt %s -p 'set-target{chip=Ascend910},ub-fusion' | filecheck %s --check-prefix=COUPLED

// The cost model chooses between the attention template and flash-decoding
// (decode_attention): one query row per head with GQA (7 query heads per KV head) against
// 2048 keys splits the keys over the cores; a prefill block, a short key range or a coupled
// chip (no SyncAll<false>) keeps the attention template.

// CHECK-LABEL: func.func @decode
// CHECK:       template = "decode_attention", tiling = {epilogue_tile_elems = {{[0-9]+}} : i64, tkv = {{[0-9]+}} : i64, tq = 16 : i64}
// LOWERED-LABEL: buffer.kernel @decode_kernel
// LOWERED-SAME:  template = "decode_attention"
// LOWERED:       buffer.workspace
// LOWERED:       buffer.sync_all
// LOWERED:       scf.for %item
// LOWERED:       buffer.return
// COUPLED-LABEL: func.func @decode
// COUPLED:       template = "attention"
func.func @decode(%q: tensor<1x28x1x128xf16>, %k: tensor<1x4x2048x128xf16>, %v: tensor<1x4x2048x128xf16>) -> tensor<1x28x1x128xf16> {
  %a = graph.flash_attention %q, %k, %v {scale = 0.088, causal = false, layout = "BNSD"} : (tensor<1x28x1x128xf16>, tensor<1x4x2048x128xf16>, tensor<1x4x2048x128xf16>) -> tensor<1x28x1x128xf16>
  func.return %a : tensor<1x28x1x128xf16>
}

// 32 query rows per head: 224 rows per KV head, more than one query tile
// CHECK-LABEL: func.func @prefill
// CHECK:       template = "attention"
// CHECK-NOT:   decode_attention
// CHECK-LABEL: func.func @short_keys
func.func @prefill(%q: tensor<1x28x32x128xf16>, %k: tensor<1x4x2048x128xf16>, %v: tensor<1x4x2048x128xf16>) -> tensor<1x28x32x128xf16> {
  %a = graph.flash_attention %q, %k, %v {scale = 0.088, causal = false, layout = "BNSD"} : (tensor<1x28x32x128xf16>, tensor<1x4x2048x128xf16>, tensor<1x4x2048x128xf16>) -> tensor<1x28x32x128xf16>
  func.return %a : tensor<1x28x32x128xf16>
}

// 64 keys: the split's partials and combine cost more than they save
// CHECK:       template = "attention"
// CHECK-NOT:   decode_attention
func.func @short_keys(%q: tensor<1x28x1x128xf16>, %k: tensor<1x4x64x128xf16>, %v: tensor<1x4x64x128xf16>) -> tensor<1x28x1x128xf16> {
  %a = graph.flash_attention %q, %k, %v {scale = 0.088, causal = false, layout = "BNSD"} : (tensor<1x28x1x128xf16>, tensor<1x4x64x128xf16>, tensor<1x4x64x128xf16>) -> tensor<1x28x1x128xf16>
  func.return %a : tensor<1x28x1x128xf16>
}
