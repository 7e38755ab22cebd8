// The canonical text of a fused group, read from the IR (see canonical_group.h).
#include "emit/canonical_group.h"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <unordered_map>

#include "emit/cuda_text.h"

namespace stitch::emit {
namespace {

// A string with its length first: "5:hello".
void append_text(std::string& out, const std::string& text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

void append_float(std::string& out, float value) {
  char bits[16];
  std::snprintf(bits, sizeof(bits), "%08x", std::bit_cast<uint32_t>(value));
  out += bits;
}

void append_tensor(std::string& out, const ir::Tensor& tensor) {
  out += "tensor<" + ir::to_string(tensor.type()) + " ";
  append_text(out, tensor.bytes);
  for (const std::string& element : tensor.strings) {
    out += ' ';
    append_text(out, element);
  }
  out += '>';
}

void append_attribute(std::string& out, const ir::Attribute& attribute) {
  append_text(out, attribute.name);
  out += '=' + std::to_string(static_cast<int32_t>(attribute.kind)) + ':';
  switch (attribute.kind) {
    case ir::AttributeKind::kInt:
      out += std::to_string(attribute.i);
      break;
    case ir::AttributeKind::kFloat:
      append_float(out, attribute.f);
      break;
    case ir::AttributeKind::kString:
      append_text(out, attribute.s);
      break;
    case ir::AttributeKind::kInts:
      for (int64_t value : attribute.ints) out += std::to_string(value) + ',';
      break;
    case ir::AttributeKind::kFloats:
      for (float value : attribute.floats) {
        append_float(out, value);
        out += ',';
      }
      break;
    case ir::AttributeKind::kStrings:
      for (const std::string& value : attribute.strings) append_text(out, value);
      break;
    case ir::AttributeKind::kTensor:
      if (attribute.tensor != nullptr) append_tensor(out, *attribute.tensor);
      break;
    case ir::AttributeKind::kTensors:
      for (const ir::Tensor& tensor : attribute.tensors) append_tensor(out, tensor);
      break;
    default:
      append_text(out, attribute.opaque_proto);
      break;
  }
  out += " ref=";
  append_text(out, attribute.ref_attr_name);
  out += ';';
}

}  // namespace

std::string canonical_group_text(const ir::Model& model, const GroupBoundary& boundary) {
  const ir::Graph& graph = model.graph;
  std::unordered_map<ir::ValueId, std::string> names;
  std::string text = "in";
  for (size_t i = 0; i < boundary.inputs.size(); ++i) {
    names[boundary.inputs[i]] = "x" + std::to_string(i);
    const ir::Value& input = graph.value(boundary.inputs[i]);
    text += " x" + std::to_string(i) + ":" + ir::to_string(input.type);
    // The code generator folds integer constant operands into the kernel text
    // (Slice starts, Pad pads, reduction axes, Trilu k: emit/cuda_text.h
    // constant_ints) and writes one-element constants as literals (is_baked_scalar),
    // so their values are part of what the kernel computes.
    if (input.constant != nullptr &&
        (ir::dtype_is_integer(input.constant->dtype) || input.constant->dtype == ir::DType::kBool ||
         is_baked_scalar(input))) {
      text += '=';
      append_tensor(text, *input.constant);
    }
  }
  text += "\nout";
  for (size_t i = 0; i < boundary.outputs.size(); ++i) {
    names[boundary.outputs[i]] = "y" + std::to_string(i);
    text += " y" + std::to_string(i) + ":" + ir::to_string(graph.value(boundary.outputs[i]).type);
  }
  int64_t internal = 0;
  // An output's name; an internal value also gets its type where it is defined.
  auto defined = [&](ir::ValueId id) -> std::string {
    if (id == ir::kNoId) return "_";
    auto [it, inserted] = names.try_emplace(id, "");
    if (!inserted) return it->second;
    it->second = "t" + std::to_string(internal++);
    return it->second + ":" + ir::to_string(graph.value(id).type);
  };
  auto read = [&](ir::ValueId id) -> std::string {
    if (id == ir::kNoId) return "_";
    auto it = names.find(id);
    return it != names.end() ? it->second : defined(id);
  };
  for (ir::NodeId id : boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    text += "\nnode ";
    append_text(text, node.op_type);
    text += ' ';
    append_text(text, node.domain);
    text += ' ' + std::to_string(node.opset_or(model.opset_of(node.domain))) + " (";
    for (ir::ValueId input : node.inputs) text += read(input) + ' ';
    text += ") -> (";
    for (ir::ValueId output : node.outputs) text += defined(output) + ' ';
    text += ") {";
    for (const ir::Attribute& attribute : node.attributes) append_attribute(text, attribute);
    text += '}';
  }
  return text;
}

}  // namespace stitch::emit
