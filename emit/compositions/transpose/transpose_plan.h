// The transpose composition (emit/schedule.h, 1c.): one Transpose that moves its
// input's last axis, as the batched swap [batch, rows, cols] -> [batch, cols, rows] of
// its collapsed dims; a block per 32 x 32 tile, read along the input's rows and
// written along the output's rows through a shared tile (XLA's tiled transpose,
// CUDA's transpose sample).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"

namespace stitch::emit {

struct TransposePlan {
  int64_t batch = 1, rows = 0, cols = 0;
  std::string_view name() const { return "transpose"; }
};

// The composition's interface (emit/compositions/composition.h), defined in transpose_writer.cc.
template <>
struct Composition<TransposePlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const TransposePlan& plan);
  static std::string detail(const ir::Graph&, const GroupSchedule&, const TransposePlan& plan);
  // The stages declare their tile and indices: no prologue.
  static std::string prologue(const KernelWriter&, const TransposePlan&, const Written&) {
    return "";
  }
  static Result<std::string> stages(KernelWriter& w, const TransposePlan& plan, const Written&);
};

}  // namespace stitch::emit
