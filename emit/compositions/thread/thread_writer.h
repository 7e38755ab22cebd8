// The thread composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/compositions/global/global_writer.h"
#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<ThreadPlan> {
  static Result<std::string> stages(KernelWriter& w, const ThreadPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    // The thread composition is the global one's single stage.
    return CompositionWriter<GlobalPlan>::global_stages(w, written);
  }
  static std::string prologue(const KernelWriter& w, const ThreadPlan& /*plan*/,
                              const std::vector<ir::ValueId>& /*written*/) {
    return CompositionWriter<GlobalPlan>::stage_prologue(w);
  }

  static Result<std::string> vector_stages(KernelWriter& w, const std::vector<ir::ValueId>& written,
                                           const std::string& indent);
};

}  // namespace stitch::emit
