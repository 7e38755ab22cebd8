// The rows composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<RowPlan> {
  static Result<std::string> stages(KernelWriter& w, const RowPlan& plan,
                                    const std::vector<ir::ValueId>& written) {
    return plan.split() ? split_row_stages(w, written) : row_stages(w, written);
  }
  static std::string prologue(const KernelWriter& w, const RowPlan& plan,
                              const std::vector<ir::ValueId>& written) {
    return row_prologue(w, plan, written);
  }

  static Result<std::string> row_code(KernelWriter& w, ir::ValueId id, const std::string& indent);
  static std::string moved_row(const KernelWriter& w, ir::ValueId id);
  static Result<std::string> split_row_stages(KernelWriter& w,
                                              const std::vector<ir::ValueId>& written);
  static Result<std::string> row_stages(KernelWriter& w, const std::vector<ir::ValueId>& written);
  static std::string row_prologue(const KernelWriter& w, const RowPlan& plan,
                                  const std::vector<ir::ValueId>& written);
};

}  // namespace stitch::emit
