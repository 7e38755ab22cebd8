// A candidate fusion pattern: a convex set of graph nodes that could run as one
// kernel, with the score the cost model gave it (FusionStitching 4.1-4.3), or a
// library call with the elementwise ops its epilogue absorbs (fusion/epilogue.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifact/library_epilogue.h"
#include "cost_model/cost_model.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

enum class PatternSource {
  kSubstitution,  // Algorithm 1: everything between adjacent partition ops
  kExploratory,   // Algorithm 2: producer/consumer expansion from a seed
  kPacking,       // independent groups in one launch (Apollo's parallelism stitching)
  kEpilogue,      // a cuBLASLt/cuDNN call with its bias/residual/ReLU epilogue (fusion/epilogue.h)
  kAttention,     // an attention core and the index functions feeding it (ir/core/attention.h)
};

// Execution-based scoring (FusionStitching 4.3, fusion/planner.h's CandidateTimer): a
// candidate's estimated time run as one kernel against its nodes run as the plan runs
// nodes left alone (single-op kernels; GEMMs and Convs as library calls; views free).
struct CandidateTiming {
  std::string method;       // "emulated": the emulated profile (docs/perf-model.md)
  double fused_us = 0;      // the candidate's kernel, launch included
  double unfused_us = 0;    // its launching nodes, one launch each
  std::string composition;  // the fused kernel's: thread, warp, block, global
  std::string bound;        // what limits the fused kernel (cost_model::bound_name)
  double saved_us() const { return unfused_us - fused_us; }
};

struct Pattern {
  std::vector<ir::NodeId> nodes;  // sorted ascending, no duplicates
  PatternSource source = PatternSource::kSubstitution;
  int substitution_step = -1;  // which partition set produced it (substitution only)
  double score_us = 0.0;       // f(P) in microseconds; only patterns with score > 0 are planned
  int64_t bytes_saved = 0;     // V_saved of the score
  int64_t shared_memory_bytes = 0;  // shared memory per block the score assumed
  // Epilogue patterns only: the library and what its call applies after the product.
  std::optional<artifact::LibraryEpilogue> epilogue;
  // The code generator's composition of the pattern (PlannerOptions::kernel_shape),
  // when known; score_us has had its charge (charge_us: what the composition costs
  // beyond bytes and launches, less its stencils' and reductions' own charges as
  // kernels alone; fusion/planner.cc apply_charges) taken off.
  std::optional<cost_model::KernelShape> shape;
  double charge_us = 0;
  // Set when a CandidateTimer timed the pattern: score_us is then timing->saved_us().
  // Out of line: a timer times at most a few thousand candidates, while a chain of
  // 100k nodes has 1.6M, and an inline timing was 120 of a Pattern's 304 bytes.
  std::shared_ptr<const CandidateTiming> timing;
  double analytic_score_us = 0.0;  // f(P) of the cost model, kept when timed
};

}  // namespace stitch::fusion
