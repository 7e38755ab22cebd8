// Lexicon shared by the textual IR's printer and parser: the header word, reserved
// keys and op words, identifier classes, canonical NaN bits and opaque attribute kinds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/attribute.h"
#include "ir/core/dtype.h"

namespace stitch::ir::text_lexicon {

constexpr std::string_view kHeader = "stitchopt.ir";
constexpr int64_t kTextVersion = 1;

// The origin an imported node has: itself. The printer omits an origin equal to it,
// and the parser restores it, so text of freshly imported graphs stays short.
inline std::vector<std::string> default_origin(const std::string& node_name) {
  if (node_name.empty()) return {};
  return {node_name};
}

// Node fields written as bare keys in a node's {...}; attributes with these names
// are written with quoted keys.
inline bool is_reserved_node_key(std::string_view key) {
  return key == "name" || key == "domain" || key == "opset" || key == "origin" ||
         key == "implicit" || key == "doc";
}

// Words the body grammar gives a meaning; op types spelled like them are quoted.
inline bool is_reserved_op_word(std::string_view word) {
  return word == "return" || word == "dense" || word == "undefined";
}

inline bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }
// Characters of a bare value name after '%' ("/model/layers.0/Add_output_0").
inline bool is_bare_name_char(char c) {
  return is_identifier_char(c) || c == '.' || c == '-' || c == '/';
}

inline bool is_identifier(std::string_view text) {
  if (text.empty() || !is_identifier_start(text[0])) return false;
  return std::all_of(text.begin(), text.end(), is_identifier_char);
}

// Canonical quiet NaNs: the bits a bare `nan` stands for, per element type.
constexpr uint32_t kFloatNan = 0x7fc00000u;
constexpr uint64_t kDoubleNan = 0x7ff8000000000000u;
constexpr uint16_t kHalfNan = 0x7e00u;
constexpr uint16_t kBFloat16Nan = 0x7fc0u;

// Opaque attribute kinds, written as `kind<hex"...">`.
struct OpaqueKindName {
  AttributeKind kind;
  std::string_view name;
};
constexpr OpaqueKindName kOpaqueKinds[] = {
    {AttributeKind::kUndefined, "undefined"},
    {AttributeKind::kGraph, "graph"},
    {AttributeKind::kGraphs, "graphs"},
    {AttributeKind::kSparseTensor, "sparse_tensor"},
    {AttributeKind::kSparseTensors, "sparse_tensors"},
    {AttributeKind::kTypeProto, "type_proto"},
    {AttributeKind::kTypeProtos, "type_protos"},
};

// Elements in a tensor's value list: complex numbers are written as two floats.
inline int64_t list_width(DType dtype) {
  return dtype == DType::kComplex64 || dtype == DType::kComplex128 ? 2 : 1;
}

// Number of elements when every dim is non-negative and the count is sane.
inline std::optional<int64_t> element_count(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return std::nullopt;
    if (dim != 0 && count > std::numeric_limits<int32_t>::max() / dim) return std::nullopt;
    count *= dim;
  }
  return count;
}

}  // namespace stitch::ir::text_lexicon
