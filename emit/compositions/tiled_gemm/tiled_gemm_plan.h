// The tiled MatMul composition (emit/schedule.h, 2b.; FusionStitching Fig. 1, 5(d)): a
// group whose only heavy op is one fine-grained (batched) MatMul. Each block owns
// tiles of [tile_m, tile_n] output elements of one batch; it loads the [tile_m, k]
// rows of A and the [k, tile_n] columns of B into the shared arena (a reduction
// feeding A or B is computed while loading), then each thread accumulates its outputs
// from shared memory and applies the same-index epilogue.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"

namespace stitch::emit {

struct TiledGemmPlan {
  ir::NodeId gemm = ir::kNoId;
  ir::GemmShape shape;  // of `gemm`: batch (and its dims from each operand), m, n, k
  int64_t tile_m = 1, tile_n = 1;
  int64_t a_offset = 0, b_offset = 0;  // bytes into the arena
  // The products on tensor cores (tiled_gemm_precision), kFloat32 for CUDA cores. Other
  // than kFloat32, each warp computes 16 x 8 pieces of the tile with mma.sync: m16n8k8
  // TF32 for a float32 MatMul under kTf32 (three per k step for kFloat32x3: small x big
  // + big x small + big x big), m16n8k16 for a float16 (kFloat16) or bfloat16
  // (kBFloat16) one; tile_m is then a multiple of 16, tile_n of 8, and the tiles hold
  // `padded_k` (k to a multiple of the instruction's k, zeros past k) in rows of
  // a_stride and b_stride floats, strides that spread each fragment load over the banks.
  ir::Precision precision = ir::Precision::kFloat32;
  int64_t padded_k = 0, a_stride = 0, b_stride = 0;
  bool tensor_cores() const { return precision != ir::Precision::kFloat32; }
  bool half_precision() const {
    return precision == ir::Precision::kFloat16 || precision == ir::Precision::kBFloat16;
  }
  std::string_view name() const { return "block"; }
};

// The tile layout of the tensor-core path for [tile_m, k] x [k, tile_n] tiles with the
// instruction's `k_step` (8 for TF32, 16 for float16/bfloat16): padded_k, a_stride,
// b_stride (TiledGemmPlan).
struct TensorCoreTiles {
  int64_t padded_k, a_stride, b_stride;
};
TensorCoreTiles tensor_core_tiles(int64_t k, int64_t tile_n, int64_t k_step = 8);

// The products of the tiled MatMul writing `dtype` under --precision `precision`:
// float32 ones at tf32/fp32x3 on TF32 tensor cores; float16/bfloat16 ones under bf16 and
// fp16 (the rewrite made them) on half-precision tensor cores; otherwise kFloat32 (CUDA
// cores, as before --precision existed).
ir::Precision tiled_gemm_precision(ir::DType dtype, ir::Precision precision);

// One k step of m16n8k8 TF32 from a lane's fragment elements `float a_in[4], b_in[2]`
// (PTX's layouts) into the four floats `acc` names: rounded by stitch_tf32 and, with
// `split` (fp32x3), three mma with the small parts first; each line after `indent`.
// Shared by the tiled MatMul, the stages' warp per piece (KernelWriter::warp_mma_code)
// and the attention composition's TF32 variant (both of its products).
std::string tf32_mma_step(bool split, const std::string& indent, const std::string& acc = "acc");

// The composition's interface (emit/compositions/composition.h), defined in tiled_gemm_writer.cc.
template <>
struct Composition<TiledGemmPlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const TiledGemmPlan& plan);
  static std::string detail(const ir::Graph&, const GroupSchedule&, const TiledGemmPlan& plan);
  static ir::NodeId tiled_gemm(const TiledGemmPlan& plan) { return plan.gemm; }
  static Result<std::string> stages(KernelWriter& w, const TiledGemmPlan& plan,
                                    const Written& written);
  static std::string prologue(const KernelWriter& w, const TiledGemmPlan& plan, const Written&);
  // The tensor-core path's loop over 16 x 8 pieces of a tile (stages calls it).
  static Result<std::string> tensor_core_pieces(KernelWriter& w, const TiledGemmPlan& plan,
                                                const Written& written);
};

}  // namespace stitch::emit
