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
// Tensors stay float32 in all three; bfloat16 and float16 storage are issue 39's next
// step (docs/precision.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace stitch::ir {

enum class Precision { kFloat32, kTf32, kFloat32x3 };

// "fp32", "tf32", "fp32x3": the `--precision` spelling.
std::string_view precision_name(Precision precision);
std::optional<Precision> precision_from_name(std::string_view name);
// The documented tolerance of each precision against float32 products
// (docs/precision.md): the largest max |a - b| / max |float32 result| an output may
// show (and `stitchopt run`'s element-wise limit against the float32 reference):
// tf32 5e-3, fp32x3 1e-5, fp32 1e-5 (float32 rounding of a different summation order).
inline double precision_tolerance(Precision precision) {
  return precision == Precision::kTf32 ? 5e-3 : 1e-5;
}
// True when the precision's products run on tensor cores.
inline bool uses_tensor_cores(Precision precision) { return precision != Precision::kFloat32; }

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
