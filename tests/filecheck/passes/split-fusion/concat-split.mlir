// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=SplitConvConcatFusionPass,SplitMatMulConcatFusionPass}' | filecheck %s
// RUN: afc-opt %s --split-input-file -p 'split-fusion{only=SplitConvConcatFusionPass,SplitMatMulConcatFusionPass log=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=LOG

// A concat over K feeding a matmul: two matmuls on the parts with the weight's rows
// sliced at compile time, summed (the sum is the second matmul's epilogue). The concat
// moved 16384x64 floats through GM twice; the per-part products are 16384x4.
// CHECK-LABEL: func.func @matmul_k_concat
// CHECK-NEXT:    %[[W0:.*]] = graph.constant {name = "fc.weight.part0"} dense_resource<fc.weight.part0> : tensor<32x4xf32>
// CHECK-NEXT:    %[[P0:.*]] = graph.matmul %a, %[[W0]] : (tensor<16384x32xf32>, tensor<32x4xf32>) -> tensor<16384x4xf32>
// CHECK-NEXT:    %[[W1:.*]] = graph.constant {name = "fc.weight.part1"} dense_resource<fc.weight.part1> : tensor<32x4xf32>
// CHECK-NEXT:    %[[P1:.*]] = graph.matmul %b, %[[W1]] : (tensor<16384x32xf32>, tensor<32x4xf32>) -> tensor<16384x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[P0]], %[[P1]] : tensor<16384x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     graph.concat
// LOG: GraphFusionPass[SplitMatMulConcatFusionPass]: pattern=Concat->MatMul|Gemm(left operand), matched_times=1, effected_times=1.
func.func @matmul_k_concat(%a: tensor<16384x32xf32>, %b: tensor<16384x32xf32>) -> tensor<16384x4xf32> {
  %w = graph.constant {name = "fc.weight"} dense_resource<fc_weight> : tensor<64x4xf32>
  %c = graph.concat %a, %b {axis = 1} : (tensor<16384x32xf32>, tensor<16384x32xf32>) -> tensor<16384x64xf32>
  %y = graph.matmul %c, %w : (tensor<16384x64xf32>, tensor<64x4xf32>) -> tensor<16384x4xf32>
  func.return %y : tensor<16384x4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      fc_weight: "0x10000000000000009A99993E713D8ABE0AD763BF6666E6BEA4707DBF8FC2753D1F85AB3F48E1FABE52B81EBF48E1FA3EEC51B83EAE47E13D7B146EBF8FC2F5BC3333333F1F85ABBF1F85EBBE3333F3BFB81EA5BF1F85EBBF8FC275BE5C8FA2BF713D8A3E0AD7233E5C8F42BEAE4721C0713D0ABFCDCC4CBDAE47E13D0AD7C3BF8FC2F5BE48E17ABF295C4FBF14AE873F295C4FBF8FC2F5BCAE47613FE17A14BFAE47E1BDAE47E13D8FC2753DA4709DBF0AD7A33D7B14AE3F6666C6BFF6285C3F8FC2F53D0AD723BF000000405C8F423F9A9999BF295C8F3DE17A143F5C8F42BE7B142E3F295C8FBD1F852B3FEC51B83F7B142EBFCDCC4C3E1F85EBBEB81E053EEC5198BFE17A14BFCDCC4CBE6666663F3333933FC3F5A8BF713D4ABF6666263F52B8FEBF1F85EBBECDCCCCBDAE47A13FD7A3303FC3F5A8BEA470BDBE000080BE5C8FC23FF628DCBE9A9999BE3333B33E8FC2F5BDCDCC4CBE7B148EBF0AD723BCAE47E1BE8FC2953F6666263F0AD7A3BC1F852B3F7B14AEBE6666863F0AD723BCE17A143FB81EA5BF3333B33EEC51D8BF5C8F02C09A9999BE666666BF0AD7233E295C0F40E17A54BF52B81EBF3D0A573E48E1FA3EEC5138BE3D0A57BE3333333FB81E053F0AD783BF0AD7A3BD0AD7233D666686BFB81E853EF6285CBFEC51783F5C8F423EEC51B83D3D0A17BF8FC2F5BD000000C0D7A390BFEC51B83EEC5108C09A99593F0000E0BF5C8F423F9A9959BF14AE473FB81E053EB81EC5BF0000A03FEC51B83F295C8FBD713D8ABE0AD723BE48E17ABFCDCC8C3F713D0ABFCDCC4CBD713D4ABFAE4721BF0AD7A3BFAE47A13F9A9919BEEC51783F0AD7233CD7A330BFC3F5A8BE295C0FBF0AD7233C5C8FC2BE9A9999BED7A3B0BF295C4FBF3333D33F1F852BBF666686BF7B14AE3EE17AB43F9A99B9BF3D0A57BEAE4721BFAE47E1BF48E13A3F0AD7A3BC295C8F3D000040BF6666E63E713D0ABF295C0FBE7B148EBFF6289CBF1F85AB3F5C8F02BFE17A943E8FC2F5BCAE47E1BE5C8F02BFAE47213F9A9999BE9A9919BE0AD7A33C3D0A973F7B142E3F5C8FC23E295C0FBFD7A3B0BF3333733FEC51783F295C0FBE713D0A3F14AE473FE17A543F1F856B3F1F85EBBEAE47C13F0000A0BFF6285C3F48E1FA3E52B85E3FD7A3F03FA470BD3F333393BFEC51D8BF85EB513F5C8F82BF0AD723BC3D0A573F85EBD1BF3D0A07C0B81E853E0AD7233D000080BE0AD7233DF6285CBFAE47C1BF7B142EBEEC5178BF85EBD1BF5C8F023F8FC275BD85EBD13EA4707DBFC3F528BF000080BF0AD763BFCDCC4C3E14AE47BFEC51B83E7B14AE3E85EB014085EBB1BF0AD7633FEC51B8BD0AD723BC9A99B9BF1F85EBBEA4703D3F0AD7A3BD0AD7A33DE17A94BE3333933F0AD7A3BCCDCC0CC0D7A330BFF628FCBF000050C014AE07BF713DAA3FCDCC4C3D8FC295BFD7A370BF"
    }
  }
#-}

// -----

// The weight is an argument: each part's rows are cut out with graph.slice (a small
// library op each); the concat's traffic still outweighs them.
// CHECK-LABEL: func.func @matmul_k_concat_runtime_weight
// CHECK:         %[[W0:.*]] = graph.slice %w {axes = [0], ends = [32], starts = [0], steps = [1]}
// CHECK-NEXT:    %[[P0:.*]] = graph.matmul %a, %[[W0]]
// CHECK-NEXT:    %[[W1:.*]] = graph.slice %w {axes = [0], ends = [64], starts = [32], steps = [1]}
// CHECK-NEXT:    %[[P1:.*]] = graph.matmul %b, %[[W1]]
// CHECK-NEXT:    graph.add %[[P0]], %[[P1]]
func.func @matmul_k_concat_runtime_weight(%a: tensor<65536x32xf32>, %b: tensor<65536x32xf32>, %w: tensor<64x4xf32>) -> tensor<65536x4xf32> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<65536x32xf32>, tensor<65536x32xf32>) -> tensor<65536x64xf32>
  %y = graph.matmul %c, %w : (tensor<65536x64xf32>, tensor<64x4xf32>) -> tensor<65536x4xf32>
  func.return %y : tensor<65536x4xf32>
}

// -----

// A concat over rows: the concat moves to the (16x smaller) outputs, exactly.
// CHECK-LABEL: func.func @matmul_rows_concat
// CHECK:         %[[P0:.*]] = graph.matmul %a, %w, %bias {activation = "relu"} : (tensor<2048x512xf32>, tensor<512x16xf32>, tensor<16xf32>) -> tensor<2048x16xf32>
// CHECK-NEXT:    %[[P1:.*]] = graph.matmul %b, %w, %bias {activation = "relu"}
// CHECK-NEXT:    %[[Y:.*]] = graph.concat %[[P0]], %[[P1]] {axis = 0} : (tensor<2048x16xf32>, tensor<2048x16xf32>) -> tensor<4096x16xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @matmul_rows_concat(%a: tensor<2048x512xf32>, %b: tensor<2048x512xf32>, %w: tensor<512x16xf32>, %bias: tensor<16xf32>) -> tensor<4096x16xf32> {
  %c = graph.concat %a, %b {axis = 0} : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<4096x512xf32>
  %y = graph.matmul %c, %w, %bias {activation = "relu"} : (tensor<4096x512xf32>, tensor<512x16xf32>, tensor<16xf32>) -> tensor<4096x16xf32>
  func.return %y : tensor<4096x16xf32>
}

// -----

// A channel concat feeding a convolution: per-part convolutions on the weight's input
// channels; the bias is added once (by the first part), the ReLU after the sum.
// CHECK-LABEL: func.func @conv_channel_concat
// CHECK:         %[[W0:.*]] = graph.constant {name = "conv.weight.part0"} dense_resource<conv.weight.part0> : tensor<4x32x1x1xf32>
// CHECK-NEXT:    %[[P0:.*]] = graph.conv2d %a, %[[W0]], %bias {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1]}
// CHECK-NEXT:    %[[W1:.*]] = graph.constant {name = "conv.weight.part1"} dense_resource<conv.weight.part1> : tensor<4x32x1x1xf32>
// CHECK-NEXT:    %[[P1:.*]] = graph.conv2d %b, %[[W1]] {dilations = [1, 1], group = 1, pads = [0, 0, 0, 0], strides = [1, 1]}
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[P0]], %[[P1]]
// CHECK-NEXT:    %[[Y:.*]] = graph.relu %[[S]]
// CHECK-NEXT:    func.return %[[Y]]
// LOG: GraphFusionPass[SplitConvConcatFusionPass]: pattern=Concat(channels)->Conv2D, matched_times=1, effected_times=1.
func.func @conv_channel_concat(%a: tensor<1x32x128x128xf32>, %b: tensor<1x32x128x128xf32>) -> tensor<1x4x128x128xf32> {
  %w = graph.constant {name = "conv.weight"} dense_resource<conv_weight> : tensor<4x64x1x1xf32>
  %bias = graph.constant dense<[0.5, -0.5, 1.0, 0.0]> : tensor<4xf32>
  %c = graph.concat %a, %b {axis = 1} : (tensor<1x32x128x128xf32>, tensor<1x32x128x128xf32>) -> tensor<1x64x128x128xf32>
  %y = graph.conv2d %c, %w, %bias {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1, activation = "relu"} : (tensor<1x64x128x128xf32>, tensor<4x64x1x1xf32>, tensor<4xf32>) -> tensor<1x4x128x128xf32>
  func.return %y : tensor<1x4x128x128xf32>
}
{-#
  dialect_resources: {
    builtin: {
      conv_weight: "0x10000000D7A3903F0AD7233ECDCC4C3DCDCC4CBD0AD7233D295C4F3FCDCC0C3FAE47613EB81E85BF5C8F023F7B142EBF1F858B3F5C8FA2BF295C0FBE0AD723BCC3F5A8BFF628DC3F48E1BA3F1F85EBBEB81E453F5C8FC23E3D0A27C00000803E8FC275BD0AD7A33D713D8ABF713D8ABEEC5138BEEC51983FC3F5A83E0AD723BC0AD7C33F295C0FBF14AEC7BEC3F5E8BFC3F5C83F8FC2753F1F856B3F1F852B3FAE47E13DAE47613E000080BECDCC4CBECDCC4C3DAE47C13F295C0F3F8FC275BDE17A14BFAE4721BFCDCCCC3F5C8F023F295C8F3D3333B3BE7B148EBF295C8FBD52B85E3F14AEC7BE1F856BBEAE4761BEAE47E13D1F85CBBF8FC275BE9A9959BFAE47613FB81E45BFE17A143F5C8FC23F52B89EBE9A9919BF5C8F423E00000080A4707DBF1F85EB3EAE470140B81E85BECDCC4CBEB81E85BF0AD7A33E0000A0BF7B148EBF0AD7A33FC3F568BF713D8A3F5C8FC23FB81E853ECDCC0C3F9A99F93FCDCC4CBE3D0A17BFCDCCACBF0AD7233DA470BD3F8FC2753FD7A370BFF6285CBF000000BFE17A943E3D0A57BE3D0A573E9A99993E9A9999BE0AD723BD3D0A573E0AD7A3BD0000003F295CEF3F3D0A173F8FC2753DEC51D8BF14AEC73E9A99F9BFE17AB4BF9A99593F8FC2353F9A9919BE48E1DABFA470BDBE7B142EBF0AD7233FD7A31040AE47613E14AE47BF8FC295BF8FC275BDEC5138BE333393BF8FC2F53D333393BF7B148E3F14AE873F713D8A3FD7A3F0BE5C8F023FB81E05BE14AEC7BE7B14AEBE6666A6BFEC51B8BF713D4A3F5C8F42BEAE47613E0000803FA470DDBF14AE47BFEC51383E14AEC73E5C8FC2BE0AD7833F3D0A573E48E19ABF7B146EBF295C4F3F1F85EB3E3333F3BFCDCCAC3F9A99193F1F85AB3F5C8FC2BE9A9999BED7A390BF5C8F2240EC5138BE1F85CB3F666626BF0AD7233E8FC2D5BF5C8FC2BE48E17A3F0000A0BFC3F5883F7B14AE3EB81E85BF000000BF1F85EBBECDCC4CBD713D0ABFE17A54BF9A9999BE0AD783BFB81EA5BFCDCC4CBDAE47613F0AD7C3BF00000000666626BF48E17ABF9A99593FB81E05BF0000C03F14AE47BF14AEC73E1F856BBE000040BF3D0A173F9A9919BE9A99193FCDCC4CBD1F858BBFCDCCCCBDCDCC4C3D8FC2753FC3F568BF0AD723BDF628DCBF6666263F713D8ABF14AEE7BF8FC275BD7B148E3F5C8FC2BF1F858BBFA4703DBFD7A390BF5C8FC23E295C4FBFEC5138BFE17A143F5C8F42BFF628DC3EEC5178BF48E19ABF1F85EBBF7B14EE3F0AD7A3BE8FC2753E8FC2F5BC0AD7233ECDCC4C3DE17AF43FB81E85BF14AEC7BFAE4781BF713DAABF0000403F85EB513F8FC275BF85EBB1BF3333B3BE85EBB13FE17A34C014AE073F713D8ABFB81E853F713D8ABFE17A94BEAE47C1BF48E17ABF85EBB13F85EB513FCDCCCCBE52B85EBF85EBF1BF14AEC7BE8FC2F5BC0AD7A3BDEC51B8BD"
    }
  }
#-}

// -----

// gemm with a transposed B ([N, K]): B is sliced along its second axis; C and beta stay
// with the first part, alpha applies to both.
// CHECK-LABEL: func.func @gemm_k_concat
// CHECK-NEXT:    %[[B0:.*]] = graph.constant {name = "gemm.b.part0"} dense_resource<gemm.b.part0> : tensor<4x32xf32>
// CHECK-NEXT:    %[[P0:.*]] = graph.gemm %a, %[[B0]], %c {alpha = 5.000000e-01, beta = 2.000000e+00, trans_a = false, trans_b = true}
// CHECK-NEXT:    %[[B1:.*]] = graph.constant {name = "gemm.b.part1"} dense_resource<gemm.b.part1> : tensor<4x32xf32>
// CHECK-NEXT:    %[[P1:.*]] = graph.gemm %b, %[[B1]] {alpha = 5.000000e-01, beta = 2.000000e+00, trans_a = false, trans_b = true}
// CHECK-NEXT:    graph.add %[[P0]], %[[P1]]
func.func @gemm_k_concat(%a: tensor<16384x32xf32>, %b: tensor<16384x32xf32>, %c: tensor<4xf32>) -> tensor<16384x4xf32> {
  %w = graph.constant {name = "gemm.b"} dense_resource<gemm_b> : tensor<4x64xf32>
  %x = graph.concat %a, %b {axis = 1} : (tensor<16384x32xf32>, tensor<16384x32xf32>) -> tensor<16384x64xf32>
  %y = graph.gemm %x, %w, %c {alpha = 0.5, beta = 2.0, trans_a = false, trans_b = true} : (tensor<16384x64xf32>, tensor<4x64xf32>, tensor<4xf32>) -> tensor<16384x4xf32>
  func.return %y : tensor<16384x4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      gemm_b: "0x10000000295C8FBF295C8FBD0AD723BDB81EA53F295CEF3F295C0FBEB81E45BF8FC275BDF6281CBFA4703DBF8FC275BDB81E85BFF6281C3FCDCCCCBD0000803EEC5138BE48E13ABF333373BF8FC275BECDCC0CBF1F856B3E000000807B14AEBF295C8F3D1F85ABBF52B81EBFE17A94BEB81E05C0EC51B83D9A99193E0AD723BE3D0AD7BEA470BDBE48E17ABF713D8ABECDCC0CBFEC51B83D9A9999BF8FC2753E295C0F3E295C0FBEAE47E1BECDCC0C3FE17AD4BF1F85EB3E8FC2753E295C8F3E5C8FC23E666626BFB81E85BE0AD7233FF628DC3E3D0A573EAE47C1BF713D0A3F8FC2953FAE47813F1F856B3E14AEC7BFD7A3703F9A9919BE85EB21C05C8FC23E52B8BEBF6666A6BFAE4721BF5C8FA23FA470BDBE713D8A3E0000E03F1F85CB3FCDCCCCBD8FC275BEAE47A1BFD7A330BFF628DC3ECDCCCC3EAE47E13DA4707D3FB81E45BF8FC275BD48E13A3FE17A143FC3F5883FCDCCCC3E52B89EBEEC51B83E000080BF85EBD1BFE17A143F8FC275BD52B89E3E9A99D9BFA470BDBE9A9919BFF6285CBFD7A310C0C3F5A8BE6666663F5C8FC23E9A9919BF0AD723BC5C8F423FD7A330C08FC2F5BD713D0A3F7B142E3F9A99D93F85EB913F52B89E3E9A99993E713D4A3F713D0ABF0AD723BDC3F5683F48E1FA3F0AD723BECDCC4CBDCDCC4C3E1F85AB3F8FC2F5BCF628BC3FEC5178BF5C8F42BECDCC4CBE713D4A3F6666863FAE47C1BF1F856BBF7B14AE3EC3F528BF5C8FC2BFB81E853F48E1FA3E48E1FA3E8FC2F5BE0AD7833F8FC275BECDCC8C3FC3F568BF9A9959BFCDCC4C3E333333BF7B142E3FB81E853E1F856BBF295C8F3D3333B3BE1F856B3FAE4721BFAE47E1BE48E19A3F295C0F40000000408FC2753DAE47613E0AD7C33F8FC2F5BD48E17ABF8FC2F53D6666E63EE17A54BF3333D3BFEC51B8BF1F852B3F5C8F42BF295C0FBE3D0A573E52B81E3FC3F5A8BE0000003F0AD763BFEC51B8BE5C8F82BFD7A3903F8FC2F5BCA4703DBF3333B3BEAE4761BE3333333FCDCCCCBFB81E85BF5C8FC2BE85EB21408FC2753FAE47E1BD8FC2353F0AD703401F856BBEA470BDBE48E19A3F48E1FA3E1F852B3F5C8F02BF8FC2F53F48E1DA3F85EB113F7B142E3F85EB01C00AD7233F5C8F42BEF628DC3E7B142E3F7B14AEBEEC51D8BFA470BD3EA4703DBFC3F5A8BE9A9919BF7B14AEBE0AD713C0F6289C3F0000803E7B148E3FA470FD3F0AD7A33C6666E6BF0AD763BF48E19ABF000000BF0AD7A33D000000C07B14AE3EAE47C1BF9A99993EAE47E1BD52B89EBE295C8FBD713D0ABFF6281CBF3D0AD7BF8FC2F5BCCDCCEC3FA470FD3FC3F5A83F8FC2353F7B142EBFEC51B83F8FC275BD295C8FBDE17A94BEEC51B83DAE47E1BE0AD7A3BD713D8ABFA470BDBE85EB1140295C8FBD8FC275BE14AE073F8FC2353F7B148EBF3D0A57BE1F856B3F713D8A3E8FC2F53D"
    }
  }
#-}

// -----

// Negative (cost): a small concat costs less than the extra cube launch.
// CHECK-LABEL: func.func @small_concat
// CHECK:         graph.concat
// CHECK:         graph.matmul %c, %w
// LOG: not applied to graph.concat %c: no estimated gain: the 2 ops around it take {{.*}} us in 2 kernels, {{.*}} when split into per-part cube ops (2 parts)
func.func @small_concat(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %w: tensor<64x64xf32>) -> tensor<16x64xf32> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x64xf32>
  %y = graph.matmul %c, %w : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

// Negative (precondition): a grouped convolution mixes channels per group only.
// CHECK-LABEL: func.func @grouped_conv
// CHECK:         graph.concat
// LOG: not applied to graph.concat %c: a grouped convolution (group 2)
func.func @grouped_conv(%a: tensor<1x32x128x128xf32>, %b: tensor<1x32x128x128xf32>, %w: tensor<4x32x1x1xf32>) -> tensor<1x4x128x128xf32> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<1x32x128x128xf32>, tensor<1x32x128x128xf32>) -> tensor<1x64x128x128xf32>
  %y = graph.conv2d %c, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 2} : (tensor<1x64x128x128xf32>, tensor<4x32x1x1xf32>) -> tensor<1x4x128x128xf32>
  func.return %y : tensor<1x4x128x128xf32>
}

// -----

// Negative (precondition): a spatial concat is not a sum over input channels.
// CHECK-LABEL: func.func @spatial_concat
// CHECK:         graph.concat
// LOG: not applied to graph.concat %c: the concat joins axis 2, not the convolution's input channels
func.func @spatial_concat(%a: tensor<1x8x64x128xf32>, %b: tensor<1x8x64x128xf32>, %w: tensor<4x8x1x1xf32>) -> tensor<1x4x128x128xf32> {
  %c = graph.concat %a, %b {axis = 2} : (tensor<1x8x64x128xf32>, tensor<1x8x64x128xf32>) -> tensor<1x8x128x128xf32>
  %y = graph.conv2d %c, %w {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], group = 1} : (tensor<1x8x128x128xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x128x128xf32>
  func.return %y : tensor<1x4x128x128xf32>
}

// -----

// Negative (precondition): f16 partial products would be rounded before the sum.
// CHECK-LABEL: func.func @f16_k_concat
// CHECK:         graph.concat
// LOG: not applied to graph.concat %c: the partial products of a f16 graph.matmul would be rounded to f16 before they are summed
func.func @f16_k_concat(%a: tensor<16384x32xf16>, %b: tensor<16384x32xf16>, %w: tensor<64x4xf16>) -> tensor<16384x4xf16> {
  %c = graph.concat %a, %b {axis = 1} : (tensor<16384x32xf16>, tensor<16384x32xf16>) -> tensor<16384x64xf16>
  %y = graph.matmul %c, %w : (tensor<16384x64xf16>, tensor<64x4xf16>) -> tensor<16384x4xf16>
  func.return %y : tensor<16384x4xf16>
}

// -----

// Negative (precondition): a row concat with a batched right operand.
// CHECK-LABEL: func.func @batched_rows_concat
// CHECK:         graph.concat
// LOG: not applied to graph.concat %c: a batched right operand would need slicing along the concat axis as well
func.func @batched_rows_concat(%a: tensor<2x1024x512xf32>, %b: tensor<2x1024x512xf32>, %w: tensor<4x512x16xf32>) -> tensor<4x1024x16xf32> {
  %c = graph.concat %a, %b {axis = 0} : (tensor<2x1024x512xf32>, tensor<2x1024x512xf32>) -> tensor<4x1024x512xf32>
  %y = graph.matmul %c, %w : (tensor<4x1024x512xf32>, tensor<4x512x16xf32>) -> tensor<4x1024x16xf32>
  func.return %y : tensor<4x1024x16xf32>
}
