// The global composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/compositions/stencil/stencil_writer.h"
#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<GlobalPlan> {
  static Result<std::string> stages(KernelWriter& w, const GlobalPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    return global_stages(w, written);
  }
  static std::string prologue(const KernelWriter& w, const GlobalPlan& plan,
                              const std::vector<ir::ValueId>& /*written*/) {
    return stage_prologue(w) +
           (plan.stencil ? CompositionWriter<StencilPlan>::stencil_tile_prologue(w, *plan.stencil)
                         : "");
  }

  static Result<std::string> global_stages(KernelWriter& w,
                                           const std::vector<ir::ValueId>& written);
  static std::string stage_prologue(const KernelWriter& w);
};

}  // namespace stitch::emit
