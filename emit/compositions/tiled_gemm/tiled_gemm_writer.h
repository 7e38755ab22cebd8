// The tiled gemm composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

template <>
struct CompositionWriter<TiledGemmPlan> {
  static Result<std::string> stages(KernelWriter& w, const TiledGemmPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    return tiled_gemm_code(w, written);
  }
  static std::string prologue(const KernelWriter& w, const TiledGemmPlan& plan,
                              const std::vector<ir::ValueId>& /*written*/) {
    return tiled_gemm_prologue(w, plan);
  }

  static Result<std::string> tiled_gemm_code(KernelWriter& w,
                                             const std::vector<ir::ValueId>& written);
  static std::string tiled_gemm_prologue(const KernelWriter& w, const TiledGemmPlan& plan);
};

}  // namespace stitch::emit
