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

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/group_category.h"
#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "fusion/candidates.h"
#include "fusion/partition.h"
#include "fusion/pattern.h"
#include "fusion/plan.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::fusion {

// Execution-based scoring (FusionStitching 4.3): FS times candidate kernels on the
// GPU; without one, driver/candidate_timer.h estimates them in the CUDA
// emulation. Timing every candidate is too slow (hundreds per model, seconds each),
// so the planner times lazily, the plan first (plan_fusion, "timing rounds"):
//  - a candidate wants a timing when its analytic score is least sure: a GEMM inside
//    (CUDA-core GEMM code), a composition the code generator makes global (grid
//    barriers, intermediates through the workspace: Pattern::shape, from
//    PlannerOptions::kernel_shape), or a
//    score within close_score_ratio of the best overlapping candidate's;
//  - each round solves the plan with the scores so far, and times every chosen
//    candidate that wants a timing and has none, with, for each of its nodes, the
//    best-scoring other candidate holding it (so the plan weighs the alternatives by
//    the same yardstick), and for a chosen trusted candidate, those alternatives
//    that want a timing; a timed candidate's score becomes the time
//    it saves (unfused - fused), and one that saves nothing is dropped
//    (PlannerResult::rejected, with its figures in the report);
//  - rounds repeat until the plan's chosen candidates are all timed or trusted (the
//    timer's budget bounds them: over it, it answers nullopt), at most
//    max_timing_rounds; untimed candidates keep their analytic score (composition
//    charges included), except those with a GEMM or the global composition that the
//    timer could not time or that were left untimed when the rounds ran out
//    (PlannerResult::untimable), which are dropped.
class CandidateTimer {
 public:
  virtual ~CandidateTimer() = default;
  virtual std::string_view method() const = 0;  // "emulated" (later: "measured")
  // Times candidates[which[i]] for each i: its timing, or nullopt when it cannot be
  // timed (no kernel, a node without one, over the timer's budget).
  virtual Result<std::vector<std::optional<CandidateTiming>>> time(
      const ir::Graph& graph, const std::vector<Pattern>& candidates,
      const std::vector<size_t>& which) = 0;
};

struct PlannerOptions {
  PartitionOptions partition;
  CandidateOptions candidates;
  cost_model::ScoreOptions score;
  PlanOptions plan;
  // The composition the code generator would give a candidate (emit::kernel_shape_
  // oracle; the driver sets it): each candidate's score is charged what that
  // composition costs beyond bytes and launches (cost_model::estimate_group with the
  // shape: grid barriers, the workspace round trip, CUDA-core GEMM issue time), and
  // one whose score is no longer positive is not planned. Empty: no charges.
  std::function<std::optional<cost_model::KernelShape>(const ir::Graph&,
                                                       const std::vector<ir::NodeId>&)>
      kernel_shape;
  CandidateTimer* timer = nullptr;  // null: the analytic score alone (`--score analytic`)
  double close_score_ratio = 0.1;   // "close": within 10% of the best overlapping score
  int max_timing_rounds = 32;       // each round times at least one candidate more
};

struct PlannedGroup {
  std::vector<ir::NodeId> nodes;  // ascending ids
  PatternSource source = PatternSource::kSubstitution;
  // kLibrary for an epilogue pattern (a cuBLASLt/cuDNN call), else the heaviest op
  // kind inside: kGemm, kReduction or kElementwise.
  artifact::GroupCategory category = artifact::GroupCategory::kElementwise;
  std::optional<artifact::LibraryEpilogue> epilogue;  // kLibrary only: the call and what it applies
  double score_us = 0;
  int64_t bytes_saved = 0;
  int64_t shared_memory_bytes = 0;
  double predicted_time_us = 0;  // estimate_group of the fused kernel (with its shape)
  double charge_us = 0;  // Pattern::charge_us: taken off score_us (predicted_time_us has it all)
  std::optional<CandidateTiming> timing;  // when a CandidateTimer timed it
};

// A candidate a CandidateTimer found no faster fused than its nodes unfused.
struct RejectedCandidate {
  std::vector<ir::NodeId> nodes;
  CandidateTiming timing;
  double analytic_score_us = 0;  // what the analytic model had scored it
};

// How a node outside every group runs.
enum class UnfusedKind {
  kLibraryCall,  // a GEMM of any size or a Conv: cuBLAS/cuDNN
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
  std::vector<PlannedGroup> groups;         // in order of their first node id
  std::vector<UnfusedNode> unfused;         // every live node outside the groups, by id
  std::vector<RejectedCandidate> rejected;  // timed and slower fused, by first node id
  int64_t charged_out = 0;                // candidates the composition charges left with score <= 0
  std::string score_method = "analytic";  // or the CandidateTimer's method()
  int64_t timed_candidates = 0;           // candidates a CandidateTimer timed
  int64_t timing_rounds = 0;
  int64_t untimable = 0;  // needed a timing and got none: not planned
  CandidateStatistics candidate_statistics;
  SolverStatistics solver_statistics;
  cost_model::PlanEstimate estimate;
  int64_t kernels_fused = 0;            // groups + unfused nodes that launch work
  int64_t memory_intensive_before = 0;  // launching nodes that are not library calls
  // Non-library groups + unfused launching nodes that are not library calls.
  int64_t memory_intensive_after = 0;
};

// kGemm when a node of `nodes` is a GEMM, else kReduction with a reduction, else
// kStencil with a stencil, else kElementwise: a (non-library) group's category.
artifact::GroupCategory group_category(const ir::Graph& graph,
                                       const std::vector<ir::NodeId>& nodes);

Result<PlannerResult> plan_fusion(const ir::Graph& graph, const cost_model::DeviceProfile& profile,
                                  const PlannerOptions& options);

std::string_view pattern_source_name(PatternSource source);  // "substitution", ...

}  // namespace stitch::fusion
