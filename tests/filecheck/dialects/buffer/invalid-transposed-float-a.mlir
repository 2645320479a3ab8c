// RUN: afc-opt %s --verify-diagnostics

// A transposed float A operand (lower-to-buffer built this for an f32 gemm with trans_a
// before the matmul template refused it): LoadData cannot transpose 16x8 float fractals
// into L0A, and LoadData3DV2's enTranspose is not emitted, so the verifier rejects it
// (plain afc-opt, not only -t ascendc).

builtin.module attributes {afc.target = #afc.target<"Ascend910B1">} {
  func.func @main(%a: tensor<48x40xf32>, %b: tensor<48x32xf32>) -> tensor<40x32xf32> {
    %c40 = arith.constant 40 : index
    %c32 = arith.constant 32 : index
    %c48 = arith.constant 48 : index
    %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16 = func.call @main_kernel0_tiling(%c40, %c32, %c48) : (index, index, index) -> (index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)
    %y = buffer.launch @main_kernel0 blocks(%16) (%a, %b) tiling(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15) dims() {afc.plan = {target = #afc.target<"Ascend910B1">, template = "matmul", tiling = {c_depth = 1 : i64, epilogue_tile_elems = 6528 : i64, step_k = 4 : i64, tk = 32 : i64, tm = 128 : i64, tn = 256 : i64}, footprint = {l0a = 32768 : i64, l0b = 65536 : i64, l0c = 131072 : i64, l1 = 393216 : i64, ub = 182784 : i64}, cost_us = 3.249000e+00 : f64, reason = "2 ops in one matmul kernel save 3.4695 us (ATbeMatMulElemwiseFusionPass, TbeEltwiseFusionPass)"}, afc.report = {ops = ["graph.gemm %g", "graph.relu %y"], gm_read_bytes = 26624 : i64, gm_write_bytes = 10240 : i64, unfused_gm_bytes = 29184 : i64, unfused_time_us = 6.0211943661971832 : f64, unfused_kernels = 2 : i64, traffic = [[[["i0", 7680 : i64], ["i1", 6144 : i64]], [["o0", 5120 : i64]], 0 : i64, ["i0"], ["i1"]]], unfused_traffic = [[[["i0", 7680 : i64], ["i1", 6144 : i64]], [["l0", 5120 : i64]], 0 : i64, ["i0"], ["i1"]], [[["l0", 5120 : i64]], [["o0", 5120 : i64]], 0 : i64, [], []]]}} : (tensor<48x40xf32>, tensor<48x32xf32>) -> tensor<40x32xf32>
    func.return %y : tensor<40x32xf32>
  }
  buffer.kernel @main_kernel0(%in0: memref<?xf32, #buffer.space<gm>>, %in1: memref<?xf32, #buffer.space<gm>>, %out0: memref<?xf32, #buffer.space<gm>>, %M: index, %N: index, %K: index, %tm: index, %tn: index, %tk: index, %kl1: index, %mt: index, %nt: index, %k_stages: index, %tiles: index, %per_core: index, %tile_stride: index, %er: index, %ws_bytes: index, %group_m: index) attributes {chip = "Ascend910B1", template = "matmul", core_type = "mix", num_inputs = 2 : i64, num_outputs = 1 : i64, afc.ub_bytes = 130560 : i64} {
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c2 = arith.constant 2 : index
    %bid = buffer.block_idx
    %0 = arith.muli %bid, %per_core : index
    %1 = arith.addi %0, %per_core : index
    %2 = arith.minsi %1, %tiles : index
    %ws = buffer.workspace %ws_bytes : memref<?xf32, #buffer.space<gm>>
    %3 = arith.muli %tm, %tn : index
    %4 = arith.muli %tm, %kl1 : index
    %5 = arith.muli %4, %c4 : index
    %q_a1 = buffer.alloc_queue %5 buffers 2 max_bytes 65536 of f32 : !buffer.queue<a1>
    %6 = arith.muli %kl1, %tn : index
    %7 = arith.muli %6, %c4 : index
    %q_b1 = buffer.alloc_queue %7 buffers 2 max_bytes 131072 of f32 : !buffer.queue<b1>
    %8 = arith.muli %tm, %tk : index
    %9 = arith.muli %8, %c4 : index
    %q_a2 = buffer.alloc_queue %9 buffers 2 max_bytes 16384 of f32 : !buffer.queue<a2>
    %10 = arith.muli %tk, %tn : index
    %11 = arith.muli %10, %c4 : index
    %q_b2 = buffer.alloc_queue %11 buffers 2 max_bytes 32768 of f32 : !buffer.queue<b2>
    %12 = arith.muli %3, %c4 : index
    %q_c = buffer.alloc_queue %12 buffers 1 max_bytes 131072 of f32 : !buffer.queue<co1>
    %13 = arith.muli %er, %tile_stride : index
    %14 = arith.ceildivsi %er, %c8 : index
    %15 = arith.muli %14, %c8 : index
    %16 = arith.muli %13, %c4 : index
    %17 = arith.ceildivsi %16, %c32 : index
    %18 = arith.muli %17, %c32 : index
    %q_in0 = buffer.alloc_queue %18 buffers 2 max_bytes 26112 of f32 : !buffer.queue<vecin>
    %19 = arith.muli %13, %c4 : index
    %20 = arith.ceildivsi %19, %c32 : index
    %21 = arith.muli %20, %c32 : index
    %q_out0 = buffer.alloc_queue %21 buffers 2 max_bytes 26112 of f32 : !buffer.queue<vecout>
    %22 = arith.muli %13, %c4 : index
    %23 = arith.ceildivsi %22, %c32 : index
    %24 = arith.muli %23, %c32 : index
    %25 = arith.muli %tile_stride, %c4 : index
    %26 = arith.ceildivsi %25, %c32 : index
    %27 = arith.muli %26, %c32 : index
    %28 = arith.muli %15, %c4 : index
    %29 = arith.ceildivsi %28, %c32 : index
    %30 = arith.muli %29, %c32 : index
    %work0 = buffer.alloc_buf "veccalc" %24 max_bytes 26112 -> memref<?xf32, #buffer.space<ub>>
    scf.for %tile = %0 to %2 step %c1 {
      %31 = arith.muli %mt, %nt : index
      %32 = arith.divsi %tile, %31 : index
      %33 = arith.remsi %tile, %31 : index
      %34 = arith.muli %group_m, %nt : index
      %35 = arith.divsi %33, %34 : index
      %36 = arith.muli %35, %group_m : index
      %37 = arith.subi %mt, %36 : index
      %38 = arith.minsi %group_m, %37 : index
      %39 = arith.remsi %33, %34 : index
      %40 = arith.remsi %39, %38 : index
      %41 = arith.addi %36, %40 : index
      %42 = arith.divsi %39, %38 : index
      %43 = arith.muli %41, %tm : index
      %44 = arith.muli %42, %tn : index
      %45 = arith.subi %M, %43 : index
      %m = arith.minsi %tm, %45 : index
      %46 = arith.subi %N, %44 : index
      %ncols = arith.minsi %tn, %46 : index
      buffer.stage "cube" {
        %c = buffer.queue_alloc %q_c : !buffer.queue<co1> -> memref<?xf32, #buffer.space<l0c>>
        scf.for %ks = %c0 to %k_stages step %c1 {
          %47 = arith.muli %ks, %kl1 : index
          %48 = arith.subi %K, %47 : index
          %49 = arith.minsi %kl1, %48 : index
          %a1 = buffer.queue_alloc %q_a1 : !buffer.queue<a1> -> memref<?xf32, #buffer.space<l1>>
          %50 = arith.muli %47, %M : index
          %51 = arith.addi %50, %43 : index
          %52 = buffer.view %in0[%51] : memref<?xf32, #buffer.space<gm>>
          buffer.copy %52 to %a1 blocks %49 x %m strides %M, %tm : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<l1>>
          buffer.enque %q_a1, %a1 : !buffer.queue<a1>, memref<?xf32, #buffer.space<l1>>
          %a1_1 = buffer.deque %q_a1 : !buffer.queue<a1> -> memref<?xf32, #buffer.space<l1>>
          %b1 = buffer.queue_alloc %q_b1 : !buffer.queue<b1> -> memref<?xf32, #buffer.space<l1>>
          %53 = arith.muli %47, %N : index
          %54 = arith.addi %53, %44 : index
          %55 = buffer.view %in1[%54] : memref<?xf32, #buffer.space<gm>>
          buffer.copy %55 to %b1 blocks %49 x %ncols strides %N, %tn : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<l1>>
          buffer.enque %q_b1, %b1 : !buffer.queue<b1>, memref<?xf32, #buffer.space<l1>>
          %b1_1 = buffer.deque %q_b1 : !buffer.queue<b1> -> memref<?xf32, #buffer.space<l1>>
          %56 = arith.ceildivsi %49, %tk : index
          scf.for %kk = %c0 to %56 step %c1 {
            %57 = arith.muli %kk, %tk : index
            %58 = arith.subi %49, %57 : index
            %59 = arith.minsi %tk, %58 : index
            %60 = arith.addi %ks, %kk : index
            %a2 = buffer.queue_alloc %q_a2 : !buffer.queue<a2> -> memref<?xf32, #buffer.space<l0a>>
            %61 = arith.muli %57, %tm : index
            %62 = buffer.view %a1_1[%61] : memref<?xf32, #buffer.space<l1>>
            // expected-error @+1 {{buffer.copy: a transposed float A operand has no LoadData form afc emits}}
            buffer.copy %62 to %a2 blocks %59 x %m strides %tm, %59 transpose true : memref<?xf32, #buffer.space<l1>> to memref<?xf32, #buffer.space<l0a>>
            buffer.enque %q_a2, %a2 : !buffer.queue<a2>, memref<?xf32, #buffer.space<l0a>>
            %a2_1 = buffer.deque %q_a2 : !buffer.queue<a2> -> memref<?xf32, #buffer.space<l0a>>
            %b2 = buffer.queue_alloc %q_b2 : !buffer.queue<b2> -> memref<?xf32, #buffer.space<l0b>>
            %63 = arith.muli %57, %tn : index
            %64 = buffer.view %b1_1[%63] : memref<?xf32, #buffer.space<l1>>
            buffer.copy %64 to %b2 blocks %59 x %ncols strides %tn, %ncols : memref<?xf32, #buffer.space<l1>> to memref<?xf32, #buffer.space<l0b>>
            buffer.enque %q_b2, %b2 : !buffer.queue<b2>, memref<?xf32, #buffer.space<l0b>>
            %b2_1 = buffer.deque %q_b2 : !buffer.queue<b2> -> memref<?xf32, #buffer.space<l0b>>
            %acc = arith.cmpi ne, %60, %c0 : index
            %mmad_m = arith.maxsi %m, %c16 : index
            buffer.pipe_barrier "M" small_mmad(%mmad_m, %ncols)
            buffer.mmad %c, %a2_1, %b2_1, %mmad_m, %ncols, %59, %acc : memref<?xf32, #buffer.space<l0c>>, memref<?xf32, #buffer.space<l0a>>, memref<?xf32, #buffer.space<l0b>>
            buffer.queue_free %q_a2, %a2_1 : !buffer.queue<a2>, memref<?xf32, #buffer.space<l0a>>
            buffer.queue_free %q_b2, %b2_1 : !buffer.queue<b2>, memref<?xf32, #buffer.space<l0b>>
          }
          buffer.queue_free %q_a1, %a1_1 : !buffer.queue<a1>, memref<?xf32, #buffer.space<l1>>
          buffer.queue_free %q_b1, %b1_1 : !buffer.queue<b1>, memref<?xf32, #buffer.space<l1>>
        }
        %65 = arith.subi %tile, %0 : index
        %66 = arith.remsi %65, %c2 : index
        %67 = arith.muli %bid, %c2 : index
        %68 = arith.addi %67, %66 : index
        %69 = arith.muli %68, %3 : index
        %70 = arith.subi %tile, %0 : index
        %71 = arith.cmpi slt, %c1, %70 : index
        scf.if %71 {
          buffer.cross_core_wait 1 on "aic"
        }
        %72 = buffer.view %ws[%69] : memref<?xf32, #buffer.space<gm>>
        buffer.copy %c to %72 blocks %m x %ncols strides %ncols, %tn : memref<?xf32, #buffer.space<l0c>> to memref<?xf32, #buffer.space<gm>>
        buffer.queue_free %q_c, %c : !buffer.queue<co1>, memref<?xf32, #buffer.space<l0c>>
        buffer.cross_core_set 0 from "aic" after "fix"
      }
      buffer.cross_core_wait 0 on "aiv"
      %73 = arith.ceildivsi %m, %er : index
      %sub = buffer.sub_block_idx
      %74 = arith.maxsi %73, %sub : index
      %75 = arith.subi %74, %sub : index
      %76 = arith.ceildivsi %75, %c2 : index
      scf.for %chunk = %c0 to %76 step %c1 {
        %77 = arith.muli %chunk, %c2 : index
        %78 = arith.addi %77, %sub : index
        %79 = arith.muli %78, %er : index
        %80 = arith.subi %m, %79 : index
        %nrows = arith.minsi %er, %80 : index
        %81 = arith.subi %tile, %0 : index
        %82 = arith.remsi %81, %c2 : index
        %83 = arith.muli %bid, %c2 : index
        %84 = arith.addi %83, %82 : index
        %85 = arith.muli %tm, %tn : index
        %86 = arith.muli %84, %85 : index
        %87 = arith.muli %79, %tn : index
        %88 = arith.addi %86, %87 : index
        %89 = buffer.view %ws[%88] : memref<?xf32, #buffer.space<gm>>
        %90 = arith.muli %32, %M : index
        %91 = arith.addi %90, %43 : index
        %92 = arith.addi %91, %79 : index
        %93 = arith.muli %92, %N : index
        buffer.stage "copy_in" {
          %slot = buffer.queue_alloc %q_in0 : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
          buffer.copy %89 to %slot blocks %nrows x %ncols strides %tn, %tile_stride : memref<?xf32, #buffer.space<gm>> to memref<?xf32, #buffer.space<ub>>
          buffer.enque %q_in0, %slot : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
        }
        buffer.stage "compute" {
          %x = buffer.deque %q_in0 : !buffer.queue<vecin> -> memref<?xf32, #buffer.space<ub>>
          %94 = arith.muli %nrows, %tile_stride : index
          buffer.vunary "relu" %work0, %x, %94 : memref<?xf32, #buffer.space<ub>>, memref<?xf32, #buffer.space<ub>>
          %y = buffer.queue_alloc %q_out0 : !buffer.queue<vecout> -> memref<?xf32, #buffer.space<ub>>
          %95 = arith.muli %nrows, %tile_stride : index
          buffer.copy %work0 to %y blocks %c1 x %95 strides %c0, %c0 : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<ub>>
          buffer.enque %q_out0, %y : !buffer.queue<vecout>, memref<?xf32, #buffer.space<ub>>
          buffer.queue_free %q_in0, %x : !buffer.queue<vecin>, memref<?xf32, #buffer.space<ub>>
        }
        buffer.stage "copy_out" {
          %y_1 = buffer.deque %q_out0 : !buffer.queue<vecout> -> memref<?xf32, #buffer.space<ub>>
          %96 = arith.addi %93, %44 : index
          %97 = buffer.view %out0[%96] : memref<?xf32, #buffer.space<gm>>
          buffer.copy %y_1 to %97 blocks %nrows x %ncols strides %tile_stride, %N : memref<?xf32, #buffer.space<ub>> to memref<?xf32, #buffer.space<gm>>
          buffer.queue_free %q_out0, %y_1 : !buffer.queue<vecout>, memref<?xf32, #buffer.space<ub>>
        }
      }
      %98 = arith.addi %tile, %c2 : index
      %99 = arith.cmpi slt, %98, %2 : index
      scf.if %99 {
        buffer.cross_core_set 1 from "aiv" after "mte2"
      }
    }
    buffer.return
  }
  func.func private @main_kernel0_tiling(%M: index, %N: index, %K: index) -> (index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c16 = arith.constant 16 : index
    %c24 = arith.constant 24 : index
    %c256 = arith.constant 256 : index
    %c32 = arith.constant 32 : index
    %c8 = arith.constant 8 : index
    %c6528 = arith.constant 6528 : index
    %c4 = arith.constant 4 : index
    %c100663296 = arith.constant 100663296 : index
    %0 = arith.ceildivsi %M, %c16 : index
    %1 = arith.muli %0, %c16 : index
    %2 = arith.minsi %c128, %1 : index
    %3 = arith.ceildivsi %M, %2 : index
    %4 = arith.ceildivsi %c24, %3 : index
    %5 = arith.ceildivsi %N, %c16 : index
    %6 = arith.minsi %4, %5 : index
    %7 = arith.maxsi %c1, %6 : index
    %8 = arith.ceildivsi %N, %7 : index
    %9 = arith.ceildivsi %8, %c16 : index
    %10 = arith.muli %9, %c16 : index
    %11 = arith.minsi %c256, %10 : index
    %12 = arith.ceildivsi %N, %11 : index
    %13 = arith.ceildivsi %K, %c16 : index
    %14 = arith.muli %13, %c16 : index
    %15 = arith.minsi %c32, %14 : index
    %16 = arith.ceildivsi %K, %15 : index
    %17 = arith.muli %16, %15 : index
    %18 = arith.minsi %c128, %17 : index
    %19 = arith.ceildivsi %K, %18 : index
    %20 = arith.muli %3, %12 : index
    %21 = arith.minsi %20, %c24 : index
    %22 = arith.maxsi %c1, %21 : index
    %23 = arith.ceildivsi %20, %22 : index
    %24 = arith.ceildivsi %11, %c8 : index
    %25 = arith.muli %24, %c8 : index
    %26 = arith.divsi %c6528, %25 : index
    %27 = arith.divsi %26, %c16 : index
    %28 = arith.muli %27, %c16 : index
    %29 = arith.maxsi %c16, %28 : index
    %30 = arith.minsi %2, %29 : index
    %31 = arith.muli %22, %c8 : index
    %32 = arith.muli %2, %11 : index
    %33 = arith.muli %31, %32 : index
    %34 = arith.muli %2, %K : index
    %35 = arith.muli %34, %c4 : index
    %36 = arith.maxsi %c1, %35 : index
    %37 = arith.divsi %c100663296, %36 : index
    %38 = arith.minsi %3, %37 : index
    %39 = arith.maxsi %c1, %38 : index
    func.return %M, %N, %K, %2, %11, %15, %18, %3, %12, %19, %20, %23, %25, %30, %33, %39, %22 : index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index
  }
}

