// RUN: afc-opt %s -p 'set-target{chip=Ascend910B1},lower-to-buffer' -t ascendc | filecheck %s

// Softmax reduces each row with ReduceMax/ReduceSum into a scratch TBuf and reads the
// result on the scalar pipe: every hand-over between the vector pipe (V) and the scalar
// pipe (S) that no queue orders gets a SetFlag/WaitFlag pair.

// CHECK-LABEL: __aicore__ inline void Compute(
// CHECK:         for (int64_t [[R:r[0-9]*]] = 0; [[R]] < nrows; ++[[R]]) {
// CHECK-NEXT:      event_t [[E1:eventIdSToV[0-9]*]] = static_cast<event_t>(pipe.FetchEventID(HardEvent::S_V));
// CHECK-NEXT:      SetFlag<HardEvent::S_V>([[E1]]);
// CHECK-NEXT:      WaitFlag<HardEvent::S_V>([[E1]]);
// CHECK-NEXT:      ReduceMax(red_dst, {{.*}}[[[R]] * tile_stride], red_tmp, ncols, false);
// CHECK-NEXT:      event_t [[E2:eventIdVToS[0-9]*]] = static_cast<event_t>(pipe.FetchEventID(HardEvent::V_S));
// CHECK-NEXT:      SetFlag<HardEvent::V_S>([[E2]]);
// CHECK-NEXT:      WaitFlag<HardEvent::V_S>([[E2]]);
// CHECK-NEXT:      float [[V:.*]] = red_dst.GetValue(0);
// CHECK-NEXT:      {{.*}}.SetValue([[R]], [[V]]);
// CHECK-NEXT:    }
// CHECK:         Exp(
// CHECK:         ReduceSum(red_dst, {{.*}}, red_tmp, ncols);
// CHECK:         LocalTensor<float> y = q_out0.AllocTensor<float>();

// The tmp and result buffers of the reductions are TBufs in VECCALC.
// CHECK:       TBuf<QuePosition::VECCALC> red_dstBuf;
// CHECK:       TBuf<QuePosition::VECCALC> red_tmpBuf;

func.func @main(%x: tensor<?x40xf32>) -> tensor<?x40xf32> {
  %r = graph.fusion_group (%xx = %x : tensor<?x40xf32>) -> tensor<?x40xf32> {
    %y = graph.softmax %xx {axis = -1} : tensor<?x40xf32>
    graph.yield %y : tensor<?x40xf32>
  }
  func.return %r : tensor<?x40xf32>
}
