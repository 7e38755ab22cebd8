// What stitchopt chooses to fuse beyond what the graph allows: the limits on stencils
// and attention cores, each with the reason for its value. ir/ reports the facts (a
// grouped Conv's input channels per group, an attention core's head dims); fusion/
// decides here, and hands the same limits to the cost model through ScoreOptions
// (cost_model/ sits below fusion/ and may not include it).
//
// Example: a grouped Conv with weight f32[32,32,3,3] (32 input channels per group) is
// refused by stencil_refusal ("... (a stencil takes at most 16): cuDNN library call");
// an attention core with queries f32[8,64,512] (d = 512) is not returned by
// match_fused_attention and its GEMMs keep the GEMM size limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "ir/core/attention.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

// Input channels per group above which a grouped Conv stays a cuDNN call. A generated
// stencil's thread walks kernel positions x channels per group taps for each output,
// so a wide group's arithmetic intensity approaches a dense conv's, which is a GEMM's
// and stays a cuDNN call (ir/core/window.h); depthwise (1), ResNeXt and RegNet groups
// (up to 16) are memory-bound windows worth fusing (docs/codegen.md, "Stencils").
inline constexpr int64_t kStencilMaxChannelsPerGroup = 16;

// Largest head dim (d and dv) of an attention core fused whole: the attention
// composition's warp holds an output row's dv columns in its 32 lanes' registers,
// dv / 32 floats a lane (8 at 256), beside the running softmax state of the row.
inline constexpr int64_t kMaxAttentionHeadDim = 256;

// ir::stencil_refusal with kStencilMaxChannelsPerGroup.
std::optional<std::string> stencil_refusal(const ir::Graph& graph, const ir::Node& node);

// Why stitchopt does not fuse `core` whole (a head dim over kMaxAttentionHeadDim), or
// nullopt when it does.
std::optional<std::string> attention_refusal(const ir::AttentionCore& core);

// ir::match_attention_core, refused (with why in *why_not when given) when
// attention_refusal says why.
std::optional<ir::AttentionCore> match_fused_attention(const ir::Graph& graph,
                                                       ir::NodeId output_gemm,
                                                       std::string* why_not = nullptr);

// The cores of ir::find_attention_cores that attention_refusal takes, in its order.
std::vector<ir::AttentionCore> fused_attention_cores(const ir::Graph& graph);

// `options` with this policy's limits, which the pattern scorer applies to stencils
// and to the attention cores whose GEMMs it exempts from the GEMM size limit; the
// candidates' scorer is built with it, whatever options the caller passed.
cost_model::ScoreOptions with_fusion_policy(cost_model::ScoreOptions options);

}  // namespace stitch::fusion
