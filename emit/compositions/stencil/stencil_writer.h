// The stencil composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<StencilPlan> {
  static Result<std::string> stages(KernelWriter& w, const StencilPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    return stencil_tile_code(w, written);
  }
  static std::string prologue(const KernelWriter& w, const StencilPlan& plan,
                              const std::vector<ir::ValueId>& /*written*/) {
    return stencil_tile_prologue(w, plan.tile);
  }

  static Result<std::string> stencil_tile_code(KernelWriter& w,
                                               const std::vector<ir::ValueId>& written);
  static std::string stencil_tile_prologue(const KernelWriter& w, const StencilTile& tile);
};

}  // namespace stitch::emit
