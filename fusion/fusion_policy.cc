// What stitchopt chooses to fuse (see fusion_policy.h).
#include "fusion/fusion_policy.h"

#include <algorithm>
#include <utility>

#include "ir/core/window.h"

namespace stitch::fusion {

std::optional<std::string> stencil_refusal(const ir::Graph& graph, const ir::Node& node) {
  return ir::stencil_refusal(graph, node, kStencilMaxChannelsPerGroup);
}

std::optional<std::string> attention_refusal(const ir::AttentionCore& core) {
  if (std::max(core.d, core.dv) > kMaxAttentionHeadDim)
    return "a head dim over " + std::to_string(kMaxAttentionHeadDim);
  return std::nullopt;
}

std::optional<ir::AttentionCore> match_fused_attention(const ir::Graph& graph,
                                                       ir::NodeId output_gemm,
                                                       std::string* why_not) {
  std::optional<ir::AttentionCore> core = ir::match_attention_core(graph, output_gemm, why_not);
  if (!core) return std::nullopt;
  if (std::optional<std::string> refusal = attention_refusal(*core)) {
    if (why_not != nullptr) *why_not = std::move(*refusal);
    return std::nullopt;
  }
  return core;
}

std::vector<ir::AttentionCore> fused_attention_cores(const ir::Graph& graph) {
  std::vector<ir::AttentionCore> cores = ir::find_attention_cores(graph);
  cores.erase(std::remove_if(cores.begin(), cores.end(),
                             [](const ir::AttentionCore& core) {
                               return attention_refusal(core).has_value();
                             }),
              cores.end());
  return cores;
}

cost_model::ScoreOptions with_fusion_policy(cost_model::ScoreOptions options) {
  options.max_stencil_channels_per_group = kStencilMaxChannelsPerGroup;
  options.max_attention_head_dim = kMaxAttentionHeadDim;
  return options;
}

}  // namespace stitch::fusion
