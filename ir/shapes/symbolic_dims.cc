// Symbolic dims: which ones a model's shapes depend on.
#include "ir/shapes/symbolic_dims.h"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "ir/core/op_registry.h"
#include "support/strings.h"

namespace stitch::ir {
namespace {

// Union-find over symbol indices; each root may carry a forced value.
class DimClasses {
 public:
  explicit DimClasses(size_t symbols)
      : parent_(symbols), value_(symbols), forced_by_(symbols), conflict_(symbols) {
    std::iota(parent_.begin(), parent_.end(), size_t{0});
  }

  size_t find(size_t symbol) {
    while (parent_[symbol] != symbol) {
      parent_[symbol] = parent_[parent_[symbol]];
      symbol = parent_[symbol];
    }
    return symbol;
  }

  // Records that the dims `a` and `b` are equal at `node` (dims of 1 broadcast and
  // say nothing; unknown dims say nothing).
  void equate(int64_t a, int64_t b, const Node& node) {
    if (a == 1 || b == 1 || a == kUnknownDim || b == kUnknownDim) return;
    if (is_symbolic_dim(a) && is_symbolic_dim(b)) {
      join(symbol_index(a), symbol_index(b));
    } else if (is_symbolic_dim(a) && b >= 0) {
      force(find(symbol_index(a)), b, node.display_name());
    } else if (is_symbolic_dim(b) && a >= 0) {
      force(find(symbol_index(b)), a, node.display_name());
    }
  }

  const std::optional<int64_t>& value(size_t root) const { return value_[root]; }
  const std::string& forced_by(size_t root) const { return forced_by_[root]; }
  const std::string& conflict(size_t root) const { return conflict_[root]; }

 private:
  void force(size_t root, int64_t value, const std::string& by) {
    if (!value_[root]) {
      value_[root] = value;
      forced_by_[root] = by;
    } else if (*value_[root] != value && conflict_[root].empty()) {
      conflict_[root] = forced_by_[root] + " requires " + std::to_string(*value_[root]) + " but " +
                        by + " requires " + std::to_string(value);
    }
  }

  void join(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);  // the first-named symbol stays the root
    parent_[b] = a;
    if (conflict_[a].empty()) conflict_[a] = conflict_[b];
    if (value_[b]) force(a, *value_[b], forced_by_[b]);
  }

  std::vector<size_t> parent_;
  std::vector<std::optional<int64_t>> value_;
  std::vector<std::string> forced_by_;
  std::vector<std::string> conflict_;
};

const TensorType* shaped_input(const Graph& graph, const Node& node, size_t slot) {
  if (slot >= node.inputs.size() || node.inputs[slot] == kNoId) return nullptr;
  const TensorType& type = graph.value(node.inputs[slot]).type;
  return type.has_shape ? &type : nullptr;
}

// Right-aligned dims of `shapes` broadcast together: each aligned column is equal
// up to dims of 1.
void equate_broadcast(DimClasses& classes, const std::vector<std::vector<int64_t>>& shapes,
                      const Node& node) {
  size_t rank = 0;
  for (const std::vector<int64_t>& dims : shapes) rank = std::max(rank, dims.size());
  for (size_t column = 1; column <= rank; ++column) {
    std::optional<int64_t> first;
    for (const std::vector<int64_t>& dims : shapes) {
      if (dims.size() < column) continue;
      int64_t dim = dims[dims.size() - column];
      if (dim == 1 || dim == kUnknownDim) continue;
      if (first) {
        classes.equate(*first, dim, node);
      } else {
        first = dim;
      }
    }
  }
}

void equate_node(const Graph& graph, const Node& node, DimClasses& classes) {
  const OpSchema* schema = find_op_schema(node.domain, node.op_type);
  if (schema == nullptr) return;
  if (node.op_type == "MatMul") {
    const TensorType* a = shaped_input(graph, node, 0);
    const TensorType* b = shaped_input(graph, node, 1);
    if (a == nullptr || b == nullptr || a->dims.empty() || b->dims.empty()) return;
    int64_t k_b = b->dims.size() >= 2 ? b->dims[b->dims.size() - 2] : b->dims[0];
    classes.equate(a->dims.back(), k_b, node);
    if (a->dims.size() > 2 && b->dims.size() > 2) {
      equate_broadcast(classes,
                       {std::vector<int64_t>(a->dims.begin(), a->dims.end() - 2),
                        std::vector<int64_t>(b->dims.begin(), b->dims.end() - 2)},
                       node);
    }
  } else if (node.op_type == "Gemm") {
    const TensorType* a = shaped_input(graph, node, 0);
    const TensorType* b = shaped_input(graph, node, 1);
    if (a == nullptr || b == nullptr || a->dims.size() != 2 || b->dims.size() != 2) return;
    int64_t k_a = a->dims[node.int_attribute("transA", 0) != 0 ? 0 : 1];
    int64_t k_b = b->dims[node.int_attribute("transB", 0) != 0 ? 1 : 0];
    classes.equate(k_a, k_b, node);
  } else if (node.op_type == "Concat") {
    const TensorType* first = shaped_input(graph, node, 0);
    if (first == nullptr) return;
    const auto rank = static_cast<int64_t>(first->dims.size());
    int64_t axis = node.int_attribute("axis", 0);
    if (axis < 0) axis += rank;
    for (size_t slot = 1; slot < node.inputs.size(); ++slot) {
      const TensorType* other = shaped_input(graph, node, slot);
      if (other == nullptr || other->dims.size() != first->dims.size()) continue;
      for (int64_t i = 0; i < rank; ++i) {
        if (i != axis)
          classes.equate(first->dims[static_cast<size_t>(i)], other->dims[static_cast<size_t>(i)],
                         node);
      }
    }
  } else if (schema->kind == OpKind::kElementwise && node.inputs.size() >= 2) {
    std::vector<std::vector<int64_t>> shapes;
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (const TensorType* type = shaped_input(graph, node, slot)) shapes.push_back(type->dims);
    }
    if (shapes.size() >= 2) equate_broadcast(classes, shapes, node);
  }
}

using support::join;

std::vector<ValueId> runtime_inputs(const Graph& graph) {
  std::vector<ValueId> inputs;
  for (ValueId id : graph.graph_inputs()) {
    if (!graph.value(id).is_initializer()) inputs.push_back(id);
  }
  return inputs;
}

struct Analysis {
  std::vector<SymbolicDim> dims;
  std::vector<size_t> class_of_root;  // root symbol -> index in dims (or npos)
  DimClasses classes;
};

Analysis analyze(const Graph& graph) {
  Analysis analysis{{},
                    std::vector<size_t>(graph.dim_symbols.size(), SIZE_MAX),
                    DimClasses(graph.dim_symbols.size())};
  DimClasses& classes = analysis.classes;
  for (NodeId id : graph.node_ids()) equate_node(graph, graph.node(id), classes);
  for (ValueId id : runtime_inputs(graph)) {
    const Value& input = graph.value(id);
    for (size_t axis = 0; axis < input.type.dims.size(); ++axis) {
      int64_t dim = input.type.dims[axis];
      if (!is_symbolic_dim(dim) || symbol_index(dim) >= graph.dim_symbols.size()) continue;
      size_t root = classes.find(symbol_index(dim));
      if (analysis.class_of_root[root] == SIZE_MAX) {
        analysis.class_of_root[root] = analysis.dims.size();
        SymbolicDim symbolic;
        symbolic.value = classes.value(root);
        symbolic.forced_by = classes.forced_by(root);
        symbolic.conflict = classes.conflict(root);
        analysis.dims.push_back(std::move(symbolic));
      }
      SymbolicDim& symbolic = analysis.dims[analysis.class_of_root[root]];
      const std::string& name = graph.dim_symbols[symbol_index(dim)];
      if (std::find(symbolic.names.begin(), symbolic.names.end(), name) == symbolic.names.end()) {
        symbolic.names.push_back(name);
      }
      symbolic.uses.push_back(input.name + " dim " + std::to_string(axis));
    }
  }
  return analysis;
}

}  // namespace

std::vector<SymbolicDim> symbolic_dims(const Graph& graph) { return analyze(graph).dims; }

std::string explain_symbolic_dims(const Graph& graph) {
  Analysis analysis = analyze(graph);
  std::vector<std::string> inputs;
  std::vector<std::string> flags;
  for (ValueId id : runtime_inputs(graph)) {
    const Value& input = graph.value(id);
    bool symbolic = false;
    std::vector<std::string> texts;
    std::vector<std::string> example;
    for (size_t axis = 0; axis < input.type.dims.size(); ++axis) {
      int64_t dim = input.type.dims[axis];
      if (dim >= 0) {
        texts.push_back(std::to_string(dim));
        example.push_back(std::to_string(dim));
        continue;
      }
      symbolic = true;
      if (!is_symbolic_dim(dim) || symbol_index(dim) >= graph.dim_symbols.size()) {
        texts.push_back("?");
        example.push_back(axis == 0 ? "1" : "128");
        continue;
      }
      texts.push_back(graph.dim_symbols[symbol_index(dim)]);
      const SymbolicDim& symbolic_dim =
          analysis.dims[analysis.class_of_root[analysis.classes.find(symbol_index(dim))]];
      int64_t value = symbolic_dim.value && symbolic_dim.conflict.empty()
                          ? *symbolic_dim.value
                          : (symbolic_dim.uses[0].ends_with(" dim 0") ? 1 : 128);
      example.push_back(std::to_string(value));
    }
    if (!symbolic) continue;
    inputs.push_back(input.name + " [" + join(texts, ",") + "]");
    flags.push_back("--input-shape " + input.name + "=" + join(example, ","));
  }
  std::vector<std::string> classes;
  for (const SymbolicDim& dim : analysis.dims) {
    std::string text = dim.names[0] + " (";
    if (dim.names.size() > 1) {
      text += "= " + join(std::vector<std::string>(dim.names.begin() + 1, dim.names.end()), " = ") +
              "; ";
    }
    text += join(dim.uses, ", ");
    if (!dim.conflict.empty()) {
      text += "; " + dim.conflict + ": no value fits";
    } else if (dim.value) {
      text += "; " + dim.forced_by + " requires " + std::to_string(*dim.value);
    }
    classes.push_back(text + ")");
  }
  std::string listed;
  for (size_t i = 0; i < classes.size(); ++i) {
    if (i > 0) listed += i + 1 == classes.size() ? " and " : ", ";
    listed += classes[i];
  }
  return "graph inputs have symbolic dims: " + join(inputs, ", ") +
         "; after shape propagation they are " + std::to_string(classes.size()) +
         (classes.size() == 1 ? " dim: " : " dims: ") + listed + "; give them with " +
         join(flags, " ");
}

}  // namespace stitch::ir
