// A default-domain node against ONNX's operator schemas (node_schema_check.h).
#include "onnx_import/node_schema_check.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "ir/core/dtype.h"
#include "ir/core/edit_distance.h"

namespace stitch::onnx_import {
namespace {

constexpr int64_t kNewestSchemaOpset = 17;  // Debian's ONNX 1.12

// Operators of opsets 18 to 21 that ONNX 1.12 has no schema for, by first opset.
const std::map<std::string_view, int64_t> kOperatorsAfterOpset17 = {
    {"AffineGrid", 20},     {"BitwiseAnd", 18},         {"BitwiseNot", 18},   {"BitwiseOr", 18},
    {"BitwiseXor", 18},     {"CenterCropPad", 18},      {"Col2Im", 18},       {"DeformConv", 19},
    {"Gelu", 20},           {"GroupNormalization", 18}, {"ImageDecoder", 20}, {"Mish", 18},
    {"RegexFullMatch", 20}, {"StringConcat", 20},       {"StringSplit", 20},
};

// Int attributes that name a data type, with the types ONNX 1.17's type constraints
// let each take. Any other value is a bad model, not something to compile: a
// LayerNormalization with stash_type 99 decomposed into a Cast to type 99, and an
// EyeLike or RandomNormal with one is passed on to a runtime that refuses it.
struct DTypeAttribute {
  std::string_view op;
  std::string_view attribute;
  std::vector<ir::DType> allowed;  // in increasing TensorProto.DataType order
  // QuantizeLinear's output_dtype 0 means "the zero point's type".
  bool zero_means_unset = false;
};

const std::vector<DTypeAttribute>& dtype_attributes() {
  using ir::DType;
  static const std::vector<DType> kFloats = {DType::kFloat32, DType::kFloat16, DType::kFloat64};
  static const std::vector<DType> kNumericOrBool = {
      DType::kFloat32, DType::kUInt8,   DType::kInt8,   DType::kUInt16,
      DType::kInt16,   DType::kInt32,   DType::kInt64,  DType::kBool,
      DType::kFloat16, DType::kFloat64, DType::kUInt32, DType::kUInt64};
  static const std::vector<DTypeAttribute> kAttributes = {
      {"LayerNormalization", "stash_type", {DType::kFloat32, DType::kBFloat16}},
      {"GroupNormalization",
       "stash_type",
       {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kBFloat16}},
      {"EyeLike", "dtype", kNumericOrBool},
      {"RandomNormal", "dtype", kFloats},
      {"RandomUniform", "dtype", kFloats},
      {"RandomNormalLike", "dtype", kFloats},
      {"RandomUniformLike", "dtype", kFloats},
      {"Multinomial", "dtype", {DType::kInt32, DType::kInt64}},
      {"Bernoulli",
       "dtype",
       {DType::kFloat32, DType::kUInt8, DType::kInt8, DType::kUInt16, DType::kInt16, DType::kInt32,
        DType::kInt64, DType::kBool, DType::kFloat16, DType::kFloat64, DType::kUInt32,
        DType::kUInt64, DType::kBFloat16}},
      // The float8 and 4-bit types it also takes have no DType: stitchopt reads no
      // tensor of them.
      {"QuantizeLinear",
       "output_dtype",
       {DType::kUInt8, DType::kInt8, DType::kUInt16, DType::kInt16},
       true},
  };
  return kAttributes;
}

// ok, or the error for an attribute of `node` that names a data type the op does
// not take.
Status check_dtype_attributes(const onnx::NodeProto& node, const std::string& label) {
  for (const DTypeAttribute& entry : dtype_attributes()) {
    if (node.op_type() != entry.op) continue;
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.name() != entry.attribute || attribute.type() != onnx::AttributeProto::INT) {
        continue;
      }
      bool allowed = (entry.zero_means_unset && attribute.i() == 0) ||
                     std::any_of(entry.allowed.begin(), entry.allowed.end(), [&](ir::DType dtype) {
                       return static_cast<int64_t>(dtype) == attribute.i();
                     });
      if (allowed) continue;
      std::string choices = entry.zero_means_unset ? "0 (the zero point's type), " : "";
      for (size_t i = 0; i < entry.allowed.size(); ++i) {
        if (i > 0) choices += i + 1 == entry.allowed.size() ? " or " : ", ";
        choices += std::to_string(static_cast<int>(entry.allowed[i])) + " (" +
                   std::string(ir::dtype_onnx_name(entry.allowed[i])) + ")";
      }
      return Status::invalid_input(label + ": attribute \"" + attribute.name() + "\" is " +
                                   std::to_string(attribute.i()) + ", which is no data type " +
                                   node.op_type() + " takes there; set it to " + choices);
    }
  }
  return Status::ok();
}

const char* type_name(onnx::AttributeProto::AttributeType type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return "a float";
    case onnx::AttributeProto::INT:
      return "an int";
    case onnx::AttributeProto::STRING:
      return "a string";
    case onnx::AttributeProto::TENSOR:
      return "a tensor";
    case onnx::AttributeProto::GRAPH:
      return "a graph";
    case onnx::AttributeProto::SPARSE_TENSOR:
      return "a sparse tensor";
    case onnx::AttributeProto::TYPE_PROTO:
      return "a type";
    case onnx::AttributeProto::FLOATS:
      return "a list of floats";
    case onnx::AttributeProto::INTS:
      return "a list of ints";
    case onnx::AttributeProto::STRINGS:
      return "a list of strings";
    case onnx::AttributeProto::TENSORS:
      return "a list of tensors";
    case onnx::AttributeProto::GRAPHS:
      return "a list of graphs";
    case onnx::AttributeProto::SPARSE_TENSORS:
      return "a list of sparse tensors";
    case onnx::AttributeProto::TYPE_PROTOS:
      return "a list of types";
    default:
      return "of no type";
  }
}

}  // namespace

Status check_node_schema(const onnx::NodeProto& node, int64_t opset, const std::string& label) {
  const std::string& op = node.op_type();
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(op, static_cast<int>(std::min(opset, kNewestSchemaOpset)), "");
  if (schema == nullptr) {
    int64_t first = 0;
    if (auto later = kOperatorsAfterOpset17.find(op); later != kOperatorsAfterOpset17.end()) {
      first = later->second;
    } else if (const onnx::OpSchema* any = onnx::OpSchemaRegistry::Schema(op, 1000, "")) {
      first = any->SinceVersion();
    }
    if (first == 0) {
      std::vector<std::string> known;
      for (const onnx::OpSchema& candidate : onnx::OpSchemaRegistry::get_all_schemas()) {
        if (candidate.domain().empty()) known.push_back(candidate.Name());
      }
      for (const auto& [name, since] : kOperatorsAfterOpset17) known.emplace_back(name);
      std::optional<std::string> near =
          ir::closest_match(op, known, std::max<size_t>(2, op.size() / 3));
      return Status::invalid_input(
          label + " is not an operator of the default ONNX domain" +
          (near ? " (did you mean " + *near + "?)" : std::string()) +
          "; ONNX Runtime refuses such a model: fix the op type, or give a custom op a "
          "domain of its own");
    }
    if (first > opset) {
      return Status::invalid_input(label + " needs default-domain opset " + std::to_string(first) +
                                   " or newer, but the model imports opset " +
                                   std::to_string(opset) +
                                   "; convert the model with onnx.version_converter");
    }
    // An operator of opsets 18 to 21: no schema to check the attribute types against.
    return check_dtype_attributes(node, label);
  }
  const auto& attributes = schema->attributes();
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (!attribute.ref_attr_name().empty()) continue;  // bound by a function call
    auto expected = attributes.find(attribute.name());
    if (expected == attributes.end()) {
      if (opset > kNewestSchemaOpset) continue;
      std::vector<std::string> names;
      for (const auto& [name, ignored] : attributes) names.push_back(name);
      std::optional<std::string> near = ir::closest_match(attribute.name(), names);
      return Status::invalid_input(label + " has attribute \"" + attribute.name() + "\", which " +
                                   op + " does not take" +
                                   (near ? " (did you mean \"" + *near + "\"?)" : std::string()) +
                                   "; remove it or re-export the model");
    }
    if (attribute.type() != expected->second.type) {
      return Status::invalid_input(label + ": attribute \"" + attribute.name() + "\" is " +
                                   type_name(attribute.type()) + ", but " + op + " takes " +
                                   type_name(expected->second.type) +
                                   "; re-export the model (the ONNX checker rejects it too)");
    }
  }
  if (opset <= kNewestSchemaOpset) {
    for (const auto& entry : attributes) {
      const onnx::OpSchema::Attribute& expected = entry.second;
      if (!expected.required) continue;
      bool present =
          std::any_of(node.attribute().begin(), node.attribute().end(),
                      [&](const onnx::AttributeProto& a) { return a.name() == entry.first; });
      if (!present) {
        return Status::invalid_input(label + " lacks the required attribute \"" + entry.first +
                                     "\" (" + type_name(expected.type) + "); re-export the model");
      }
    }
  }
  return check_dtype_attributes(node, label);
}

}  // namespace stitch::onnx_import
