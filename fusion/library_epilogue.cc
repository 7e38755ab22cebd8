// A library call's epilogue: names, the fused node's attributes, the body binding.
#include "fusion/library_epilogue.h"

#include <cstddef>
#include <utility>

#include "ir/core/analysis.h"

namespace stitch::fusion {
namespace {

constexpr Library kLibraries[] = {Library::kCublasLt, Library::kCudnn};
constexpr EpilogueOp kEpilogueOps[] = {EpilogueOp::kBias, EpilogueOp::kResidualAdd,
                                       EpilogueOp::kRelu};

std::optional<BoundEpilogue> refuse(std::string* why_not, std::string why) {
  *why_not = std::move(why);
  return std::nullopt;
}

// Binds `operand`, read by an op of kind `op`, as the chain's bias or residual.
bool bind_operand(EpilogueOp op, ir::ValueId operand, BoundEpilogue* bound) {
  ir::ValueId& slot = op == EpilogueOp::kBias ? bound->bias : bound->residual;
  if (op == EpilogueOp::kRelu || slot != ir::kNoId) return false;
  slot = operand;
  return true;
}

}  // namespace

std::string_view library_name(Library library) {
  switch (library) {
    case Library::kCublasLt:
      return "cuBLASLt";
    case Library::kCudnn:
      return "cuDNN";
  }
  return "";
}

std::string_view epilogue_op_name(EpilogueOp op) {
  switch (op) {
    case EpilogueOp::kBias:
      return "bias";
    case EpilogueOp::kResidualAdd:
      return "residual add";
    case EpilogueOp::kRelu:
      return "relu";
  }
  return "";
}

std::vector<std::string> LibraryEpilogue::op_names() const {
  std::vector<std::string> names;
  for (EpilogueOp op : ops) names.emplace_back(epilogue_op_name(op));
  return names;
}

std::vector<ir::Attribute> epilogue_attributes(const LibraryEpilogue& epilogue) {
  return {ir::Attribute::make_string("library", std::string(library_name(epilogue.library))),
          ir::Attribute::make_strings("epilogue", epilogue.op_names())};
}

Result<LibraryEpilogue> read_epilogue_attributes(const ir::Node& node) {
  const std::string where = "node " + node.display_name() + ": ";
  const ir::Attribute* library = node.find_attribute("library");
  const ir::Attribute* ops = node.find_attribute("epilogue");
  if (library == nullptr || library->kind != ir::AttributeKind::kString || ops == nullptr ||
      ops->kind != ir::AttributeKind::kStrings) {
    return Status::invalid_input(where + "a library call needs the string attribute \"library\" " +
                                 "and the strings attribute \"epilogue\"; recompile the model");
  }
  LibraryEpilogue epilogue;
  bool known = false;
  for (Library candidate : kLibraries) {
    if (library->s == library_name(candidate)) {
      epilogue.library = candidate;
      known = true;
    }
  }
  if (!known) {
    return Status::invalid_input(where + "library \"" + library->s +
                                 "\" is neither cuBLASLt nor cuDNN; recompile the model");
  }
  for (const std::string& name : ops->strings) {
    known = false;
    for (EpilogueOp candidate : kEpilogueOps) {
      if (name == epilogue_op_name(candidate)) {
        epilogue.ops.push_back(candidate);
        known = true;
      }
    }
    if (!known) {
      return Status::invalid_input(where + "epilogue op \"" + name +
                                   "\" is not bias, residual add or relu; recompile the model");
    }
  }
  return epilogue;
}

std::optional<BoundEpilogue> bind_epilogue(const ir::Graph& body, const LibraryEpilogue& epilogue,
                                           std::string* why_not) {
  Result<std::vector<ir::NodeId>> order = ir::topological_order(body);
  if (!order.is_ok()) return refuse(why_not, order.status().message());
  if (order->empty()) return refuse(why_not, "the step's body is empty");
  BoundEpilogue bound;
  bound.call = (*order)[0];
  const ir::Node& call = body.node(bound.call);
  if (call.outputs.empty() || call.outputs[0] == ir::kNoId) {
    return refuse(why_not, call.display_name() + " has no first output");
  }
  size_t next = 0;  // the next op of `epilogue` to bind
  if (call.inputs.size() > 2 && call.inputs[2] != ir::kNoId) {
    if (next >= epilogue.ops.size() || !bind_operand(epilogue.ops[next], call.inputs[2], &bound)) {
      return refuse(why_not, call.display_name() +
                                 "'s third operand is not the epilogue's bias or residual add");
    }
    if (bound.residual != ir::kNoId && call.op_type == "Gemm") {
      bound.residual_scale = call.float_attribute("beta", 1.0f);
    }
    ++next;
  }
  ir::ValueId value = call.outputs[0];
  for (size_t i = 1; i < order->size(); ++i) {
    const ir::Node& node = body.node((*order)[i]);
    if (bound.relu) return refuse(why_not, "an op (" + node.display_name() + ") follows the Relu");
    if (next >= epilogue.ops.size()) {
      return refuse(why_not, node.display_name() + " is not one of the epilogue's " +
                                 std::to_string(epilogue.ops.size()) + " ops");
    }
    const EpilogueOp op = epilogue.ops[next++];
    if (!node.domain.empty() || node.outputs.size() != 1 || node.outputs[0] == ir::kNoId) {
      return refuse(why_not, node.display_name() + " is not an epilogue op with one output");
    }
    if (op == EpilogueOp::kRelu && node.op_type == "Relu" && node.inputs.size() == 1 &&
        node.inputs[0] == value) {
      bound.relu = true;
    } else if (op != EpilogueOp::kRelu && node.op_type == "Add" && node.inputs.size() == 2 &&
               (node.inputs[0] == value) != (node.inputs[1] == value)) {
      if (!bind_operand(op, node.inputs[node.inputs[0] == value ? 1 : 0], &bound)) {
        return refuse(why_not,
                      node.display_name() + " is a second " + std::string(epilogue_op_name(op)));
      }
    } else {
      return refuse(why_not, node.display_name() + " is not the epilogue's " +
                                 std::string(epilogue_op_name(op)) + " of the previous output");
    }
    value = node.outputs[0];
  }
  if (next != epilogue.ops.size()) {
    return refuse(why_not, "the epilogue names " + std::to_string(epilogue.ops.size()) +
                               " ops, the step's body applies " + std::to_string(next));
  }
  bound.output = value;
  return bound;
}

}  // namespace stitch::fusion
