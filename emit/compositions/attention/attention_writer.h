// The attention composition's writer: its kernel's declarations and stages (see
// emit/kernel_writer.h, CompositionWriter).
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_writer.h"

namespace stitch::emit {

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
