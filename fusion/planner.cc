// The fusion planner: partition -> candidates -> GLPK plan -> verified plan.
#include "fusion/planner.h"

#include <algorithm>

#include "fusion/epilogue.h"
#include "ir/core/op_registry.h"

namespace stitch::fusion {
namespace {

GroupCategory category_of(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
  bool has_reduction = false;
  for (ir::NodeId id : nodes) {
    ir::OpKind kind = ir::op_kind(graph.node(id));
    if (kind == ir::OpKind::kGemm) return GroupCategory::kGemm;
    if (kind == ir::OpKind::kReduction) has_reduction = true;
  }
  return has_reduction ? GroupCategory::kReduction : GroupCategory::kElementwise;
}

}  // namespace

std::string_view pattern_source_name(PatternSource source) {
  switch (source) {
    case PatternSource::kSubstitution:
      return "substitution";
    case PatternSource::kExploratory:
      return "exploratory";
    case PatternSource::kPacking:
      return "packing";
    case PatternSource::kEpilogue:
      return "epilogue";
  }
  return "unknown";
}

std::string_view to_string(UnfusedKind kind) {
  switch (kind) {
    case UnfusedKind::kLibraryCall:
      return "library call";
    case UnfusedKind::kKernel:
      return "kernel";
    case UnfusedKind::kNoKernel:
      return "no kernel";
  }
  return "unknown";
}

Result<PlannerResult> plan_fusion(const ir::Graph& graph, const cost_model::DeviceProfile& profile,
                                  const PlannerOptions& options) {
  PlannerResult result;
  Partition partition = partition_graph(graph, options.partition);
  std::vector<Pattern> candidates = generate_candidates(
      graph, partition, profile, options.score, options.candidates, result.candidate_statistics);
  STITCH_ASSIGN_OR_RETURN(FusionPlan plan, solve_plan(graph, candidates, options.plan));
  STITCH_RETURN_IF_ERROR(verify_plan(graph, plan));
  result.solver_statistics = plan.statistics;

  std::vector<int32_t> group_of(static_cast<size_t>(graph.node_capacity()), -1);
  std::vector<char> in_some_candidate(static_cast<size_t>(graph.node_capacity()), 0);
  for (const Pattern& pattern : candidates) {
    for (ir::NodeId id : pattern.nodes) in_some_candidate[static_cast<size_t>(id)] = 1;
  }
  std::vector<int> order(plan.chosen.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return plan.groups[static_cast<size_t>(a)].front() <
           plan.groups[static_cast<size_t>(b)].front();
  });
  for (int index : order) {
    const Pattern& pattern =
        candidates[static_cast<size_t>(plan.chosen[static_cast<size_t>(index)])];
    PlannedGroup group;
    group.nodes = pattern.nodes;
    group.source = pattern.source;
    if (pattern.source == PatternSource::kEpilogue) {
      group.category = GroupCategory::kLibrary;
      group.epilogue = pattern.epilogue;
    } else {
      group.category = category_of(graph, pattern.nodes);
    }
    group.score_us = pattern.score_us;
    group.bytes_saved = pattern.bytes_saved;
    group.shared_memory_bytes = pattern.shared_memory_bytes;
    group.predicted_time_us = cost_model::estimate_group(graph, pattern.nodes, profile).time_us;
    for (ir::NodeId id : pattern.nodes) {
      group_of[static_cast<size_t>(id)] = static_cast<int32_t>(result.groups.size());
    }
    result.groups.push_back(std::move(group));
  }

  result.kernels_fused = static_cast<int64_t>(result.groups.size());
  for (const PlannedGroup& group : result.groups) {
    if (group.category != GroupCategory::kLibrary) ++result.memory_intensive_after;
  }
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    bool launches = cost_model::launches_work(node);
    bool library = is_library_call(node, partition);
    if (launches && !library) ++result.memory_intensive_before;
    if (group_of[static_cast<size_t>(id)] >= 0) continue;
    UnfusedNode unfused;
    unfused.node = id;
    if (!launches) {
      unfused.kind = UnfusedKind::kNoKernel;
      unfused.reason = "launches no work (a view of its input or a constant)";
    } else {
      ++result.kernels_fused;
      unfused.kind = library ? UnfusedKind::kLibraryCall : UnfusedKind::kKernel;
      if (!library) ++result.memory_intensive_after;
      if (partition.role(id) == NodeRole::kPartition) {
        unfused.reason = partition.decision(id).reason();
      } else if (in_some_candidate[static_cast<size_t>(id)]) {
        unfused.reason = "its candidate patterns lost to overlapping ones in the plan";
      } else {
        unfused.reason = "no candidate pattern with a positive score contains it";
      }
    }
    result.unfused.push_back(std::move(unfused));
  }
  result.estimate = cost_model::estimate_plan(graph, plan.groups, profile);
  return result;
}

}  // namespace stitch::fusion
