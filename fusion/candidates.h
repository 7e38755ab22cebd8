// Candidate fusion patterns: substitution (FusionStitching Alg. 1), exploratory
// (FusionStitching Alg. 2) and packing (Apollo's parallelism stitching), each convex
// and scored by the cost model, for the ILP planner (fusion/plan.h).
//
// 1. Substitution. For each step s of the growing partition set (s = 0: kPartition
//    nodes; 1: + kBatchedGemm; 2: + kColumnReduction; 3: + kScalarReduction) walk
//    the topological order; the non-partition nodes between two consecutive
//    partition nodes form a segment. A topological order interleaves independent
//    branches, so each connected component (undirected, over data edges) of a
//    segment is one pattern. Constant nodes launch nothing and join no pattern (they
//    would glue independent branches together); the fused kernel reads them.
// 2. Exploratory. Seeds: every reduction, batched GEMM and stencil, and the elementwise /
//    broadcast / injective nodes whose bytes moved are at least the median over
//    those nodes ("large input/output tensors"); a seed reads at most max_operands
//    inputs. From a seed, a depth-first recursion adds one non-partition neighbour
//    at a time (consumers first, then producers, each by id), keeping only convex
//    results, up to max_pattern_size nodes and max_patterns_per_seed new node sets
//    per seed. Visited node sets are memoized across seeds (each set is explored
//    once). An infeasible pattern is not expanded further (more nodes do not make a
//    kernel feasible again). A neighbour with Casts between float types beside it
//    (the edges --precision bf16/fp16 converts, ir/passes/reduced_precision.h) is
//    first added with those Casts, outside the per-seed count, then alone: a
//    conversion fuses for free, and the search reaches what it reaches on float32.
// 3. Packing. Units are the patterns found so far and single launching
//    non-partition nodes, each "small": its largest tensor has fewer elements than
//    half a wave (sm_count * max_threads_per_sm / 2), so two of them share one
//    launch without starving the GPU. Candidate pairs (bounded, linear in the graph):
//    up to kSiblingsPerValue units reading the same value from outside (Apollo's
//    sibling relation: the shared input is read once), and single nodes at the same
//    longest-path depth, adjacent by id. A disjoint pair with no path between them
//    is merged when Apollo's gain sum(cost) - max(cost) > 0 (cost_model::
//    estimate_group); its score comes from score_pattern like any other pattern.
//    Three or more siblings of one value are also offered together: each unit in
//    order, taken when disjoint from and independent of those taken (an attention
//    layer's Q, K and V projections: a pair leaves the third its own launch).
//
// Convexity: P is convex iff no node outside P is reachable from P and reaches P.
// It suffices to look at the successors s of P's nodes that are outside P: P is
// convex iff no such s reaches a node of P. Reachability is a bitset per node over
// a window of the next W topological positions (a path only goes forward in the
// order), with W = min(N, 8 * reachability_memory_bytes / N) bits: with the default
// 256 MiB exact (full reachability) up to ~46k nodes, and a window of ~21k positions
// at 100k nodes. A pattern whose topological span exceeds W cannot be proven convex
// and is rejected as non-convex; a packed pair further apart counts as dependent.
//
// Example: A -> B (Conv) -> C and A -> C with A, C elementwise. Substitution step 0
// has segments {A} and {C} (B between them): no pattern of two nodes. Exploration
// from A tries {A, C}: B, a successor of A outside {A, C}, reaches C, so {A, C} is
// not convex and is not generated (FusionStitching Fig. 3).
//
// 4. Epilogue (options.epilogue): each library call with the bias / residual add /
//    ReLU chain after it that cuBLASLt or cuDNN applies in the call
//    (fusion/epilogue.h). Linear in the graph; not bounded by the time limit.
//
// 5. Attention (options.attention): each attention core (ir/core/attention.h), the
//    fused attention schedule's unit, alone and with its prologue: the producers of
//    Q, K, V and of the score chain's other operands (masks, scales) that are index
//    functions (View, elementwise, broadcast, injective; no GEMM, reduction or
//    partition op) and whose outputs only the growing set reads, added until none is
//    left, so a QKV bias add, head Split, Reshape and Transpose are computed while
//    the tiles are loaded. Each of those also with the head merge after the core: a
//    Transpose of O (and views after it), each the only reader of the value before
//    it, which the kernel writes through. Linear in the graph; not bounded by the
//    time limit.
//
// Postconditions: every returned pattern has >= 2 nodes, at least 2 of which launch
// work, is convex, has no kPartition node (except the one library call of an
// epilogue pattern), is feasible with score_us > 0; no two have the same nodes;
// sorted by (first node id, size, nodes). Same input, same
// output: nothing depends on hash order, and the time limit only truncates.
#pragma once

#include <cstdint>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "fusion/partition.h"
#include "fusion/pattern.h"
#include "ir/core/graph.h"

namespace stitch::fusion {

struct CandidateOptions {
  // All five false: no candidate at all, every op its own kernel or library call
  // (`stitchopt --unfused`, the baseline `stitchopt bench` compares fused runs with).
  bool substitution = true;
  bool exploratory = true;
  bool packing = true;
  bool epilogue = true;   // library calls with their bias / residual / ReLU epilogue
  bool attention = true;  // attention cores (5. below); false: no pattern holds a whole core
  int max_operands = 10;  // seeds reading more inputs are skipped
  int max_pattern_size = 64;
  int max_patterns_per_seed = 16;
  double time_limit_s = 5.0;  // exploratory and packing stop here; substitution always runs
  // Memory for the windowed reachability bitsets (see "Convexity" above); the
  // window is min(N, 8 * bytes / N) topological positions, at least 64.
  int64_t reachability_memory_bytes = int64_t{256} << 20;
};

struct CandidateStatistics {
  int64_t substitution = 0, exploratory = 0, packing = 0, epilogue = 0, attention = 0,
          rejected_infeasible = 0, rejected_non_convex = 0;
  bool hit_time_limit = false;
  double seconds = 0;
};

// Precondition: `partition` = partition_graph(graph, ...); the graph is acyclic.
std::vector<Pattern> generate_candidates(const ir::Graph& graph, const Partition& partition,
                                         const cost_model::DeviceProfile& profile,
                                         const cost_model::ScoreOptions& score_options,
                                         const CandidateOptions& options,
                                         CandidateStatistics& statistics);

}  // namespace stitch::fusion
