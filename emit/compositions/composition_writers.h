// Every composition's writer (see KernelWriter's CompositionWriter in
// emit/kernel_writer.h): the declarations and stages of its kernel, defined in the
// composition's folder (<folder>/<name>_writer.cc), dispatched to by
// KernelWriter::write_body with std::visit. A new composition declares its writer here.
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

// stencil/stencil_writer.cc
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

// global/global_writer.cc
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

// thread/thread_writer.cc
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

// packing/packing_writer.cc
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

// rows/row_writer.cc
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

// tiled_gemm/tiled_gemm_writer.cc
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

// transpose/transpose_writer.cc
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

// attention/attention_writer.cc
template <>
struct CompositionWriter<AttentionPlan> {
  static Result<std::string> stages(KernelWriter& w, const AttentionPlan& /*plan*/,
                                    const std::vector<ir::ValueId>& written) {
    return attention_code(w, written);
  }
  static std::string prologue(const KernelWriter& w, const AttentionPlan& plan,
                              const std::vector<ir::ValueId>& /*written*/) {
    return attention_prologue(w, plan);
  }
  // What both variants share: the operands' values at a tile load's index, the score
  // chain's accessor, and the text from the kernel's comment to the tile loop's base
  // offsets.
  struct AttentionParts {
    std::string q_value, k_value, v_value;  // operand reads at a tile load's index
    std::string logits;                     // the score chain's accessor
    std::string scores, output;             // the registers of S and O
    std::string loop_header;                // comment, -inf, the tile loop's opening
  };

  static Result<AttentionParts> attention_parts(KernelWriter& w, const std::string& how);
  static Result<std::string> attention_writes(KernelWriter& w,
                                              const std::vector<ir::ValueId>& written,
                                              const std::string& indent);
  static Result<std::string> attention_code(KernelWriter& w,
                                            const std::vector<ir::ValueId>& written);
  static Result<std::string> attention_mma_code(KernelWriter& w,
                                                const std::vector<ir::ValueId>& written);
  static std::string attention_prologue(const KernelWriter& w, const AttentionPlan& plan);
};

}  // namespace stitch::emit
