// The fusion planner: partition -> candidates -> GLPK plan -> verified plan.
#include "fusion/planner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "fusion/epilogue.h"
#include "ir/core/op_registry.h"

namespace stitch::fusion {
namespace {

bool contains_gemm(const ir::Graph& graph, const Pattern& pattern) {
  return std::any_of(pattern.nodes.begin(), pattern.nodes.end(), [&](ir::NodeId id) {
    return ir::op_kind(graph.node(id)) == ir::OpKind::kGemm;
  });
}

// Candidates whose analytic score is within `ratio` of the best analytic score among
// the candidates sharing one of their nodes (the plan's choice between them turns on
// a margin the model does not resolve). Library epilogues (cuBLASLt/cuDNN calls, not
// generated kernels) are never timed.
std::vector<char> close_scores(const ir::Graph& graph, const std::vector<Pattern>& candidates,
                               double ratio) {
  std::vector<double> best(static_cast<size_t>(graph.node_capacity()), 0.0);
  std::vector<int> sharing(static_cast<size_t>(graph.node_capacity()), 0);
  for (const Pattern& pattern : candidates) {
    if (pattern.source == PatternSource::kEpilogue) continue;
    for (ir::NodeId id : pattern.nodes) {
      best[static_cast<size_t>(id)] = std::max(best[static_cast<size_t>(id)], pattern.score_us);
      ++sharing[static_cast<size_t>(id)];
    }
  }
  std::vector<char> close(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Pattern& pattern = candidates[i];
    if (pattern.source == PatternSource::kEpilogue) continue;
    close[i] = static_cast<char>(
        std::any_of(pattern.nodes.begin(), pattern.nodes.end(), [&](ir::NodeId id) {
          return sharing[static_cast<size_t>(id)] > 1 &&
                 pattern.score_us >= (1.0 - ratio) * best[static_cast<size_t>(id)];
        }));
  }
  return close;
}

// The candidates to time for the chosen candidate `i` (each once, marked in `tried`):
// `i` when it wants a timing, with its alternatives (`best`: the two best candidates
// holding each node); a trusted `i` with those of its alternatives that want one (the
// composition charges may have ranked them too low or too high), and itself once an
// alternative has a timing: a timed saving and an analytic score are two yardsticks,
// and the plan must not prefer a candidate for being untimed (the attention test's
// softmax at graph phi, 41.7 us analytic, kept out an attention kernel the emulation
// put at 2.4x less time).
void ask_timings(const std::vector<Pattern>& candidates, size_t i, const std::vector<char>& wanted,
                 const std::vector<std::pair<int64_t, int64_t>>& best, std::vector<char>& tried,
                 std::vector<size_t>& which) {
  auto ask = [&](int64_t k) {
    if (k >= 0 && !tried[static_cast<size_t>(k)]) {
      tried[static_cast<size_t>(k)] = 1;
      which.push_back(static_cast<size_t>(k));
    }
  };
  if (wanted[i]) ask(static_cast<int64_t>(i));
  for (ir::NodeId id : candidates[i].nodes) {
    const auto& [first, second] = best[static_cast<size_t>(id)];
    const int64_t alternative = first == static_cast<int64_t>(i) ? second : first;
    if (alternative < 0) continue;
    if (wanted[i] || wanted[static_cast<size_t>(alternative)]) ask(alternative);
    if (candidates[static_cast<size_t>(alternative)].timing) ask(static_cast<int64_t>(i));
  }
}

// The timing rounds (planner.h, CandidateTimer): each round solves the plan with the
// scores so far and times the chosen candidates that want a timing, with the best
// other candidate holding each of their nodes; rejected candidates go to
// result.rejected and leave `candidates`.
Status apply_timings(const ir::Graph& graph, CandidateTimer& timer, const PlannerOptions& options,
                     std::vector<Pattern>& candidates, PlannerResult& result) {
  result.score_method = std::string(timer.method());
  // The global composition, as PlannerOptions::kernel_shape found it for the charges.
  std::vector<char> must(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    must[i] = static_cast<char>(candidates[i].shape && candidates[i].shape->global);
  }
  const std::vector<char> close = close_scores(graph, candidates, options.close_score_ratio);
  std::vector<char> wanted(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    Pattern& pattern = candidates[i];
    pattern.analytic_score_us = pattern.score_us;
    if (pattern.source == PatternSource::kEpilogue) continue;
    must[i] = static_cast<char>(must[i] || contains_gemm(graph, pattern));
    wanted[i] = static_cast<char>(must[i] || close[i]);
  }
  std::vector<char> dropped(candidates.size(), 0);
  std::vector<char> tried(candidates.size(), 0);
  bool converged = false;
  for (int round = 0; round < options.max_timing_rounds && !converged; ++round) {
    std::vector<size_t> live;  // index in `candidates` of each live candidate
    std::vector<Pattern> pool;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (dropped[i]) continue;
      live.push_back(i);
      pool.push_back(candidates[i]);
    }
    STITCH_ASSIGN_OR_RETURN(FusionPlan plan, solve_plan(graph, pool, options.plan));
    // Each node's two best live candidates (generated kernels), for the alternatives.
    std::vector<std::pair<int64_t, int64_t>> best(static_cast<size_t>(graph.node_capacity()),
                                                  {-1, -1});
    auto score = [&](int64_t i) { return candidates[static_cast<size_t>(i)].score_us; };
    for (size_t i : live) {
      if (candidates[i].source == PatternSource::kEpilogue) continue;
      const auto index = static_cast<int64_t>(i);
      for (ir::NodeId id : candidates[i].nodes) {
        auto& [first, second] = best[static_cast<size_t>(id)];
        if (first < 0 || score(index) > score(first)) {
          second = first;
          first = index;
        } else if (second < 0 || score(index) > score(second)) {
          second = index;
        }
      }
    }
    std::vector<size_t> which;
    for (int chosen : plan.chosen) {
      ask_timings(candidates, live[static_cast<size_t>(chosen)], wanted, best, tried, which);
    }
    if (which.empty()) {
      converged = true;
      break;
    }
    std::sort(which.begin(), which.end());
    ++result.timing_rounds;
    STITCH_ASSIGN_OR_RETURN(std::vector<std::optional<CandidateTiming>> timings,
                            timer.time(graph, candidates, which));
    STITCH_CHECK(timings.size() == which.size()) << "one timing per candidate timed";
    for (size_t k = 0; k < which.size(); ++k) {
      Pattern& pattern = candidates[which[k]];
      if (!timings[k]) {
        if (must[which[k]]) {  // cannot be trusted, and cannot be timed
          dropped[which[k]] = 1;
          ++result.untimable;
        }
        continue;
      }
      ++result.timed_candidates;
      pattern.timing = std::make_shared<const CandidateTiming>(*timings[k]);
      pattern.score_us = timings[k]->saved_us();
      if (pattern.score_us <= 0) {
        dropped[which[k]] = 1;
        result.rejected.push_back(
            RejectedCandidate{pattern.nodes, *timings[k], pattern.analytic_score_us});
      }
    }
  }
  std::vector<Pattern> kept;
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Out of rounds: what cannot be trusted untimed is not planned.
    if (!converged && !dropped[i] && must[i] && !candidates[i].timing) {
      dropped[i] = 1;
      ++result.untimable;
    }
    if (!dropped[i]) kept.push_back(std::move(candidates[i]));
  }
  candidates = std::move(kept);
  return Status::ok();
}

// Charges each candidate what its composition costs (PlannerOptions::kernel_shape)
// beyond what its stencils and reductions cost as kernels of their own: f(P) counts
// those kernels at bytes and launches, but each walks its own load chain too (a
// grouped conv's 144 taps per output), which fusing it with a ReLU does not add.
// Candidates left with nothing to gain are dropped.
void apply_charges(const ir::Graph& graph, const cost_model::DeviceProfile& profile,
                   const PlannerOptions& options, std::vector<Pattern>& candidates,
                   PlannerResult& result) {
  std::map<ir::NodeId, double> alone;  // a stencil's or reduction's charge as its own kernel
  auto charge_alone = [&](ir::NodeId id) {
    const ir::OpKind kind = ir::op_kind(graph.node(id));
    if (kind != ir::OpKind::kStencil && kind != ir::OpKind::kReduction) return 0.0;
    auto found = alone.find(id);
    if (found != alone.end()) return found->second;
    const std::vector<ir::NodeId> single = {id};
    std::optional<cost_model::KernelShape> shape = options.kernel_shape(graph, single);
    const double charge =
        shape ? cost_model::estimate_group(graph, single, profile, &*shape).time.charge_us() : 0.0;
    return alone[id] = charge;
  };
  // Kept candidates move down in place: a chain of 100k nodes has 1.6M candidates,
  // and a second vector of them was the compile's peak memory.
  size_t kept = 0;
  for (Pattern& pattern : candidates) {
    if (pattern.source != PatternSource::kEpilogue) {
      pattern.shape = options.kernel_shape(graph, pattern.nodes);
      if (pattern.shape) {
        pattern.charge_us =
            cost_model::estimate_group(graph, pattern.nodes, profile, &*pattern.shape)
                .time.charge_us();
        for (ir::NodeId id : pattern.nodes) pattern.charge_us -= charge_alone(id);
        pattern.score_us -= pattern.charge_us;
        if (pattern.score_us <= 0) {
          ++result.charged_out;
          continue;
        }
      }
    }
    if (&candidates[kept] != &pattern) candidates[kept] = std::move(pattern);
    ++kept;
  }
  candidates.resize(kept);
}

// Why `id`, outside every group, is alone when a timed candidate held it.
std::string rejected_reason(const ir::Graph& graph, const RejectedCandidate& rejected) {
  char text[256];
  std::snprintf(text, sizeof text,
                "its candidate pattern of %zu nodes (from %s) was estimated slower fused "
                "(%.2f us, %s composition, %s-bound) than unfused (%.2f us) by the %s profile",
                rejected.nodes.size(), graph.node(rejected.nodes.front()).display_name().c_str(),
                rejected.timing.fused_us, rejected.timing.composition.c_str(),
                rejected.timing.bound.c_str(), rejected.timing.unfused_us,
                rejected.timing.method.c_str());
  return text;
}

}  // namespace

artifact::GroupCategory group_category(const ir::Graph& graph,
                                       const std::vector<ir::NodeId>& nodes) {
  bool has_reduction = false;
  bool has_stencil = false;
  for (ir::NodeId id : nodes) {
    ir::OpKind kind = ir::op_kind(graph.node(id));
    if (kind == ir::OpKind::kGemm) return artifact::GroupCategory::kGemm;
    if (kind == ir::OpKind::kReduction) has_reduction = true;
    if (kind == ir::OpKind::kStencil) has_stencil = true;
  }
  if (has_reduction) return artifact::GroupCategory::kReduction;
  return has_stencil ? artifact::GroupCategory::kStencil : artifact::GroupCategory::kElementwise;
}

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
    case PatternSource::kAttention:
      return "attention";
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
  if (options.kernel_shape) apply_charges(graph, profile, options, candidates, result);
  if (options.timer != nullptr) {
    STITCH_RETURN_IF_ERROR(apply_timings(graph, *options.timer, options, candidates, result));
  }
  STITCH_ASSIGN_OR_RETURN(FusionPlan plan, solve_plan(graph, candidates, options.plan));
  STITCH_RETURN_IF_ERROR(verify_plan(graph, plan));
  result.solver_statistics = plan.statistics;

  std::vector<int32_t> group_of(static_cast<size_t>(graph.node_capacity()), -1);
  std::vector<char> in_some_candidate(static_cast<size_t>(graph.node_capacity()), 0);
  for (const Pattern& pattern : candidates) {
    for (ir::NodeId id : pattern.nodes) in_some_candidate[static_cast<size_t>(id)] = 1;
  }
  // The first rejected candidate (by first node) holding each node, for its reason.
  std::sort(
      result.rejected.begin(), result.rejected.end(),
      [](const RejectedCandidate& a, const RejectedCandidate& b) { return a.nodes < b.nodes; });
  std::vector<int32_t> rejected_of(static_cast<size_t>(graph.node_capacity()), -1);
  for (size_t i = 0; i < result.rejected.size(); ++i) {
    for (ir::NodeId id : result.rejected[i].nodes) {
      if (rejected_of[static_cast<size_t>(id)] < 0) {
        rejected_of[static_cast<size_t>(id)] = static_cast<int32_t>(i);
      }
    }
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
      group.category = artifact::GroupCategory::kLibrary;
      group.epilogue = pattern.epilogue;
    } else {
      group.category = group_category(graph, pattern.nodes);
    }
    group.score_us = pattern.score_us;
    group.bytes_saved = pattern.bytes_saved;
    group.shared_memory_bytes = pattern.shared_memory_bytes;
    group.predicted_time_us = cost_model::estimate_group(graph, pattern.nodes, profile,
                                                         pattern.shape ? &*pattern.shape : nullptr)
                                  .time.total_us;
    group.charge_us = pattern.charge_us;
    if (pattern.timing) group.timing = *pattern.timing;
    for (ir::NodeId id : pattern.nodes) {
      group_of[static_cast<size_t>(id)] = static_cast<int32_t>(result.groups.size());
    }
    result.groups.push_back(std::move(group));
  }

  result.kernels_fused = static_cast<int64_t>(result.groups.size());
  for (const PlannedGroup& group : result.groups) {
    if (group.category != artifact::GroupCategory::kLibrary) ++result.memory_intensive_after;
  }
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    bool launches = cost_model::launches_work(node);
    // A GEMM the plan leaves alone runs in cuBLAS whatever its size: one launch either
    // way, and cuBLAS's tensor-core tiles beat a one-thread-per-output kernel. Only a
    // fused group computes a small GEMM in generated code.
    bool library = is_library_call(node, partition) || ir::op_kind(node) == ir::OpKind::kGemm;
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
      } else if (int32_t rejected = rejected_of[static_cast<size_t>(id)]; rejected >= 0) {
        unfused.reason = rejected_reason(graph, result.rejected[static_cast<size_t>(rejected)]);
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
