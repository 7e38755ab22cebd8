// Graph, Node, Value and Model: the IR every stage of stitchopt works on.
//
// The Graph owns Values and Nodes, addressed by dense integer ids. Removing a node
// marks it dead and unlinks it; `compact()` renumbers ids densely again. Every
// iteration order the API exposes is by id, which at import is the model's node
// order; analyses (ir/core/analysis.h) give topological order with ties by id. Nothing
// iterates in pointer or hash order, so every output is deterministic.
//
// Invariants (checked by ir/core/verifier.h):
//  - every Value has at most one producer, and `users` lists exactly the (node,
//    input slot) pairs that read it;
//  - a Value with constant data (an initializer) has no producer;
//  - names of Values are unique; graph inputs and outputs keep the model's names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/core/attribute.h"
#include "ir/core/tensor.h"

namespace stitch::ir {

using ValueId = int32_t;
using NodeId = int32_t;
constexpr int32_t kNoId = -1;

// A read of a Value: node `node` reads it as input `slot`. Slots at or past
// node.inputs.size() index node.implicit_inputs (values a subgraph captures).
struct Use {
  NodeId node = kNoId;
  int32_t slot = 0;
  bool operator==(const Use& other) const = default;
};

struct Value {
  ValueId id = kNoId;
  std::string name;
  TensorType type;
  NodeId producer = kNoId;                 // kNoId for graph inputs and initializers
  int32_t producer_output = 0;             // output slot of the producer
  std::vector<Use> users;                  // in the order they were added
  std::shared_ptr<const Tensor> constant;  // initializer data, else null
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool dead = false;
  // The model gave this value's shape in value_info/output type (not inferred).
  bool type_from_model = false;

  bool is_initializer() const { return constant != nullptr && producer == kNoId; }
};

struct Node {
  NodeId id = kNoId;
  std::string name;  // the ONNX node name ("" when the model had none)
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain (add_node maps "ai.onnx" to "")
  int64_t opset = 0;   // version of `domain` the model imports; 0 when unset
  std::vector<Attribute> attributes;     // in model order
  std::vector<ValueId> inputs;           // kNoId for an omitted optional input
  std::vector<ValueId> outputs;          // kNoId for an omitted optional output
  std::vector<ValueId> implicit_inputs;  // outer values read by subgraph attributes
  std::string doc_string;
  // Names of the original ONNX nodes this node stands for (provenance).
  std::vector<std::string> origin;
  bool dead = false;

  const Attribute* find_attribute(std::string_view attribute_name) const;
  Attribute* find_attribute(std::string_view attribute_name);
  int64_t int_attribute(std::string_view attribute_name, int64_t fallback) const;
  float float_attribute(std::string_view attribute_name, float fallback) const;
  std::string string_attribute(std::string_view attribute_name, std::string fallback) const;
  std::vector<int64_t> ints_attribute(std::string_view attribute_name,
                                      std::vector<int64_t> fallback) const;
  void set_attribute(Attribute attribute);  // replaces one of the same name
  // "\"Add_3\" (Add)" or "<unnamed> (Add)": how messages and reports name a node.
  std::string display_name() const;
  int num_inputs_present() const;
  // `opset`, or `fallback` when unset (nodes created without one).
  int64_t opset_or(int64_t fallback) const { return opset > 0 ? opset : fallback; }
};

// The tensor a Constant node carries: a copy of its `value` tensor, or the tensor
// its value_float(s), value_int(s) or value_string(s) attribute stands for. Nullopt
// for sparse_value (kept serialized) and when no value attribute is set.
std::optional<Tensor> constant_node_value(const Node& node);

class Graph {
 public:
  std::string name;
  std::string doc_string;
  // Names of the symbolic dims (ir/core/tensor.h symbolic_dim): the importer gives
  // them to graph-input dims --input-shape did not fix, when asked to.
  std::vector<std::string> dim_symbols;

  // Adds a value; `name` must be unique (checked).
  ValueId add_value(std::string value_name, TensorType type);
  // Adds an initializer: a value with constant data and no producer.
  ValueId add_initializer(std::string value_name, Tensor tensor);
  // Turns a live value without producer into an initializer holding `tensor` (its
  // type becomes the tensor's); name, users and graph-output role stay. Constant
  // folding uses it so folded values keep their names.
  void make_initializer(ValueId value, Tensor tensor);
  // Adds a node reading `inputs` and producing `outputs` (values without producer).
  NodeId add_node(std::string op_type, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                  std::string domain = "", std::string node_name = "");
  // Unlinks the node from its inputs and outputs (outputs lose their producer) and
  // marks it dead. Its output values stay and must be removed or reproduced.
  void remove_node(NodeId node);
  // Marks a value without producer and users dead; graph inputs/outputs can't be.
  void remove_value(ValueId value);
  // remove_value when `value` is live, has no producer and no users and is no graph
  // input or output (what a rewrite leaves behind); true when it was removed. kNoId
  // is accepted and ignored.
  bool remove_value_if_unused(ValueId value);
  void set_input(NodeId node, int32_t slot, ValueId value);
  void add_implicit_input(NodeId node, ValueId value);
  // Points every user (and graph-output slot) of `from` at `to`.
  void replace_all_uses(ValueId from, ValueId to);
  // Makes `value` the producer's output `slot` of `node`.
  void set_output(NodeId node, int32_t slot, ValueId value);

  void add_graph_input(ValueId value);
  void add_graph_output(ValueId value);
  void set_graph_output(size_t index, ValueId value);
  const std::vector<ValueId>& graph_inputs() const { return inputs_; }
  const std::vector<ValueId>& graph_outputs() const { return outputs_; }
  // Initializers in model order (dead ones skipped).
  std::vector<ValueId> initializers() const;

  Value& value(ValueId id) { return values_[static_cast<size_t>(id)]; }
  const Value& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  std::optional<ValueId> find_value(std::string_view value_name) const;

  // Upper bounds on ids (dead ones included): loop `for id < node_capacity()`.
  int32_t node_capacity() const { return static_cast<int32_t>(nodes_.size()); }
  int32_t value_capacity() const { return static_cast<int32_t>(values_.size()); }
  // Live node ids in id order.
  std::vector<NodeId> node_ids() const;
  int64_t num_nodes() const;
  // A name not used by any value yet: `base`, else `base_1`, `base_2`, ...
  std::string unique_value_name(std::string_view base);
  // Drops dead nodes and values and renumbers ids densely, keeping relative order.
  void compact();

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<ValueId> initializer_order_;
  std::unordered_map<std::string, ValueId> value_by_name_;
  std::unordered_map<std::string, int64_t> name_counters_;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
  bool operator==(const OpsetImport& other) const = default;
};

// A model: the graph plus what the writer must keep (opsets, producer, metadata,
// model-local functions, which are passed through as serialized FunctionProtos).
struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::vector<std::string> functions;  // serialized FunctionProto
  Graph graph;

  // Version of the default ("" or "ai.onnx") domain; 0 when not imported.
  int64_t default_opset() const;
  // Version of `domain`, treating "ai.onnx" as ""; 0 when not imported.
  int64_t opset_of(std::string_view domain_name) const;
};

}  // namespace stitch::ir
