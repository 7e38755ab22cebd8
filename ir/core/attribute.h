// Node attributes, numbered as ONNX's AttributeProto.AttributeType.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/core/tensor.h"

namespace stitch::ir {

enum class AttributeKind : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

// One attribute. Only the field matching `kind` is meaningful. Kinds the compiler
// never looks inside (graphs, sparse tensors, type protos) keep the serialized
// AttributeProto in `opaque_proto`, so control-flow and unknown ops pass through
// byte for byte.
struct Attribute {
  std::string name;
  AttributeKind kind = AttributeKind::kUndefined;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<const Tensor> tensor;
  std::vector<Tensor> tensors;
  std::string opaque_proto;
  std::string ref_attr_name;  // set inside function bodies: refers to a caller attribute
  std::string doc_string;

  static Attribute make_int(std::string name, int64_t value);
  static Attribute make_float(std::string name, float value);
  static Attribute make_string(std::string name, std::string value);
  static Attribute make_ints(std::string name, std::vector<int64_t> values);
  static Attribute make_floats(std::string name, std::vector<float> values);
  static Attribute make_strings(std::string name, std::vector<std::string> values);
  static Attribute make_tensor(std::string name, Tensor value);

  bool operator==(const Attribute& other) const;
};

}  // namespace stitch::ir
