// Folds an inference BatchNormalization into the Conv that feeds it.
//
// Objective: Conv -> BatchNormalization is the most common pair in CNNs, and the
// BatchNormalization is a memory-bound pass over the whole activation. With
// constant weights and statistics it is an affine map per output channel, which
// the Conv's weights and bias can absorb, so the pair becomes one Conv (one library
// call) and the BatchNormalization's kernel disappears. onnxsim, onnxslim and
// onnx/optimizer's fuse_bn_into_conv do the same; opening the BatchNormalization
// into Mul/Add (decompose) would still leave a kernel behind.
//
// Preconditions: a verified graph with static shapes.
//
// Algorithm, for every BatchNormalization node in id order:
//  1. It must be in inference form: one output (or unused extra outputs),
//     training_mode 0, spatial 1 (opset < 9), epsilon any.
//  2. Its input X must come from a default-domain Conv whose output has no other
//     reader and is not a graph output.
//  3. The Conv's weight W [M, C/group, k...] and bias (when present), and the
//     BatchNormalization's scale, B, mean and var [M], must be constant (constant_data)
//     of one float dtype (f32, f64 or f16), and W must have no other reader (else
//     folding would duplicate the weights).
//  4. With a[m] = scale[m] / sqrt(var[m] + epsilon), computed in double:
//       W'[m, ...] = W[m, ...] * a[m]
//       b'[m]      = (bias[m] - mean[m]) * a[m] + B[m]      (bias = 0 when absent)
//     W' and b' become new initializers "<conv name>/folded_weight" and
//     "/folded_bias"; the Conv reads them and produces the BatchNormalization's
//     output value (so a graph output keeps its name); the BatchNormalization, the
//     Conv's old output and the initializers nobody reads any more are removed.
//     The Conv inherits the BatchNormalization's origin.
//
// Numerics: W' is rounded once to the dtype, so outputs differ from the unfused
// pair by a few ulps of the accumulation (well inside the pipeline's 1e-5).
//
// Before:
//   %c: f32[1,8,16,16] = Conv(%x, %w, %b) {name="conv"}
//   %y: f32[1,8,16,16] = BatchNormalization(%c, %s, %bb, %m, %v) {name="bn", epsilon=1e-05}
// After:
//   %y: f32[1,8,16,16] = Conv(%x, %"conv/folded_weight", %"conv/folded_bias") {name="conv",
//   origin=["conv", "bn"]}
//
// Must not fire: statistics that are graph inputs (overridable) or computed; a Conv
// output read by another node too; a weight shared with another Conv; training mode.
#pragma once

#include "ir/passes/pass.h"

namespace stitch::ir {

Result<bool> fold_conv_batchnorm(Graph& graph, PassContext& context);

}  // namespace stitch::ir
