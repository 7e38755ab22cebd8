// Constant folding.
#include "ir/passes/constant_folding.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/reference/interpreter.h"

namespace stitch::ir {
namespace {

bool constant_nodes_to_initializers(Graph& graph) {
  bool changed = false;
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (node.op_type != "Constant" || !node.domain.empty() || node.outputs.size() != 1 ||
        node.outputs[0] == kNoId) {
      continue;
    }
    std::optional<Tensor> tensor = constant_node_value(node);
    if (!tensor) continue;
    ValueId output = node.outputs[0];
    graph.remove_node(id);
    graph.make_initializer(output, std::move(*tensor));
    changed = true;
  }
  return changed;
}

// Bytes of the input initializers only `node` reads (they die with the fold).
int64_t freed_bytes(const Graph& graph, const Node& node) {
  int64_t freed = 0;
  std::vector<ValueId> seen;
  for (ValueId input : node.inputs) {
    if (input == kNoId || std::find(seen.begin(), seen.end(), input) != seen.end()) continue;
    seen.push_back(input);
    const Value& value = graph.value(input);
    bool only_this_node = std::all_of(value.users.begin(), value.users.end(),
                                      [&](const Use& use) { return use.node == node.id; });
    if (only_this_node && !value.is_graph_output) {
      freed += static_cast<int64_t>(value.constant->bytes.size());
    }
  }
  return freed;
}

// Bytes of the outputs by their recorded types; nullopt when a type is not static.
std::optional<int64_t> static_output_bytes(const Graph& graph, const Node& node) {
  int64_t total = 0;
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    int64_t bytes = graph.value(output).type.num_bytes();
    if (bytes < 0) return std::nullopt;
    total += bytes;
  }
  return total;
}

// Folding one node whose inputs are all constant data: its values, or why it stays.
struct FoldAttempt {
  std::vector<Tensor> results;
  std::string kept_because;  // empty when folded
};

// Nullopt when an input is not constant data (the node is not a folding candidate).
std::optional<FoldAttempt> try_fold(const Graph& graph, const Node& node,
                                    const PassContext& context) {
  std::vector<const Tensor*> inputs(node.inputs.size(), nullptr);
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    if (node.inputs[slot] == kNoId) continue;
    inputs[slot] = constant_data(graph, node.inputs[slot]);
    if (inputs[slot] == nullptr) return std::nullopt;
  }
  FoldAttempt attempt;
  auto kept = [&](std::string why) {
    attempt.kept_because = std::move(why);
    return attempt;
  };
  if (!node.domain.empty()) return kept("op of domain " + node.domain);
  if (is_random_op(node.op_type)) return kept("random op: its value changes from run to run");
  if (node.op_type == "Constant") return kept("a Constant without dense numeric data");
  bool has_subgraph = !node.implicit_inputs.empty();
  for (const Attribute& attribute : node.attributes) {
    has_subgraph = has_subgraph || attribute.kind == AttributeKind::kGraph ||
                   attribute.kind == AttributeKind::kGraphs;
  }
  if (has_subgraph) return kept("has a subgraph");
  if (!has_reference_evaluation(node.domain, node.op_type)) {
    return kept("no reference evaluation");
  }
  const int64_t freed = freed_bytes(graph, node);
  auto over_limit = [&](int64_t bytes) -> std::optional<std::string> {
    if (bytes <= context.max_folded_constant_bytes || bytes <= freed) return std::nullopt;
    return "its " + std::to_string(bytes) + "-byte result is over the " +
           std::to_string(context.max_folded_constant_bytes) + "-byte limit and frees only " +
           std::to_string(freed) + " bytes of inputs";
  };
  if (std::optional<int64_t> predicted = static_output_bytes(graph, node)) {
    if (std::optional<std::string> why = over_limit(*predicted)) return kept(std::move(*why));
  }
  Result<std::vector<Tensor>> results =
      evaluate_node(node, node.opset_or(context.default_opset), inputs);
  if (!results.is_ok()) {
    return kept("the reference interpreter rejected it: " + results.status().message());
  }
  if (results->size() < node.outputs.size()) {
    return kept("the reference interpreter gave fewer outputs than the node has");
  }
  int64_t produced = 0;
  for (const Tensor& tensor : *results) produced += static_cast<int64_t>(tensor.bytes.size());
  if (std::optional<std::string> why = over_limit(produced)) return kept(std::move(*why));
  attempt.results = std::move(*results);
  return attempt;
}

}  // namespace

Result<bool> fold_constants(Graph& graph, PassContext& context) {
  bool changed = constant_nodes_to_initializers(graph);
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  for (NodeId id : order) {
    std::optional<FoldAttempt> attempt = try_fold(graph, graph.node(id), context);
    if (!attempt || !attempt->kept_because.empty()) continue;
    context.count_fold(attempt->results);
    replace_with_constants(graph, id, std::move(attempt->results));
    changed = true;
  }
  return changed;
}

std::optional<std::string> why_not_folded(const Graph& graph, const Node& node,
                                          const PassContext& context) {
  std::optional<FoldAttempt> attempt = try_fold(graph, node, context);
  if (!attempt || attempt->kept_because.empty()) return std::nullopt;
  return std::move(attempt->kept_because);
}

}  // namespace stitch::ir
