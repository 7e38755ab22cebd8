// Node attributes.
#include "ir/core/attribute.h"

namespace stitch::ir {

Attribute Attribute::make_int(std::string name, int64_t value) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kInt;
  attribute.i = value;
  return attribute;
}

Attribute Attribute::make_float(std::string name, float value) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kFloat;
  attribute.f = value;
  return attribute;
}

Attribute Attribute::make_string(std::string name, std::string value) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kString;
  attribute.s = std::move(value);
  return attribute;
}

Attribute Attribute::make_ints(std::string name, std::vector<int64_t> values) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

Attribute Attribute::make_floats(std::string name, std::vector<float> values) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kFloats;
  attribute.floats = std::move(values);
  return attribute;
}

Attribute Attribute::make_strings(std::string name, std::vector<std::string> values) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kStrings;
  attribute.strings = std::move(values);
  return attribute;
}

Attribute Attribute::make_tensor(std::string name, Tensor value) {
  Attribute attribute;
  attribute.name = std::move(name);
  attribute.kind = AttributeKind::kTensor;
  attribute.tensor = std::make_shared<const Tensor>(std::move(value));
  return attribute;
}

bool Attribute::operator==(const Attribute& other) const {
  bool tensors_equal = (tensor == nullptr) == (other.tensor == nullptr) &&
                       (tensor == nullptr || *tensor == *other.tensor);
  return name == other.name && kind == other.kind && i == other.i &&
         (f == other.f || (f != f && other.f != other.f)) && s == other.s && ints == other.ints &&
         floats == other.floats && strings == other.strings && tensors_equal &&
         tensors == other.tensors && opaque_proto == other.opaque_proto &&
         ref_attr_name == other.ref_attr_name && doc_string == other.doc_string;
}

}  // namespace stitch::ir
