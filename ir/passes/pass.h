// The pass interface of the simplification pipeline (DESIGN.md, ir/passes/).
//
// A pass is a function, registered with a name and a one-line summary, which rewrites
// the graph in place and returns whether it changed anything. Passes keep the graph
// valid for ir::verify after every run: graph input and output names never change,
// dead nodes are removed with Graph::remove_node, and values nothing reads any more
// are removed with Graph::remove_value (DCE sweeps what a pass leaves behind).
//
// Provenance: a node a pass creates carries in Node::origin the original ONNX node
// names of the nodes it stands for (use `inherit_origin`), so later stages can name
// them in the report and in generated CUDA comments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

// Analyses passes share, computed on first use and kept until the graph changes, as
// MLIR's getAnalysis: the pipeline invalidates them after every pass run that changed
// the graph and after compaction, so a pass that finds nothing to do leaves the next
// one its analyses. A pass that changes the graph and then asks again must invalidate
// first.
class AnalysisCache {
 public:
  // ir::topological_order of `graph`, from the cache when it holds one for `graph`.
  Result<std::vector<NodeId>> topological_order(const Graph& graph);
  void invalidate();

 private:
  const Graph* graph_ = nullptr;
  std::optional<std::vector<NodeId>> order_;
};

struct PassContext {
  int64_t default_opset = 0;  // the model's default-domain opset
  std::string model_path;     // for messages
  // Constant folding never creates a constant larger than this, so weights are not
  // duplicated (e.g. by folding Transpose(W) into a second copy of W).
  int64_t max_folded_constant_bytes = 1 << 20;
  // What shape folding and constant folding evaluated, over every run: nodes replaced
  // by their values, and the bytes of those values (docs/report-schema.md,
  // simplify.constant_folding).
  int64_t folded_nodes = 0;
  int64_t folded_bytes = 0;
  AnalysisCache analyses;

  // Counts one node about to be replaced by `results`.
  void count_fold(const std::vector<Tensor>& results) {
    ++folded_nodes;
    for (const Tensor& tensor : results) folded_bytes += static_cast<int64_t>(tensor.bytes.size());
  }
};

// A pass: a named rewrite of the graph, registered in pipeline.cc's table. `run`
// returns true when anything changed.
struct Pass {
  std::string_view name;     // for --passes, --disable-pass and --dump-ir-after
  std::string_view summary;  // one line for --list-passes
  Result<bool> (*run)(Graph& graph, PassContext& context) = nullptr;
};

// The data of `value` when it is known at compile time: an initializer that is not
// also a graph input (the runtime may override those defaults) or the `value` of a
// Constant node, numeric, with all its bytes in memory. Null otherwise, and for kNoId.
const Tensor* constant_data(const Graph& graph, ValueId value);

// Ops whose result changes from run to run: never folded or merged.
bool is_random_op(std::string_view op_type);

// Whether a Dropout node is the identity: no training_mode input, a constant false
// one, or a constant ratio of 0 (training mode then keeps every element and scales by
// 1 / (1 - 0): torchvision's Swin exports its attention dropout so).
bool dropout_in_inference(const Graph& graph, const Node& node);

// Whether a subgraph reads `value` (a use past its node's explicit inputs): the
// subgraph names it in its serialized body, so the value must keep its name.
bool read_by_subgraph(const Graph& graph, ValueId value);

// The permutation of a Transpose node: its `perm`, or the reversed axes when it has
// none. Nullopt when `perm` is not ints, or it has none and the input rank is unknown.
std::optional<std::vector<int64_t>> transpose_permutation(const Graph& graph, const Node& node);

// The one permutation p of Transpose(Transpose(x, first), second): p[i] =
// first[second[i]]. Nullopt when the sizes differ or an entry is out of range.
std::optional<std::vector<int64_t>> compose_permutations(const std::vector<int64_t>& first,
                                                         const std::vector<int64_t>& second);

bool is_identity_permutation(const std::vector<int64_t>& permutation);

// Removes node `id` and makes each of its outputs an initializer holding the
// tensor of the same slot of `results` (what folding computed); inputs nothing
// reads any more go too.
void replace_with_constants(Graph& graph, NodeId id, std::vector<Tensor> results);

// Appends the origins of `sources` to `target`'s origin, without duplicates, keeping
// first-seen order.
void inherit_origin(Graph& graph, NodeId target, const std::vector<NodeId>& sources);

}  // namespace stitch::ir
