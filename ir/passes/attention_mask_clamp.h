// --precision bf16 | fp16 (docs/precision.md, "Attention masks"): the additive masks of
// attention cores clamped into the reduced type's range, so a core masked with
// float32's lowest value still converts whole and fuses.
//
// Hugging Face exports mask attention scores with torch.finfo(float32).min
// (-3.4028e38): BERT adds (1 - attention_mask) * min to the scores, GPT-2 selects min
// with a Where. That value is beyond bfloat16's largest (it rounds to -inf) and far
// beyond float16's, so the range rules (ir/passes/reduced_precision.h) keep the mask,
// the masked scores and the softmax's shift float32, and the core runs unfused in two
// types. The mask only has to make exp(score + mask - max) zero, which any value below
// about -104 does in float32 registers; so an out-of-range operand of the core's score
// chain is read through Max(mask, -L) instead, L = range_limit(reduced) / 2 (bfloat16
// 4.2e37, float16 8188), when:
//   - it is an operand of an Add or a Where of the score chain (ir/core/attention.h)
//     from outside the core,
//   - it is float32, and only its negative values leave the range: its max |x| on the
//     calibration inputs exceeds range_limit but its largest value does not (a node
//     output), or every element beyond the limit is negative (a constant, clamped at
//     compile time into a copy).
// Row by row the softmax is unchanged wherever a key is unmasked (the masked weights
// were and stay exactly 0). A row with every key masked differs only under fp16: with
// -8188 the scores still order its weights, where float32's lowest made them uniform
// (under bf16, s - 4.2e37 rounds to -4.2e37 for any score, uniform as before). Such a
// row is an input that is all padding.
//
// Example: BERT's extended mask M = Mul(Sub(1, Cast(mask)), -3.4e38) feeds every
// layer's Add(scores, M): one Max(M, -4.2e37) is added under bf16 and every layer's Add
// reads it; the cores then convert whole (bert's bf16 plan: 18 kernels -> 11).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

struct MaskClampOptions {
  DType reduced = DType::kBFloat16;  // kBFloat16 or kFloat16
  // Per value, on the calibration inputs: max |x| and the largest value (both measured by
  // the caller; a value absent from either is left alone).
  std::map<ValueId, double> max_abs;
  std::map<ValueId, double> max_value;
};

struct ClampedMask {
  std::string value;      // the mask as the model names it
  std::string clamped;    // the value the cores read instead
  double lowest = 0;      // its most negative value on the calibration inputs (or exact)
  double clamped_to = 0;  // -L
  int64_t readers = 0;    // core ops rewired to read the clamped value
};

// Clamps every such mask of `model` (simplified, static shapes); the clamps in node
// order of their first reader. Errors: none expected.
Result<std::vector<ClampedMask>> clamp_attention_masks(Model& model,
                                                       const MaskClampOptions& options);

}  // namespace stitch::ir
