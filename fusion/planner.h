// The fusion planner: partition -> candidate patterns -> scores -> GLPK plan ->
// verified plan, with what the report needs about every decision (FusionStitching
// 4.1-4.3; DESIGN.md, fusion/).
//
// Every live node ends up in exactly one place: a fused group (a chosen pattern),
// or alone, with the reason it stayed alone (a partition op's reason, "no candidate
// pattern contains it", or "its candidate patterns lost to overlapping ones"). Nodes
// that launch no work (View ops, Constant) stay alone without counting as kernels.
// A chosen epilogue pattern (fusion/epilogue.h) is a group of category kLibrary:
// one launch, a cuBLASLt/cuDNN call, not a memory-intensive kernel.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "fusion/candidates.h"
#include "fusion/group_category.h"
#include "fusion/partition.h"
#include "fusion/pattern.h"
#include "fusion/plan.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::fusion {

struct PlannerOptions {
  PartitionOptions partition;
  CandidateOptions candidates;
  cost_model::ScoreOptions score;
  PlanOptions plan;
};

struct PlannedGroup {
  std::vector<ir::NodeId> nodes;  // ascending ids
  PatternSource source = PatternSource::kSubstitution;
  // kLibrary for an epilogue pattern (a cuBLASLt/cuDNN call), else the heaviest op
  // kind inside: kGemm, kReduction or kElementwise.
  GroupCategory category = GroupCategory::kElementwise;
  std::optional<LibraryEpilogue> epilogue;  // kLibrary only: the call and what it applies
  double score_us = 0;
  int64_t bytes_saved = 0;
  int64_t shared_memory_bytes = 0;
  double predicted_time_us = 0;  // estimate_group of the fused kernel
};

// How a node outside every group runs.
enum class UnfusedKind {
  kLibraryCall,  // a large GEMM or a Conv: cuBLAS/cuDNN
  kKernel,       // a single-op kernel
  kNoKernel,     // launches no work: a view of its input or a constant
};
// "library call", "kernel", "no kernel": the report's text.
std::string_view to_string(UnfusedKind kind);

struct UnfusedNode {
  ir::NodeId node = ir::kNoId;
  UnfusedKind kind = UnfusedKind::kKernel;
  std::string reason;
};

struct PlannerResult {
  std::vector<PlannedGroup> groups;  // in order of their first node id
  std::vector<UnfusedNode> unfused;  // every live node outside the groups, by id
  CandidateStatistics candidate_statistics;
  SolverStatistics solver_statistics;
  cost_model::PlanEstimate estimate;
  int64_t kernels_fused = 0;            // groups + unfused nodes that launch work
  int64_t memory_intensive_before = 0;  // launching nodes that are not library calls
  // Non-library groups + unfused launching nodes that are not library calls.
  int64_t memory_intensive_after = 0;
};

Result<PlannerResult> plan_fusion(const ir::Graph& graph, const cost_model::DeviceProfile& profile,
                                  const PlannerOptions& options);

std::string_view pattern_source_name(PatternSource source);  // "substitution", ...

}  // namespace stitch::fusion
