// Common subexpression elimination.
#include "ir/passes/cse.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

bool is_commutative(std::string_view op_type) {
  return op_type == "Add" || op_type == "Mul" || op_type == "Max" || op_type == "Min" ||
         op_type == "And" || op_type == "Or" || op_type == "Xor" || op_type == "Equal" ||
         op_type == "Sum";
}

bool mergeable(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || find_op_schema(node.domain, node.op_type) == nullptr) return false;
  if (is_random_op(node.op_type)) return false;
  if (node.op_type == "Dropout" && !dropout_in_inference(graph, node)) return false;
  if (!node.implicit_inputs.empty() || node.outputs.empty()) return false;
  for (const Attribute& attribute : node.attributes) {
    if (!attribute.opaque_proto.empty() || attribute.kind == AttributeKind::kGraph ||
        attribute.kind == AttributeKind::kGraphs) {
      return false;
    }
  }
  return true;
}

uint64_t fnv1a(std::string_view bytes, uint64_t hash = 1469598103934665603ULL) {
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

template <typename T>
void append_raw(std::string& key, const T& value) {
  char buffer[sizeof(T)];
  std::memcpy(buffer, &value, sizeof(T));
  key.append(buffer, sizeof(T));
}

void append_string(std::string& key, std::string_view text) {
  append_raw(key, static_cast<uint64_t>(text.size()));
  key.append(text);
}

// dtype, dims and a hash of the data: equal tensors give equal keys.
void append_tensor_digest(std::string& key, const Tensor& tensor) {
  append_raw(key, static_cast<int32_t>(tensor.dtype));
  append_raw(key, static_cast<uint64_t>(tensor.dims.size()));
  for (int64_t dim : tensor.dims) append_raw(key, dim);
  uint64_t hash = fnv1a(tensor.bytes);
  for (const std::string& element : tensor.strings) hash = fnv1a(element, hash ^ element.size());
  append_raw(key, hash);
}

void append_attribute(std::string& key, const Attribute& attribute) {
  append_string(key, attribute.name);
  append_raw(key, static_cast<int32_t>(attribute.kind));
  append_raw(key, attribute.i);
  append_raw(key, attribute.f);
  append_string(key, attribute.s);
  append_raw(key, static_cast<uint64_t>(attribute.ints.size()));
  for (int64_t value : attribute.ints) append_raw(key, value);
  append_raw(key, static_cast<uint64_t>(attribute.floats.size()));
  for (float value : attribute.floats) append_raw(key, value);
  append_raw(key, static_cast<uint64_t>(attribute.strings.size()));
  for (const std::string& value : attribute.strings) append_string(key, value);
  append_raw(key, attribute.tensor != nullptr);
  if (attribute.tensor != nullptr) append_tensor_digest(key, *attribute.tensor);
  append_raw(key, static_cast<uint64_t>(attribute.tensors.size()));
  for (const Tensor& tensor : attribute.tensors) append_tensor_digest(key, tensor);
  append_string(key, attribute.ref_attr_name);
  append_string(key, attribute.doc_string);
}

std::vector<const Attribute*> sorted_attributes(const Node& node) {
  std::vector<const Attribute*> sorted;
  for (const Attribute& attribute : node.attributes) sorted.push_back(&attribute);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
  return sorted;
}

std::vector<ValueId> canonical_inputs(const Node& node) {
  std::vector<ValueId> inputs = node.inputs;
  if (is_commutative(node.op_type)) std::sort(inputs.begin(), inputs.end());
  return inputs;
}

std::string node_key(const Node& node) {
  std::string key;
  append_string(key, node.op_type);
  append_raw(key, node.opset);
  for (const Attribute* attribute : sorted_attributes(node)) append_attribute(key, *attribute);
  key.push_back('|');
  for (ValueId input : canonical_inputs(node)) append_raw(key, input);
  append_raw(key, static_cast<uint64_t>(node.outputs.size()));
  return key;
}

// Full comparison behind a key match (the key hashes tensor data).
bool same_computation(const Node& a, const Node& b) {
  if (a.op_type != b.op_type || a.domain != b.domain || a.opset != b.opset ||
      a.outputs.size() != b.outputs.size() || canonical_inputs(a) != canonical_inputs(b) ||
      a.attributes.size() != b.attributes.size()) {
    return false;
  }
  std::vector<const Attribute*> left = sorted_attributes(a);
  std::vector<const Attribute*> right = sorted_attributes(b);
  for (size_t i = 0; i < left.size(); ++i) {
    if (!(*left[i] == *right[i])) return false;
  }
  return true;
}

// Whether `survivor` can take over `removed`'s outputs: no slot where both are
// graph outputs (one name would have to go), and no value that goes away is read
// by a subgraph.
bool can_merge(const Graph& graph, const Node& survivor, const Node& removed) {
  for (size_t slot = 0; slot < removed.outputs.size(); ++slot) {
    ValueId kept = survivor.outputs[slot];
    ValueId gone = removed.outputs[slot];
    if (kept == kNoId || gone == kNoId) continue;
    if (graph.value(kept).is_graph_output && graph.value(gone).is_graph_output) return false;
    ValueId vanishing = graph.value(gone).is_graph_output ? kept : gone;
    if (read_by_subgraph(graph, vanishing)) return false;
  }
  return true;
}

void merge_into(Graph& graph, NodeId survivor_id, NodeId removed_id) {
  std::vector<ValueId> removed_outputs = graph.node(removed_id).outputs;
  inherit_origin(graph, survivor_id, {removed_id});
  graph.remove_node(removed_id);
  for (size_t slot = 0; slot < removed_outputs.size(); ++slot) {
    ValueId gone = removed_outputs[slot];
    if (gone == kNoId) continue;
    ValueId kept = graph.node(survivor_id).outputs[slot];
    auto slot32 = static_cast<int32_t>(slot);
    if (kept == kNoId) {
      graph.set_output(survivor_id, slot32, gone);
    } else if (graph.value(gone).is_graph_output) {
      // The graph output's name stays: the survivor produces it from now on.
      graph.replace_all_uses(kept, gone);
      graph.set_output(survivor_id, slot32, gone);
      graph.remove_value(kept);
    } else {
      graph.replace_all_uses(gone, kept);
      graph.remove_value(gone);
    }
  }
}

bool has_loaded_data(const Tensor& tensor) {
  if (tensor.dtype == DType::kString) {
    return static_cast<int64_t>(tensor.strings.size()) == tensor.num_elements();
  }
  return static_cast<int64_t>(tensor.bytes.size()) ==
         tensor.num_elements() * dtype_size(tensor.dtype);
}

bool merge_initializers(Graph& graph) {
  bool changed = false;
  std::unordered_map<std::string, std::vector<ValueId>> by_key;
  for (ValueId id : graph.initializers()) {
    const Value& value = graph.value(id);
    if (value.is_graph_input || value.is_graph_output) continue;
    const Tensor& tensor = *value.constant;
    bool keep_name = read_by_subgraph(graph, id);
    if (!has_loaded_data(tensor) ||
        static_cast<int64_t>(tensor.bytes.size()) > kMaxMergedInitializerBytes) {
      continue;
    }
    std::string key;
    append_tensor_digest(key, tensor);
    std::vector<ValueId>& candidates = by_key[key];
    auto same = std::find_if(candidates.begin(), candidates.end(), [&](ValueId other) {
      const Tensor& kept = *graph.value(other).constant;
      return kept.dtype == tensor.dtype && kept.dims == tensor.dims && kept.bytes == tensor.bytes &&
             kept.strings == tensor.strings;
    });
    if (same == candidates.end() || keep_name) {
      if (same == candidates.end()) candidates.push_back(id);
      continue;
    }
    graph.replace_all_uses(id, *same);
    graph.remove_value(id);
    changed = true;
  }
  return changed;
}

}  // namespace

Result<bool> eliminate_common_subexpressions(Graph& graph, PassContext& context) {
  bool changed = merge_initializers(graph);
  if (changed) context.analyses.invalidate();
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  std::unordered_map<std::string, std::vector<NodeId>> by_key;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (!mergeable(graph, node)) continue;
    std::string key = node_key(node);
    std::vector<NodeId>& candidates = by_key[key];
    auto match = std::find_if(candidates.begin(), candidates.end(), [&](NodeId other) {
      return same_computation(graph.node(other), node) && can_merge(graph, graph.node(other), node);
    });
    if (match == candidates.end()) {
      candidates.push_back(id);
      continue;
    }
    merge_into(graph, *match, id);
    changed = true;
  }
  return changed;
}

}  // namespace stitch::ir
