// The simplification pipeline: which passes run, in which order, to a fixed point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"
#include "ir/passes/pass.h"
#include "ir/shapes/shape_inference.h"

namespace stitch::ir {

struct PipelineOptions {
  // --passes: run exactly these, in this order; empty runs the default pipeline.
  std::vector<std::string> passes;
  std::vector<std::string> disabled;  // --disable-pass (repeatable)
  // --dump-ir-after PASS: after every run of PASS that changed the graph, the textual
  // IR goes to <dump_directory>/<NN>-<PASS>.ir (NN counts the dumps).
  std::string dump_ir_after;
  std::string dump_directory;
  bool verify_each = false;  // --verify-each: ir::verify after every pass run
  int max_iterations = 16;   // rounds of the whole sequence before giving up
  int64_t max_folded_constant_bytes = 1 << 20;
  std::string model_path;  // for messages
};

struct PassStatistics {
  std::string name;
  int64_t runs = 0;
  int64_t changed_runs = 0;
  int64_t nodes_removed = 0;
  int64_t nodes_added = 0;
  double seconds = 0.0;
};

struct SimplifyStatistics {
  std::vector<PassStatistics> passes;  // in pipeline order
  int iterations = 0;
  bool reached_fixed_point = false;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  // Node outputs whose type became fully static when shapes were re-inferred between
  // rounds (net of those that became unknown, which should not happen).
  int64_t types_refined = 0;
  // After the last round: node outputs whose type is not fully static, and the nodes
  // where unknown types start (an output not static though every input is: a
  // data-dependent op such as NonZero, or an op without a shape rule), in
  // topological order, at most kMaxUnknownTypeRoots of them.
  int64_t unknown_types = 0;
  std::vector<UnknownTypeRoot> unknown_type_roots;
  // Constant folding (partial evaluation): nodes evaluated and replaced by their
  // values over the whole pipeline, and those values' bytes.
  int64_t folded_nodes = 0;
  int64_t folded_bytes = 0;
  int64_t max_folded_constant_bytes = 0;  // the size rule's limit
  // Nodes left after the last round although every input is constant, with why
  // (ir::why_not_folded), in topological order, at most kMaxKeptConstants.
  int64_t kept_constant_nodes = 0;
  struct KeptConstant {
    std::string node;
    std::string op_type;
    std::string reason;
  };
  std::vector<KeptConstant> kept_constants;
};

inline constexpr size_t kMaxKeptConstants = 100;

inline constexpr size_t kMaxUnknownTypeRoots = 100;

// Every pass, in default pipeline order.
std::vector<Pass> list_passes();

// The default pipeline's pass names, in order (see pipeline.cc for why this order).
std::vector<std::string> default_pipeline();

// "a,b , c" -> {"a", "b", "c"}.
std::vector<std::string> split_pass_list(std::string_view list);

// Runs the selected passes in order, repeating the sequence until no pass changes
// the graph (or max_iterations rounds, which the statistics report). Compacts the
// graph's ids after each round, then re-infers every type (ir/shapes), so that what
// a round folded makes the types downstream static for the next. Errors: an unknown
// pass name (with "did you mean"), a pass failure, a verifier failure under
// verify_each (naming the pass), a re-inferred type contradicting the model's.
Result<SimplifyStatistics> run_passes(Model& model, const PipelineOptions& options);

}  // namespace stitch::ir
