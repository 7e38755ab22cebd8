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

namespace stitch::emit {

struct TiledGemmPlan {
  ir::NodeId gemm = ir::kNoId;
  ir::GemmShape shape;  // of `gemm`: batch (and its dims from each operand), m, n, k
  int64_t tile_m = 1, tile_n = 1;
  int64_t a_offset = 0, b_offset = 0;  // bytes into the arena
  std::string_view name() const { return "block"; }
};

// The composition's interface (emit/compositions/composition.h), defined in tiled_gemm_writer.cc.
template <>
struct Composition<TiledGemmPlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const TiledGemmPlan& plan);
  static std::string detail(const ir::Graph&, const GroupSchedule&, const TiledGemmPlan& plan);
  static ir::NodeId tiled_gemm(const TiledGemmPlan& plan) { return plan.gemm; }
  static Result<std::string> stages(KernelWriter& w, const TiledGemmPlan& plan,
                                    const Written& written);
  static std::string prologue(const KernelWriter& w, const TiledGemmPlan& plan, const Written&);
};

}  // namespace stitch::emit
