// Graph, Node, Value and Model.
#include "ir/core/graph.h"

#include <algorithm>

#include "ir/core/status.h"
#include "support/escape.h"

namespace stitch::ir {

const Attribute* Node::find_attribute(std::string_view attribute_name) const {
  for (const Attribute& attribute : attributes) {
    if (attribute.name == attribute_name) return &attribute;
  }
  return nullptr;
}

Attribute* Node::find_attribute(std::string_view attribute_name) {
  for (Attribute& attribute : attributes) {
    if (attribute.name == attribute_name) return &attribute;
  }
  return nullptr;
}

int64_t Node::int_attribute(std::string_view attribute_name, int64_t fallback) const {
  const Attribute* attribute = find_attribute(attribute_name);
  return attribute != nullptr && attribute->kind == AttributeKind::kInt ? attribute->i : fallback;
}

float Node::float_attribute(std::string_view attribute_name, float fallback) const {
  const Attribute* attribute = find_attribute(attribute_name);
  return attribute != nullptr && attribute->kind == AttributeKind::kFloat ? attribute->f : fallback;
}

std::string Node::string_attribute(std::string_view attribute_name, std::string fallback) const {
  const Attribute* attribute = find_attribute(attribute_name);
  return attribute != nullptr && attribute->kind == AttributeKind::kString ? attribute->s
                                                                           : fallback;
}

std::vector<int64_t> Node::ints_attribute(std::string_view attribute_name,
                                          std::vector<int64_t> fallback) const {
  const Attribute* attribute = find_attribute(attribute_name);
  return attribute != nullptr && attribute->kind == AttributeKind::kInts ? attribute->ints
                                                                         : fallback;
}

void Node::set_attribute(Attribute attribute) {
  Attribute* existing = find_attribute(attribute.name);
  if (existing != nullptr) {
    *existing = std::move(attribute);
  } else {
    attributes.push_back(std::move(attribute));
  }
}

std::string Node::display_name() const {
  std::string shown = name.empty() ? "<unnamed>" : support::quote(name);
  std::string qualified = domain.empty() ? op_type : domain + "." + op_type;
  // Op types are plain identifiers in every model worth reading; any other is quoted.
  if (std::string escaped = support::quote(qualified); escaped != "\"" + qualified + "\"") {
    qualified = escaped;
  }
  return shown + " (" + qualified + ")";
}

int Node::num_inputs_present() const {
  int count = 0;
  for (ValueId input : inputs) {
    if (input != kNoId) ++count;
  }
  return count;
}

std::optional<Tensor> constant_node_value(const Node& node) {
  for (const Attribute& attribute : node.attributes) {
    const std::string& name = attribute.name;
    if (name == "value" && attribute.tensor != nullptr) return *attribute.tensor;
    if (name == "value_float") return Tensor::from_float({}, {attribute.f});
    if (name == "value_floats") {
      return Tensor::from_float({static_cast<int64_t>(attribute.floats.size())}, attribute.floats);
    }
    if (name == "value_int") return Tensor::from_int64({}, {attribute.i});
    if (name == "value_ints") {
      return Tensor::from_int64({static_cast<int64_t>(attribute.ints.size())}, attribute.ints);
    }
    if (name == "value_string" || name == "value_strings") {
      Tensor tensor;
      tensor.dtype = DType::kString;
      if (name == "value_string") {
        tensor.strings = {attribute.s};
      } else {
        tensor.dims = {static_cast<int64_t>(attribute.strings.size())};
        tensor.strings = attribute.strings;
      }
      return tensor;
    }
  }
  return std::nullopt;
}

ValueId Graph::add_value(std::string value_name, TensorType type) {
  STITCH_CHECK(!value_by_name_.contains(value_name)) << "duplicate value name " << value_name;
  auto id = static_cast<ValueId>(values_.size());
  Value value;
  value.id = id;
  value.name = std::move(value_name);
  value.type = std::move(type);
  value_by_name_.emplace(value.name, id);
  values_.push_back(std::move(value));
  return id;
}

ValueId Graph::add_initializer(std::string value_name, Tensor tensor) {
  ValueId id = add_value(std::move(value_name), tensor.type());
  values_[static_cast<size_t>(id)].constant = std::make_shared<const Tensor>(std::move(tensor));
  initializer_order_.push_back(id);
  return id;
}

void Graph::make_initializer(ValueId id, Tensor tensor) {
  Value& target = value(id);
  STITCH_CHECK(!target.dead && target.producer == kNoId)
      << "value " << target.name << " is dead or still produced by a node";
  target.type = tensor.type();
  bool listed = target.constant != nullptr;
  target.constant = std::make_shared<const Tensor>(std::move(tensor));
  if (!listed) initializer_order_.push_back(id);
}

NodeId Graph::add_node(std::string op_type, std::vector<ValueId> inputs,
                       std::vector<ValueId> outputs, std::string domain, std::string node_name) {
  auto id = static_cast<NodeId>(nodes_.size());
  Node node;
  node.id = id;
  node.op_type = std::move(op_type);
  // "ai.onnx" is the default domain's other spelling: one spelling in the IR, so
  // every pass can test domain.empty().
  node.domain = domain == "ai.onnx" ? std::string() : std::move(domain);
  node.name = std::move(node_name);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
    if (node.inputs[slot] != kNoId) {
      value(node.inputs[slot]).users.push_back(Use{id, static_cast<int32_t>(slot)});
    }
  }
  for (size_t slot = 0; slot < node.outputs.size(); ++slot) {
    ValueId output = node.outputs[slot];
    if (output == kNoId) continue;
    STITCH_CHECK(value(output).producer == kNoId)
        << "value " << value(output).name << " already has a producer";
    value(output).producer = id;
    value(output).producer_output = static_cast<int32_t>(slot);
  }
  nodes_.push_back(std::move(node));
  return id;
}

namespace {
void erase_use(std::vector<Use>& users, Use use) {
  auto it = std::find(users.begin(), users.end(), use);
  STITCH_CHECK(it != users.end()) << "use not found";
  users.erase(it);
}
}  // namespace

void Graph::remove_node(NodeId id) {
  Node& removed = node(id);
  STITCH_CHECK(!removed.dead) << "node removed twice";
  int32_t slot = 0;
  for (ValueId input : removed.inputs) {
    if (input != kNoId) erase_use(value(input).users, Use{id, slot});
    ++slot;
  }
  for (ValueId input : removed.implicit_inputs) {
    erase_use(value(input).users, Use{id, slot});
    ++slot;
  }
  for (ValueId output : removed.outputs) {
    if (output != kNoId) value(output).producer = kNoId;
  }
  removed.dead = true;
}

void Graph::remove_value(ValueId id) {
  Value& removed = value(id);
  STITCH_CHECK(removed.producer == kNoId && removed.users.empty())
      << "value " << removed.name << " still connected";
  STITCH_CHECK(!removed.is_graph_input && !removed.is_graph_output)
      << "graph input/output " << removed.name << " cannot be removed";
  removed.dead = true;
  removed.constant.reset();
  value_by_name_.erase(removed.name);
}

bool Graph::remove_value_if_unused(ValueId id) {
  if (id == kNoId) return false;
  const Value& candidate = value(id);
  if (candidate.dead || candidate.producer != kNoId || !candidate.users.empty() ||
      candidate.is_graph_input || candidate.is_graph_output) {
    return false;
  }
  remove_value(id);
  return true;
}

void Graph::set_input(NodeId id, int32_t slot, ValueId new_value) {
  Node& target = node(id);
  ValueId& current = target.inputs[static_cast<size_t>(slot)];
  if (current != kNoId) erase_use(value(current).users, Use{id, slot});
  current = new_value;
  if (new_value != kNoId) value(new_value).users.push_back(Use{id, slot});
}

void Graph::add_implicit_input(NodeId id, ValueId captured) {
  Node& target = node(id);
  auto slot = static_cast<int32_t>(target.inputs.size() + target.implicit_inputs.size());
  target.implicit_inputs.push_back(captured);
  value(captured).users.push_back(Use{id, slot});
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  if (from == to) return;
  std::vector<Use> users = value(from).users;
  for (const Use& use : users) {
    Node& user = node(use.node);
    auto slot = static_cast<size_t>(use.slot);
    if (slot < user.inputs.size()) {
      user.inputs[slot] = to;
    } else {
      user.implicit_inputs[slot - user.inputs.size()] = to;
    }
    value(to).users.push_back(use);
  }
  value(from).users.clear();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i] == from) set_graph_output(i, to);
  }
}

void Graph::set_output(NodeId id, int32_t slot, ValueId new_value) {
  Node& target = node(id);
  ValueId& current = target.outputs[static_cast<size_t>(slot)];
  if (current != kNoId) value(current).producer = kNoId;
  current = new_value;
  if (new_value != kNoId) {
    STITCH_CHECK(value(new_value).producer == kNoId) << "value already produced";
    value(new_value).producer = id;
    value(new_value).producer_output = slot;
  }
}

void Graph::add_graph_input(ValueId id) {
  value(id).is_graph_input = true;
  inputs_.push_back(id);
}

void Graph::add_graph_output(ValueId id) {
  value(id).is_graph_output = true;
  outputs_.push_back(id);
}

void Graph::set_graph_output(size_t index, ValueId id) {
  ValueId old = outputs_[index];
  outputs_[index] = id;
  value(old).is_graph_output = std::find(outputs_.begin(), outputs_.end(), old) != outputs_.end();
  value(id).is_graph_output = true;
}

std::vector<ValueId> Graph::initializers() const {
  std::vector<ValueId> live;
  for (ValueId id : initializer_order_) {
    const Value& candidate = value(id);
    if (!candidate.dead && candidate.is_initializer()) live.push_back(id);
  }
  return live;
}

std::optional<ValueId> Graph::find_value(std::string_view value_name) const {
  auto it = value_by_name_.find(std::string(value_name));
  if (it == value_by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<NodeId> Graph::node_ids() const {
  std::vector<NodeId> ids;
  ids.reserve(nodes_.size());
  for (const Node& candidate : nodes_) {
    if (!candidate.dead) ids.push_back(candidate.id);
  }
  return ids;
}

int64_t Graph::num_nodes() const {
  return std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.dead; });
}

std::string Graph::unique_value_name(std::string_view base) {
  std::string candidate(base);
  if (!value_by_name_.contains(candidate)) return candidate;
  int64_t& counter = name_counters_[candidate];
  while (true) {
    ++counter;
    std::string numbered = candidate + "_" + std::to_string(counter);
    if (!value_by_name_.contains(numbered)) return numbered;
  }
}

void Graph::compact() {
  std::vector<ValueId> value_map(values_.size(), kNoId);
  std::vector<NodeId> node_map(nodes_.size(), kNoId);
  std::vector<Value> values;
  std::vector<Node> nodes;
  for (Value& candidate : values_) {
    if (candidate.dead) continue;
    value_map[static_cast<size_t>(candidate.id)] = static_cast<ValueId>(values.size());
    values.push_back(std::move(candidate));
  }
  for (Node& candidate : nodes_) {
    if (candidate.dead) continue;
    node_map[static_cast<size_t>(candidate.id)] = static_cast<NodeId>(nodes.size());
    nodes.push_back(std::move(candidate));
  }
  auto map_value = [&](ValueId id) {
    return id == kNoId ? kNoId : value_map[static_cast<size_t>(id)];
  };
  for (Value& moved : values) {
    moved.id = map_value(moved.id);
    if (moved.producer != kNoId) moved.producer = node_map[static_cast<size_t>(moved.producer)];
    for (Use& use : moved.users) use.node = node_map[static_cast<size_t>(use.node)];
  }
  for (Node& moved : nodes) {
    moved.id = node_map[static_cast<size_t>(moved.id)];
    for (ValueId& id : moved.inputs) id = map_value(id);
    for (ValueId& id : moved.outputs) id = map_value(id);
    for (ValueId& id : moved.implicit_inputs) id = map_value(id);
  }
  for (ValueId& id : inputs_) id = map_value(id);
  for (ValueId& id : outputs_) id = map_value(id);
  std::vector<ValueId> initializer_order;
  for (ValueId id : initializer_order_) {
    if (map_value(id) != kNoId) initializer_order.push_back(map_value(id));
  }
  initializer_order_ = std::move(initializer_order);
  values_ = std::move(values);
  nodes_ = std::move(nodes);
  value_by_name_.clear();
  for (const Value& kept : values_) value_by_name_.emplace(kept.name, kept.id);
}

int64_t Model::default_opset() const { return opset_of(""); }

int64_t Model::opset_of(std::string_view domain_name) const {
  auto canonical = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  for (const OpsetImport& import : opset_imports) {
    if (canonical(import.domain) == canonical(domain_name)) return import.version;
  }
  return 0;
}

}  // namespace stitch::ir
