// The simplification pipeline.
#include "ir/passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "ir/core/analysis.h"
#include "ir/core/edit_distance.h"
#include "ir/core/verifier.h"
#include "ir/passes/algebraic_rewrites.h"
#include "ir/passes/constant_folding.h"
#include "ir/passes/cse.h"
#include "ir/passes/dce.h"
#include "ir/passes/decompose_compound_ops.h"
#include "ir/passes/fold_conv_batchnorm.h"
#include "ir/passes/noop_elimination.h"
#include "ir/passes/shape_folding.h"
#include "ir/shapes/shape_inference.h"
#include "ir/text/text.h"
#include "support/strings.h"

namespace stitch::ir {
namespace {

// Every pass, in default pipeline order: name, function and one-line summary.
const std::vector<Pass>& all_passes() {
  static const std::vector<Pass> passes = {
      {"shape-folding",
       "Replaces Shape/Size/Gather/Unsqueeze/Concat/Reshape/ConstantOfShape/Range chains "
       "by constants once shapes are static",
       fold_shapes},
      {"constant-folding",
       "Evaluates nodes whose inputs are all constants with the reference interpreter "
       "and replaces them by initializers, up to a size limit",
       fold_constants},
      {"noop-elimination",
       "Removes Identity, inference Dropout, same-type Cast, same-shape Reshape/Expand, "
       "cancelling Transposes, whole-tensor Slice, zero Pad",
       eliminate_noops},
      {"algebraic",
       "x*1, x+0, x/1, x-0, -(-x), Reshape chains, Transpose chains merged, broadcast "
       "constant Mul/Add chains folded where exact",
       rewrite_algebraic},
      {"fold-conv-batchnorm",
       "Folds an inference BatchNormalization with constant statistics into the weights "
       "and bias of the Conv that feeds it",
       fold_conv_batchnorm},
      {"cse", "Merges nodes with the same op, attributes and inputs",
       eliminate_common_subexpressions},
      {"dce", "Removes nodes and initializers that no graph output depends on",
       eliminate_dead_code},
      {"decompose",
       "Opens LayerNormalization, Softmax, LogSoftmax, Gelu, BatchNormalization, "
       "Instance/GroupNormalization, HardSigmoid, HardSwish, Softplus, variadic "
       "Sum/Mean, Gemm and GlobalAveragePool into primitive ops",
       decompose_compound_ops},
  };
  return passes;
}

Status unknown_pass(std::string_view name, std::string_view flag) {
  std::vector<std::string> names;
  std::string all;
  for (const Pass& info : all_passes()) {
    names.emplace_back(info.name);
    all += (all.empty() ? "" : ", ") + std::string(info.name);
  }
  std::string message = std::string(flag) + ": no pass named \"" + std::string(name) + "\"";
  if (std::optional<std::string> best = closest_match(name, names)) {
    return Status::invalid_input(message + "; did you mean \"" + *best + "\"?");
  }
  return Status::invalid_input(message + "; the passes are " + all + " (see --list-passes)");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::vector<Pass> list_passes() { return all_passes(); }

// Why this order (each round runs the whole sequence; rounds repeat to a fixed point):
//  1. shape-folding first: exporters' Shape -> Gather -> Concat -> Reshape chains are
//     the bulk of the noise, and once shapes are static they are constants; this is
//     what lets Reshape/Expand become recognizable no-ops below.
//  2. constant-folding next, on what shape folding left constant (Constant nodes,
//     casts and arithmetic of constants), under a size limit so weights are not
//     duplicated.
//  3. noop-elimination and algebraic rewrites then see constant operands (x*1 needs
//     the 1 to be an initializer) and static shapes; fold-conv-batchnorm needs the
//     statistics constant too, and must run before decompose opens the
//     BatchNormalization into Mul/Add (which would leave a kernel behind).
//  4. cse after the rewrites, which make more nodes identical (two Reshapes of the
//     same value to the same constant shape).
//  5. dce sweeps what every pass above disconnected.
//  6. decompose last: opening LayerNormalization/Softmax/... creates many primitive
//     nodes; doing it after the cleanup keeps the earlier passes' work small, and the
//     next round cleans up what decomposition exposes (e.g. CSE of the two
//     ReduceMeans a LayerNorm and a later op may share, Mul by a constant 1 scale).
std::vector<std::string> default_pipeline() {
  return {"shape-folding",
          "constant-folding",
          "noop-elimination",
          "algebraic",
          "fold-conv-batchnorm",
          "cse",
          "dce",
          "decompose"};
}

std::vector<std::string> split_pass_list(std::string_view list) {
  return support::split(list, ',', " \t");
}

namespace {

// Shape-folding + constant-folding iterations within one round (each resolves at
// least one more level of shape computation; real models need a few dozen).
constexpr int kMaxPartialEvaluationIterations = 256;

}  // namespace

Result<SimplifyStatistics> run_passes(Model& model, const PipelineOptions& options) {
  auto find_pass = [&](std::string_view name) -> const Pass* {
    for (const Pass& pass : all_passes()) {
      if (pass.name == name) return &pass;
    }
    return nullptr;
  };
  for (const std::string& name : options.disabled) {
    if (find_pass(name) == nullptr) return unknown_pass(name, "--disable-pass");
  }
  if (!options.dump_ir_after.empty() && find_pass(options.dump_ir_after) == nullptr) {
    return unknown_pass(options.dump_ir_after, "--dump-ir-after");
  }
  std::vector<std::string> names = options.passes.empty() ? default_pipeline() : options.passes;
  std::vector<const Pass*> selected;
  for (const std::string& name : names) {
    const Pass* pass = find_pass(name);
    if (pass == nullptr) return unknown_pass(name, "--passes");
    if (std::find(options.disabled.begin(), options.disabled.end(), name) !=
        options.disabled.end()) {
      continue;
    }
    selected.push_back(pass);
  }

  Graph& graph = model.graph;
  PassContext context;
  context.default_opset = model.default_opset();
  context.model_path = options.model_path;
  context.max_folded_constant_bytes = options.max_folded_constant_bytes;

  SimplifyStatistics statistics;
  statistics.nodes_before = graph.num_nodes();
  for (const Pass* pass : selected)
    statistics.passes.push_back(PassStatistics{std::string(pass->name)});
  int dump_count = 0;
  std::vector<char> live_before;
  // One pass run: its statistics, verification and dump. Returns whether it changed
  // the graph.
  auto run_pass = [&](size_t index) -> Result<bool> {
    const Pass& pass = *selected[index];
    PassStatistics& stats = statistics.passes[index];
    // Node ids are stable within a round (compaction happens between rounds), so
    // nodes removed are the live ones that died and nodes added the new ids.
    int32_t capacity = graph.node_capacity();
    live_before.assign(static_cast<size_t>(capacity), 0);
    for (NodeId id : graph.node_ids()) live_before[static_cast<size_t>(id)] = 1;
    const int64_t nodes_before = graph.num_nodes();
    auto start = std::chrono::steady_clock::now();
    Result<bool> changed = pass.run(graph, context);
    stats.seconds += seconds_since(start);
    ++stats.runs;
    if (!changed.is_ok()) {
      return changed.status().with_prefix("pass " + std::string(pass.name) + ": ");
    }
    if (!changed.value()) {
      // The analyses stay valid only if "no change" is true of the nodes.
      STITCH_CHECK(graph.node_capacity() == capacity && graph.num_nodes() == nodes_before)
          << "pass " << pass.name << " changed the nodes but reported no change";
      return false;
    }
    context.analyses.invalidate();
    ++stats.changed_runs;
    for (NodeId id = 0; id < graph.node_capacity(); ++id) {
      bool was_live = id < capacity && live_before[static_cast<size_t>(id)];
      bool is_live = !graph.node(id).dead;
      if (was_live && !is_live) ++stats.nodes_removed;
      if (!was_live && is_live) ++stats.nodes_added;
    }
    if (options.verify_each) {
      Status verified = verify(model);
      if (!verified.is_ok()) {
        return Status::internal("the IR is invalid after pass " + std::string(pass.name) + ": " +
                                verified.message());
      }
    }
    if (pass.name == options.dump_ir_after) {
      char prefix[16];
      std::snprintf(prefix, sizeof(prefix), "%02d-", ++dump_count);
      std::filesystem::path path =
          std::filesystem::path(options.dump_directory) / (prefix + std::string(pass.name) + ".ir");
      std::ofstream out(path, std::ios::binary);
      out << print_model(model);
      if (!out) return Status::invalid_input("cannot write " + path.string());
    }
    return true;
  };
  // Types refine as shape computations fold: a Reshape whose target became a constant
  // gets a static output type, which shape folding needs to fold the Shape ops that
  // read it. Inference merges with the types the model declared.
  auto reinfer = [&](const std::string& when) -> Status {
    const int64_t unknown_before = count_unknown_types(graph);
    ShapeInferenceOptions inference;
    inference.model_path = options.model_path;
    STITCH_RETURN_IF_ERROR(infer_shapes(graph, context.default_opset, inference)
                               .with_prefix("shape inference " + when + ": "));
    statistics.types_refined += unknown_before - count_unknown_types(graph);
    return Status::ok();
  };
  // Partial evaluation to a fixed point: shape-folding then constant-folding, with the
  // types re-inferred in between, until neither folds anything (a Swin transformer's
  // blocks each compute their window shapes from the previous block's output: one
  // block per iteration). Only when both passes run, shape folding first.
  size_t shape_folding = selected.size();
  size_t constant_folding = selected.size();
  for (size_t index = 0; index < selected.size(); ++index) {
    if (selected[index]->name == "shape-folding") shape_folding = index;
    if (selected[index]->name == "constant-folding") constant_folding = index;
  }
  const bool evaluate_to_fixed_point =
      shape_folding < constant_folding && constant_folding < selected.size();

  for (int round = 0; round < options.max_iterations; ++round) {
    ++statistics.iterations;
    bool changed_in_round = false;
    bool folded = false;
    for (size_t index = 0; index < selected.size(); ++index) {
      STITCH_ASSIGN_OR_RETURN(bool changed, run_pass(index));
      changed_in_round = changed_in_round || changed;
      if (index == shape_folding || index == constant_folding) folded = folded || changed;
      if (!evaluate_to_fixed_point || index != constant_folding) continue;
      for (int inner = 0; folded && inner < kMaxPartialEvaluationIterations; ++inner) {
        STITCH_RETURN_IF_ERROR(
            reinfer("while folding shapes in round " + std::to_string(round + 1)));
        STITCH_ASSIGN_OR_RETURN(bool shapes, run_pass(shape_folding));
        STITCH_ASSIGN_OR_RETURN(bool constants, run_pass(constant_folding));
        folded = shapes || constants;
      }
    }
    graph.compact();
    context.analyses.invalidate();  // compaction renumbers the ids
    if (!changed_in_round) {
      statistics.reached_fixed_point = true;
      break;
    }
    // What the other passes changed (a decomposition, a removed no-op) may refine
    // types too.
    STITCH_RETURN_IF_ERROR(reinfer("after simplification round " + std::to_string(round + 1)));
  }
  statistics.nodes_after = graph.num_nodes();
  statistics.unknown_types = count_unknown_types(graph);
  statistics.folded_nodes = context.folded_nodes;
  statistics.folded_bytes = context.folded_bytes;
  statistics.max_folded_constant_bytes = context.max_folded_constant_bytes;
  if (statistics.unknown_types > 0) {
    STITCH_ASSIGN_OR_RETURN(statistics.unknown_type_roots,
                            unknown_type_roots(graph, kMaxUnknownTypeRoots));
  }
  if (constant_folding == selected.size()) return statistics;  // nothing was tried
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (std::optional<std::string> why = why_not_folded(graph, node, context)) {
      ++statistics.kept_constant_nodes;
      if (statistics.kept_constants.size() < kMaxKeptConstants) {
        statistics.kept_constants.push_back({node.name, node.op_type, std::move(*why)});
      }
    }
  }
  return statistics;
}

}  // namespace stitch::ir
