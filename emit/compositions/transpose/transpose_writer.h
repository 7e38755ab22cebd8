// The transpose composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<TransposePlan> {
  static Result<std::string> stages(KernelWriter& w, const TransposePlan& /*plan*/,
                                    const std::vector<ir::ValueId>& /*written*/) {
    return transpose_code(w);
  }
  static std::string prologue(const KernelWriter& /*w*/, const TransposePlan& /*plan*/,
                              const std::vector<ir::ValueId>& /*written*/) {
    return "";  // transpose_code declares its tile and indices
  }

  static Result<std::string> transpose_code(KernelWriter& w);
};

}  // namespace stitch::emit
