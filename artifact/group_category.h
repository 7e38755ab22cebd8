// GroupCategory: what kind of launch a fused group is, as the plan decides it
// (fusion::group_category) and as the rewritten model's "category" attribute spells
// it. A record of the artifact: the runtime (runtime_stub/program.cc) reads it back
// from a fused node (artifact/fused_node_attributes.h) without the planner.
//   kLibrary     an epilogue pattern: one cuBLASLt/cuDNN call (fusion/epilogue.h)
//   kGemm        a generated kernel holding a fine-grained GEMM
//   kReduction   a generated kernel holding a reduction and no GEMM
//   kStencil     a generated kernel holding a stencil (a depthwise or grouped Conv, a
//                pool: ir/core/window.h) and neither of the above
//   kElementwise a generated kernel of none of these
#pragma once

#include <optional>
#include <string_view>

namespace stitch::artifact {

enum class GroupCategory { kElementwise, kReduction, kGemm, kLibrary, kStencil };

// "elementwise", "reduction", "gemm", "library", "stencil": the report's and the
// attribute's text.
constexpr std::string_view to_string(GroupCategory category) {
  switch (category) {
    case GroupCategory::kElementwise:
      return "elementwise";
    case GroupCategory::kReduction:
      return "reduction";
    case GroupCategory::kGemm:
      return "gemm";
    case GroupCategory::kLibrary:
      return "library";
    case GroupCategory::kStencil:
      return "stencil";
  }
  return "unknown";
}

// The category to_string spells `text`, or nullopt.
constexpr std::optional<GroupCategory> parse_group_category(std::string_view text) {
  for (GroupCategory category :
       {GroupCategory::kElementwise, GroupCategory::kReduction, GroupCategory::kGemm,
        GroupCategory::kLibrary, GroupCategory::kStencil}) {
    if (to_string(category) == text) return category;
  }
  return std::nullopt;
}

}  // namespace stitch::artifact
