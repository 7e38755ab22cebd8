// The arithmetic precision of matrix products (`--precision`, docs/precision.md):
// which operands a MatMul, Gemm or Conv multiplies, the one definition the
// reference interpreter, the emitter, the runtime and the cost model share.
//
//  - kFloat32: strict float32 products (CUDA-core FMA; cuBLASLt CUBLAS_COMPUTE_32F).
//  - kTf32: each float32 operand rounded to TF32 (8-bit exponent, 10-bit mantissa,
//    round to nearest with ties away from zero, as cvt.rna.tf32.f32), products on
//    TF32 tensor cores, float32 accumulation. Two TF32 significands multiply exactly
//    in float32, so a CUDA core given the rounded operands computes the same products.
//  - kFloat32x3: float32 accuracy on TF32 tensor cores: x = big + small with
//    big = tf32(x), small = tf32(x - big), and a*b ~ big_a big_b + big_a small_b +
//    small_a big_b (CUTLASS's "fast F32"; the dropped small*small term is below
//    2^-21 of the product).
//  - kBFloat16, kFloat16: mixed precision: activations and weights stored in the
//    reduced type except what the policy keeps float32 (ir/passes/reduced_precision.h);
//    GEMMs on bfloat16/float16 operands with float32 accumulation.
// Tensors stay float32 under the first three.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace stitch::ir {

enum class Precision { kFloat32, kTf32, kFloat32x3, kBFloat16, kFloat16 };

// "fp32", "tf32", "fp32x3", "bf16", "fp16": the `--precision` spelling.
std::string_view precision_name(Precision precision);
std::optional<Precision> precision_from_name(std::string_view name);
// The documented tolerance of each precision against float32 (docs/precision.md): the
// largest max |a - b| / max |float32 result| an output may show, which is also
// `stitchopt run`'s limit against the float32 reference: tf32 5e-3, bf16 5e-2, fp16
// 1e-2, fp32x3 and fp32 1e-5 (float32 rounding of a different summation order).
inline double precision_tolerance(Precision precision) {
  switch (precision) {
    case Precision::kTf32:
      return 5e-3;
    case Precision::kBFloat16:
      return 5e-2;
    case Precision::kFloat16:
      return 1e-2;
    default:
      return 1e-5;
  }
}
// True when float32 products run on TF32 tensor cores (tf32, fp32x3). Under bf16 and
// fp16 the converted GEMMs are bfloat16/float16 ones and the float32 GEMMs the policy
// keeps compute strict float32.
inline bool uses_tensor_cores(Precision precision) {
  return precision == Precision::kTf32 || precision == Precision::kFloat32x3;
}
// bf16 and fp16 store activations and weights in a reduced type
// (ir/passes/reduced_precision.h); the element type, or kFloat32 for the others.
inline bool reduces_storage(Precision precision) {
  return precision == Precision::kBFloat16 || precision == Precision::kFloat16;
}

// `x` rounded to TF32 (10 explicit mantissa bits, ties away from zero), as a float:
// cvt.rna.tf32.f32. Infinities and NaN pass through; a value whose rounding carries
// past the largest finite exponent becomes infinity, as on the GPU.
inline float round_to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

// The two TF32 parts of kFloat32x3: big = tf32(x), small = tf32(x - big).
struct Tf32Split {
  float big, small;
};
inline Tf32Split split_tf32(float x) {
  const float big = round_to_tf32(x);
  return {big, round_to_tf32(x - big)};
}

}  // namespace stitch::ir
