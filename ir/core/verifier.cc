// The IR verifier: checks the invariants every pass must keep.
//
// Checks run in a fixed order, each over ids in increasing order, and the first
// problem is returned, so the same broken graph always gives the same message:
//  1. values: non-empty unique names, producer links, user links, no producer for
//     initializers;
//  2. graph inputs (no producer) and graph outputs (live and defined);
//  3. nodes: inputs, implicit inputs and outputs agree with the values' links;
//  4. acyclic (topological_order);
//  5. registry ops: input/output counts within the schema, and recorded types agree
//     with the op's shape rule where every input type is known.
#include "ir/core/verifier.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"

namespace stitch::ir {
namespace {

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

class Verifier {
 public:
  explicit Verifier(const Model& model) : model_(model), graph_(model.graph) {}

  Status run() {
    STITCH_RETURN_IF_ERROR(check_values());
    STITCH_RETURN_IF_ERROR(check_graph_inputs_and_outputs());
    STITCH_RETURN_IF_ERROR(check_nodes());
    STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph_));
    return check_schemas(order);
  }

 private:
  bool valid_value(ValueId id) const { return id >= 0 && id < graph_.value_capacity(); }
  bool valid_node(NodeId id) const { return id >= 0 && id < graph_.node_capacity(); }

  std::string value_label(ValueId id) const {
    const Value& value = graph_.value(id);
    return value.name.empty() ? "#" + std::to_string(id) : quoted(value.name);
  }

  // The value a node's input slot (implicit inputs after the inputs) holds, or
  // nullopt when the slot is out of range.
  std::optional<ValueId> slot_value(const Node& node, int32_t slot) const {
    if (slot < 0) return std::nullopt;
    auto index = static_cast<size_t>(slot);
    if (index < node.inputs.size()) return node.inputs[index];
    index -= node.inputs.size();
    if (index < node.implicit_inputs.size()) return node.implicit_inputs[index];
    return std::nullopt;
  }

  // Defined: a graph input, an initializer, or the output of a live node.
  bool is_defined(const Value& value) const {
    if (value.is_graph_input || value.is_initializer()) return true;
    return value.producer != kNoId && valid_node(value.producer) &&
           !graph_.node(value.producer).dead;
  }

  Status check_values() {
    std::unordered_map<std::string_view, ValueId> by_name;
    for (ValueId id = 0; id < graph_.value_capacity(); ++id) {
      const Value& value = graph_.value(id);
      if (value.dead) continue;
      if (value.name.empty()) {
        return Status::invalid_input("value #" + std::to_string(id) +
                                     " has an empty name; every value needs a unique name");
      }
      auto [it, inserted] = by_name.emplace(value.name, id);
      if (!inserted) {
        return Status::invalid_input("values #" + std::to_string(it->second) + " and #" +
                                     std::to_string(id) + " are both named " + quoted(value.name) +
                                     "; value names must be unique");
      }
      if (value.producer != kNoId) {
        if (value.constant != nullptr) {
          return Status::invalid_input("value " + value_label(id) +
                                       " has constant data and a producer; only values "
                                       "without a producer (initializers) may hold data");
        }
        if (!valid_node(value.producer) || graph_.node(value.producer).dead) {
          return Status::invalid_input("value " + value_label(id) + " names node #" +
                                       std::to_string(value.producer) +
                                       " as its producer, which is dead or does not exist");
        }
        const Node& producer = graph_.node(value.producer);
        auto slot = static_cast<size_t>(value.producer_output);
        if (value.producer_output < 0 || slot >= producer.outputs.size() ||
            producer.outputs[slot] != id) {
          return Status::invalid_input("value " + value_label(id) + " names node " +
                                       producer.display_name() + " output " +
                                       std::to_string(value.producer_output) +
                                       " as its producer, but that output is another value");
        }
      }
      for (const Use& use : value.users) {
        std::optional<ValueId> held;
        if (valid_node(use.node) && !graph_.node(use.node).dead) {
          held = slot_value(graph_.node(use.node), use.slot);
        }
        if (held != id) {
          std::string user = valid_node(use.node) ? graph_.node(use.node).display_name()
                                                  : "#" + std::to_string(use.node);
          return Status::invalid_input("value " + value_label(id) + " lists node " + user +
                                       " input " + std::to_string(use.slot) +
                                       " as a user, but that node is dead or reads another "
                                       "value there");
        }
      }
    }
    return Status::ok();
  }

  Status check_graph_inputs_and_outputs() {
    for (ValueId id : graph_.graph_inputs()) {
      if (!valid_value(id) || graph_.value(id).dead) {
        return Status::invalid_input("graph input #" + std::to_string(id) +
                                     " is a dead or missing value");
      }
      const Value& value = graph_.value(id);
      if (value.producer != kNoId) {
        return Status::invalid_input("graph input " + value_label(id) + " is produced by node " +
                                     graph_.node(value.producer).display_name() +
                                     "; graph inputs must not have a producer");
      }
    }
    for (ValueId id : graph_.graph_outputs()) {
      if (!valid_value(id) || graph_.value(id).dead) {
        return Status::invalid_input("graph output #" + std::to_string(id) +
                                     " is a dead or missing value");
      }
      if (!is_defined(graph_.value(id))) {
        return Status::invalid_input("graph output " + value_label(id) +
                                     " is not defined: it is no graph input or initializer "
                                     "and no live node produces it");
      }
    }
    return Status::ok();
  }

  Status check_nodes() {
    // seen[offset[node] + slot]: the value's users list (node, slot) once already.
    std::vector<size_t> offset(static_cast<size_t>(graph_.node_capacity()) + 1, 0);
    for (NodeId id = 0; id < graph_.node_capacity(); ++id) {
      const Node& node = graph_.node(id);
      offset[static_cast<size_t>(id) + 1] =
          offset[static_cast<size_t>(id)] + node.inputs.size() + node.implicit_inputs.size();
    }
    std::vector<bool> seen(offset.back(), false);
    for (ValueId id = 0; id < graph_.value_capacity(); ++id) {
      const Value& value = graph_.value(id);
      if (value.dead) continue;
      for (const Use& use : value.users) {  // all valid: check_values ran
        size_t index = offset[static_cast<size_t>(use.node)] + static_cast<size_t>(use.slot);
        if (seen[index]) {
          return Status::invalid_input("value " + value_label(id) + " lists node " +
                                       graph_.node(use.node).display_name() + " input " +
                                       std::to_string(use.slot) + " twice among its users");
        }
        seen[index] = true;
      }
    }
    for (NodeId id = 0; id < graph_.node_capacity(); ++id) {
      const Node& node = graph_.node(id);
      if (node.dead) continue;
      const size_t total_inputs = node.inputs.size() + node.implicit_inputs.size();
      for (size_t slot = 0; slot < total_inputs; ++slot) {
        bool implicit = slot >= node.inputs.size();
        ValueId input =
            implicit ? node.implicit_inputs[slot - node.inputs.size()] : node.inputs[slot];
        std::string where =
            "node " + node.display_name() + ": " +
            (implicit ? "implicit input " + std::to_string(slot - node.inputs.size())
                      : "input " + std::to_string(slot));
        if (input == kNoId) {
          if (implicit)
            return Status::invalid_input(where + " is omitted; implicit inputs can't be");
          continue;
        }
        if (!valid_value(input)) {
          return Status::invalid_input(where + " reads value #" + std::to_string(input) +
                                       ", which does not exist");
        }
        const Value& value = graph_.value(input);
        if (value.dead) {
          return Status::invalid_input(where + " reads dead value " + value_label(input));
        }
        if (!is_defined(value)) {
          return Status::invalid_input(where + " reads value " + value_label(input) +
                                       ", which is no graph input or initializer and has no "
                                       "live producer");
        }
        if (!seen[offset[static_cast<size_t>(id)] + slot]) {
          return Status::invalid_input(where + " reads value " + value_label(input) +
                                       ", but the value does not list it among its users");
        }
      }
      for (size_t slot = 0; slot < node.outputs.size(); ++slot) {
        ValueId output = node.outputs[slot];
        if (output == kNoId) continue;
        std::string where = "node " + node.display_name() + ": output " + std::to_string(slot);
        if (!valid_value(output)) {
          return Status::invalid_input(where + " is value #" + std::to_string(output) +
                                       ", which does not exist");
        }
        const Value& value = graph_.value(output);
        if (value.dead)
          return Status::invalid_input(where + " is dead value " + value_label(output));
        if (value.producer != id || value.producer_output != static_cast<int32_t>(slot)) {
          return Status::invalid_input(where + " is value " + value_label(output) +
                                       ", but the value's producer is another node or slot");
        }
      }
    }
    return Status::ok();
  }

  static std::string count_range(int min, int max) {
    if (max < 0) return "at least " + std::to_string(min);
    if (min == max) return std::to_string(min);
    return std::to_string(min) + " to " + std::to_string(max);
  }

  // Known enough to run a shape rule on: dtype defined and rank known.
  static bool type_known(const TensorType& type) {
    return type.dtype != DType::kUndefined && type.has_shape;
  }

  // A recorded type agrees with the rule's when nothing both know differs.
  static bool types_agree(const TensorType& recorded, const TensorType& inferred) {
    if (recorded.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined &&
        recorded.dtype != inferred.dtype) {
      return false;
    }
    if (!recorded.has_shape || !inferred.has_shape) return true;
    if (recorded.dims.size() != inferred.dims.size()) return false;
    for (size_t i = 0; i < recorded.dims.size(); ++i) {
      if (recorded.dims[i] >= 0 && inferred.dims[i] >= 0 && recorded.dims[i] != inferred.dims[i]) {
        return false;
      }
    }
    return true;
  }

  Status check_counts(const Node& node, const OpSchema& schema) const {
    auto inputs = static_cast<int>(node.inputs.size());
    auto outputs = static_cast<int>(node.outputs.size());
    if (inputs < schema.min_inputs || (schema.max_inputs >= 0 && inputs > schema.max_inputs)) {
      return Status::invalid_input("node " + node.display_name() + ": has " +
                                   std::to_string(inputs) + " inputs; " + node.op_type + " takes " +
                                   count_range(schema.min_inputs, schema.max_inputs));
    }
    if (outputs < schema.min_outputs || (schema.max_outputs >= 0 && outputs > schema.max_outputs)) {
      return Status::invalid_input("node " + node.display_name() + ": has " +
                                   std::to_string(outputs) + " outputs; " + node.op_type +
                                   " gives " + count_range(schema.min_outputs, schema.max_outputs));
    }
    return Status::ok();
  }

  // Counts in id order first; then shape rules in topological order (so values
  // propagated through shape chains reach their readers), keeping the problem of
  // the smallest node id.
  Status check_schemas(const std::vector<NodeId>& order) {
    for (NodeId id = 0; id < graph_.node_capacity(); ++id) {
      const Node& node = graph_.node(id);
      if (node.dead) continue;
      const OpSchema* schema = find_op_schema(node.domain, node.op_type);
      if (schema != nullptr) STITCH_RETURN_IF_ERROR(check_counts(node, *schema));
    }
    std::vector<std::optional<std::vector<int64_t>>> int_values(
        static_cast<size_t>(graph_.value_capacity()));
    NodeId first_bad = kNoId;
    Status first_problem;
    for (NodeId id : order) {
      Status problem = check_rule(graph_.node(id), int_values);
      if (!problem.is_ok() && (first_bad == kNoId || id < first_bad)) {
        first_bad = id;
        first_problem = problem;
      }
    }
    return first_problem;
  }

  Status check_rule(const Node& node,
                    std::vector<std::optional<std::vector<int64_t>>>& int_values) const {
    const OpSchema* schema = find_op_schema(node.domain, node.op_type);
    int64_t opset = node.opset_or(model_.opset_of(node.domain));
    if (schema == nullptr || !schema->infer || opset < schema->min_opset) return Status::ok();
    ShapeInferenceContext context{.node = node,
                                  .opset = opset,
                                  .input_types = {},
                                  .input_values = {},
                                  .input_int_values = {},
                                  .model_path = {},
                                  .input_names = {}};
    for (ValueId input : node.inputs) {
      if (input == kNoId) {
        context.input_names.emplace_back();
        context.input_types.push_back(nullptr);
        context.input_values.push_back(nullptr);
        context.input_int_values.emplace_back();
        continue;
      }
      const Value& value = graph_.value(input);
      if (!type_known(value.type)) return Status::ok();
      context.input_names.emplace_back(value.name);
      context.input_types.push_back(&value.type);
      context.input_values.push_back(value.constant.get());
      context.input_int_values.push_back(int_values[static_cast<size_t>(input)]);
    }
    Result<ShapeInferenceResult> inferred = schema->infer(context);
    if (!inferred.is_ok()) {
      return Status::invalid_input(
          "node " + node.display_name() +
          ": the op's shape rule rejects the node: " + inferred.status().message());
    }
    for (size_t slot = 0; slot < node.outputs.size(); ++slot) {
      ValueId output = node.outputs[slot];
      if (output == kNoId || slot >= inferred->output_types.size()) continue;
      const Value& value = graph_.value(output);
      const TensorType& rule_type = inferred->output_types[slot];
      if (!types_agree(value.type, rule_type)) {
        return Status::invalid_input("node " + node.display_name() + ": output " +
                                     std::to_string(slot) + " " + value_label(output) +
                                     " is recorded as " + to_string(value.type) +
                                     " but the op's shape rule gives " + to_string(rule_type));
      }
      if (slot < inferred->output_int_values.size()) {
        int_values[static_cast<size_t>(output)] = inferred->output_int_values[slot];
      }
    }
    return Status::ok();
  }

  const Model& model_;
  const Graph& graph_;
};

}  // namespace

Status verify(const Model& model) { return Verifier(model).run(); }

}  // namespace stitch::ir
