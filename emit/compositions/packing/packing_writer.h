// The packing composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/compositions/global/global_writer.h"
#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<PackingPlan> {
  static Result<std::string> stages(KernelWriter& w, const PackingPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    return packing_stages(w, written);
  }
  static std::string prologue(const KernelWriter& w, const PackingPlan& /*plan*/,
                              const std::vector<ir::ValueId>& /*written*/) {
    return CompositionWriter<GlobalPlan>::stage_prologue(w);
  }

  static Result<std::string> packing_stages(KernelWriter& w,
                                            const std::vector<ir::ValueId>& written);
};

}  // namespace stitch::emit
