// Attention in miniature, as textual IR, for the tests of what the planner and the
// code generator make of it (tests/fusion/planner_timing_test.cc,
// tests/emit/kernel_shape_test.cc): two small batched GEMMs (fusible: 4 x 16x16x8
// multiply-adds each) around a softmax over the rows of QK^T.
#pragma once

namespace stitch::test_samples {

inline constexpr const char* kMiniAttention = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "attention" (%q: f32[4,16,8], %k: f32[4,8,16], %v: f32[4,16,8]) {
  %axes: i64[1] = dense<i64[1]>[2]
  %s: f32[4,16,16] = MatMul(%q, %k) {name="qk"}
  %m: f32[4,16,1] = ReduceMax(%s) {name="max", axes=[2], keepdims=1}
  %d: f32[4,16,16] = Sub(%s, %m) {name="sub"}
  %e: f32[4,16,16] = Exp(%d) {name="exp"}
  %z: f32[4,16,1] = ReduceSum(%e, %axes) {name="sum", keepdims=1}
  %p: f32[4,16,16] = Div(%e, %z) {name="div"}
  %o: f32[4,16,8] = MatMul(%p, %v) {name="pv"}
  return %o
}
)";

}  // namespace stitch::test_samples
