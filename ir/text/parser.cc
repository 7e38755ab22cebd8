// The textual IR's parser (grammar in text.h).
#include "ir/text/text.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/text/lexicon.h"
#include "ir/text/scanner.h"

namespace stitch::ir {
namespace text_lexicon {
namespace {

// ---- parsing -------------------------------------------------------------------

// A value the text defines: a graph input, an initializer, an undefined value or a
// node output. Value ids are the definition order.
struct ValueDefinition {
  std::string name;
  TensorType type;
  bool type_from_model = false;
  bool is_graph_input = false;
  std::optional<Tensor> initializer;
};

// A value the text reads, resolved once everything is defined.
struct ValueReference {
  std::string name;
  size_t position = 0;
  bool omitted = false;  // `_`
};

struct NodeDefinition {
  Node node;  // everything but inputs, outputs and implicit inputs
  bool has_opset = false;
  bool has_origin = false;
  std::vector<ValueReference> inputs;
  std::vector<ValueId> outputs;  // definition index or kNoId
  std::vector<ValueReference> implicit_inputs;
};

class Parser : Scanner {
 public:
  Parser(std::string_view text, std::string_view source_name) : Scanner(text, source_name) {}

  Result<Model> parse() {
    Model model;
    // Every value is defined once with a '%': an upper bound that avoids rehashing.
    value_ids_.reserve(static_cast<size_t>(std::count(text_.begin(), text_.end(), '%')) / 2 + 16);
    STITCH_RETURN_IF_ERROR(parse_header());
    STITCH_RETURN_IF_ERROR(parse_model_line(model));
    STITCH_RETURN_IF_ERROR(parse_graph(model));
    skip_space();
    if (pos_ < text_.size()) return error_at(pos_, "expected end of input after the graph");
    STITCH_RETURN_IF_ERROR(build_graph(model));
    return model;
  }

 private:
  // ---- types and tensors ----

  Result<DType> dtype(std::string_view what) {
    size_t start = (skip_space(), pos_);
    std::string_view word = peek_identifier();
    std::optional<DType> parsed = dtype_from_name(word);
    if (!parsed) {
      return error_at(start, "unknown element type '" + std::string(word) + "' in " +
                                 std::string(what) +
                                 "; expected f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, "
                                 "u32, u64, bool, string, c64, c128 or undef");
    }
    pos_ += word.size();
    return *parsed;
  }

  // f32[2,?,3], f32[*], i64[]
  Result<TensorType> tensor_type() {
    TensorType type;
    STITCH_ASSIGN_OR_RETURN(type.dtype, dtype("a value type"));
    STITCH_RETURN_IF_ERROR(expect('[', "after the element type"));
    if (consume('*')) {
      STITCH_RETURN_IF_ERROR(expect(']', "after '*' (unknown rank)"));
      return type;
    }
    type.has_shape = true;
    if (consume(']')) return type;
    do {
      if (consume('?')) {
        type.dims.push_back(kUnknownDim);
        continue;
      }
      STITCH_ASSIGN_OR_RETURN(int64_t dim, integer("a dimension"));
      if (dim < 0) return error_at(number_start_, "dimensions must be >= 0 or '?'");
      type.dims.push_back(dim);
    } while (consume(','));
    STITCH_RETURN_IF_ERROR(expect(']', "to close the dimensions"));
    return type;
  }

  template <typename T>
  static void append_bytes(std::string& bytes, T value) {
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    bytes.append(raw, sizeof(T));
  }

  template <typename T>
  Status append_integer(std::string& bytes, std::string_view text, DType type) {
    if (looks_like_float(text)) {
      return error_at(number_start_, "expected an integer element of " +
                                         std::string(dtype_name(type)) + ", got '" +
                                         std::string(text) + "'");
    }
    T value{};
    auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc() || result.ptr != text.data() + text.size()) {
      return error_at(number_start_, "integer '" + std::string(text) + "' is out of range for " +
                                         std::string(dtype_name(type)));
    }
    append_bytes(bytes, value);
    return Status::ok();
  }

  Status append_element(std::string& bytes, DType type, std::string_view text) {
    std::optional<uint64_t> raw_bits;
    switch (type) {
      case DType::kFloat32:
      case DType::kComplex64: {
        STITCH_ASSIGN_OR_RETURN(float value, to_float32(text));
        append_bytes(bytes, value);
        return Status::ok();
      }
      case DType::kFloat64:
      case DType::kComplex128: {
        STITCH_ASSIGN_OR_RETURN(double value, to_floating(text, true, &raw_bits));
        if (raw_bits && !std::isnan(std::bit_cast<double>(*raw_bits))) {
          return error_at(number_start_, "'" + std::string(text) + "' is not a 64-bit NaN");
        }
        if (raw_bits) {
          value = std::bit_cast<double>(*raw_bits);
        } else if (std::isnan(value)) {
          value =
              std::bit_cast<double>(kDoubleNan | (std::signbit(value) ? 0x8000000000000000u : 0u));
        }
        append_bytes(bytes, value);
        return Status::ok();
      }
      case DType::kFloat16:
      case DType::kBFloat16: {
        bool bfloat = type == DType::kBFloat16;
        STITCH_ASSIGN_OR_RETURN(double value, to_floating(text, false, &raw_bits));
        uint16_t bits = 0;
        if (raw_bits) {
          float decoded = bfloat ? bfloat16_to_float(static_cast<uint16_t>(*raw_bits))
                                 : half_to_float(static_cast<uint16_t>(*raw_bits));
          if (*raw_bits > 0xffffu || !std::isnan(decoded)) {
            return error_at(number_start_, "'" + std::string(text) + "' is not a 16-bit NaN");
          }
          bits = static_cast<uint16_t>(*raw_bits);
        } else if (std::isnan(value)) {
          bits = static_cast<uint16_t>((bfloat ? kBFloat16Nan : kHalfNan) |
                                       (std::signbit(value) ? 0x8000u : 0u));
        } else {
          auto single = static_cast<float>(value);
          bits = bfloat ? float_to_bfloat16(single) : float_to_half(single);
        }
        append_bytes(bytes, bits);
        return Status::ok();
      }
      case DType::kInt8:
        return append_integer<int8_t>(bytes, text, type);
      case DType::kInt16:
        return append_integer<int16_t>(bytes, text, type);
      case DType::kInt32:
        return append_integer<int32_t>(bytes, text, type);
      case DType::kInt64:
        return append_integer<int64_t>(bytes, text, type);
      case DType::kUInt8:
      case DType::kBool:
        return append_integer<uint8_t>(bytes, text, type);
      case DType::kUInt16:
        return append_integer<uint16_t>(bytes, text, type);
      case DType::kUInt32:
        return append_integer<uint32_t>(bytes, text, type);
      case DType::kUInt64:
        return append_integer<uint64_t>(bytes, text, type);
      case DType::kString:
      case DType::kUndefined:
        break;
    }
    return error_at(number_start_, "element type " + std::string(dtype_name(type)) +
                                       " has no numeric values; write hex\"...\"");
  }

  // dense<f32[2]>[1, 2] | dense<f32[2]>hex"..." [external(location="..", offset=N, length=N)]
  Result<Tensor> tensor() {
    size_t start = (skip_space(), pos_);
    if (!consume_word("dense")) return error("expected a tensor (dense<...>)");
    Tensor tensor;
    STITCH_RETURN_IF_ERROR(expect('<', "after 'dense'"));
    STITCH_ASSIGN_OR_RETURN(tensor.dtype, dtype("a tensor"));
    STITCH_RETURN_IF_ERROR(expect('[', "after the tensor's element type"));
    if (!consume(']')) {
      do {
        STITCH_ASSIGN_OR_RETURN(int64_t dim, integer("a tensor dimension"));
        tensor.dims.push_back(dim);
      } while (consume(','));
      STITCH_RETURN_IF_ERROR(expect(']', "to close the tensor's dimensions"));
    }
    STITCH_RETURN_IF_ERROR(expect('>', "to close dense<...>"));
    std::string described = "dense<" + std::string(dtype_name(tensor.dtype)) + "[...]>";
    if (peek() == '[') {
      std::optional<int64_t> count = element_count(tensor.dims);
      if (!count) {
        return error_at(start,
                        "tensor dims must be non-negative (and the tensor not huge) to "
                        "list its values; write hex\"...\" instead");
      }
      int64_t expected = *count * list_width(tensor.dtype);
      ++pos_;
      int64_t got = 0;
      if (!consume(']')) {
        do {
          if (got == expected) {
            return error("tensor " + described + " has more than " + std::to_string(expected) +
                         " values");
          }
          if (tensor.dtype == DType::kString) {
            STITCH_ASSIGN_OR_RETURN(std::string element, string_literal("a string element"));
            tensor.strings.push_back(std::move(element));
          } else {
            STITCH_ASSIGN_OR_RETURN(std::string_view text, number_text("a tensor element"));
            STITCH_RETURN_IF_ERROR(append_element(tensor.bytes, tensor.dtype, text));
          }
          ++got;
        } while (consume(','));
        STITCH_RETURN_IF_ERROR(expect(']', "to close the tensor's values"));
      }
      if (got != expected) {
        return error_at(start, "tensor " + described + " needs " + std::to_string(expected) +
                                   " values, got " + std::to_string(got));
      }
    } else {
      STITCH_ASSIGN_OR_RETURN(tensor.bytes, hex_literal("the tensor's values ([...] or hex)"));
    }
    if (consume_word("external")) {
      ExternalDataInfo external;
      STITCH_RETURN_IF_ERROR(expect('(', "after 'external'"));
      if (!consume_word("location")) return error("expected 'location=' in external(...)");
      STITCH_RETURN_IF_ERROR(expect('=', "after 'location'"));
      STITCH_ASSIGN_OR_RETURN(external.location, string_literal("the external file"));
      STITCH_RETURN_IF_ERROR(expect(',', "after the external location"));
      if (!consume_word("offset")) return error("expected 'offset=' in external(...)");
      STITCH_RETURN_IF_ERROR(expect('=', "after 'offset'"));
      STITCH_ASSIGN_OR_RETURN(external.offset, integer("the external offset"));
      STITCH_RETURN_IF_ERROR(expect(',', "after the external offset"));
      if (!consume_word("length")) return error("expected 'length=' in external(...)");
      STITCH_RETURN_IF_ERROR(expect('=', "after 'length'"));
      STITCH_ASSIGN_OR_RETURN(external.length, integer("the external length"));
      STITCH_RETURN_IF_ERROR(expect(')', "to close external(...)"));
      tensor.external = std::move(external);
    }
    return tensor;
  }

  // ---- attributes ----

  Status attribute_value(Attribute& attribute) {
    char c = peek();
    std::string_view word = peek_identifier();
    if (c == '"') {
      attribute.kind = AttributeKind::kString;
      STITCH_ASSIGN_OR_RETURN(attribute.s, string_literal("a string"));
    } else if (word == "dense") {
      attribute.kind = AttributeKind::kTensor;
      STITCH_ASSIGN_OR_RETURN(Tensor value, tensor());
      attribute.tensor = std::make_shared<const Tensor>(std::move(value));
    } else if (word == "ints" || word == "floats" || word == "strings" || word == "tensors") {
      pos_ += word.size();
      attribute.kind = word == "ints"      ? AttributeKind::kInts
                       : word == "floats"  ? AttributeKind::kFloats
                       : word == "strings" ? AttributeKind::kStrings
                                           : AttributeKind::kTensors;
      STITCH_RETURN_IF_ERROR(expect('[', "after the list kind"));
      STITCH_RETURN_IF_ERROR(expect(']', "(a list with a kind prefix is empty)"));
    } else if (c == '[') {
      STITCH_RETURN_IF_ERROR(attribute_list(attribute));
    } else if (!word.empty() && word != "inf" && word != "nan") {
      const OpaqueKindName* opaque = nullptr;
      for (const OpaqueKindName& candidate : kOpaqueKinds) {
        if (candidate.name == word) opaque = &candidate;
      }
      if (opaque == nullptr) {
        return error("unknown attribute value '" + std::string(word) +
                     "'; expected a number, a string, a list, dense<...> or an opaque kind "
                     "such as graph<hex\"...\">");
      }
      pos_ += word.size();
      attribute.kind = opaque->kind;
      STITCH_RETURN_IF_ERROR(expect('<', "after the opaque attribute kind"));
      STITCH_ASSIGN_OR_RETURN(attribute.opaque_proto, hex_literal("the serialized attribute"));
      STITCH_RETURN_IF_ERROR(expect('>', "to close the opaque attribute"));
    } else {
      STITCH_ASSIGN_OR_RETURN(std::string_view text, number_text("an attribute value"));
      if (looks_like_float(text)) {
        attribute.kind = AttributeKind::kFloat;
        STITCH_ASSIGN_OR_RETURN(attribute.f, to_float32(text));
      } else {
        attribute.kind = AttributeKind::kInt;
        STITCH_ASSIGN_OR_RETURN(attribute.i, to_int64(text));
      }
    }
    if (consume_word("ref")) {
      STITCH_RETURN_IF_ERROR(expect('=', "after 'ref'"));
      STITCH_ASSIGN_OR_RETURN(attribute.ref_attr_name, string_literal("the referenced attribute"));
    }
    if (consume_word("doc")) {
      STITCH_RETURN_IF_ERROR(expect('=', "after 'doc'"));
      STITCH_ASSIGN_OR_RETURN(attribute.doc_string, string_literal("the attribute's doc string"));
    }
    return Status::ok();
  }

  // [1, 2] ints, [1.0, 2] floats, ["a"] strings, [dense<...>] tensors.
  Status attribute_list(Attribute& attribute) {
    size_t start = pos_;
    STITCH_RETURN_IF_ERROR(expect('[', "to open a list"));
    if (peek() == ']') {
      return error_at(start,
                      "an empty list needs its kind: write ints[], floats[], strings[] "
                      "or tensors[]");
    }
    if (peek() == '"') {
      attribute.kind = AttributeKind::kStrings;
      do {
        STITCH_ASSIGN_OR_RETURN(std::string element, string_literal("a string element"));
        attribute.strings.push_back(std::move(element));
      } while (consume(','));
    } else if (peek_identifier() == "dense") {
      attribute.kind = AttributeKind::kTensors;
      do {
        STITCH_ASSIGN_OR_RETURN(Tensor element, tensor());
        attribute.tensors.push_back(std::move(element));
      } while (consume(','));
    } else {
      std::vector<std::pair<std::string_view, size_t>> texts;
      bool any_float = false;
      do {
        STITCH_ASSIGN_OR_RETURN(std::string_view text, number_text("a list element"));
        texts.emplace_back(text, number_start_);
        any_float = any_float || looks_like_float(text);
      } while (consume(','));
      attribute.kind = any_float ? AttributeKind::kFloats : AttributeKind::kInts;
      for (const auto& [text, position] : texts) {
        number_start_ = position;
        if (any_float) {
          STITCH_ASSIGN_OR_RETURN(float value, to_float32(text));
          attribute.floats.push_back(value);
        } else {
          STITCH_ASSIGN_OR_RETURN(int64_t value, to_int64(text));
          attribute.ints.push_back(value);
        }
      }
    }
    return expect(']', "to close the list");
  }

  // ---- model ----

  Status parse_header() {
    size_t start = (skip_space(), pos_);
    if (text_.substr(pos_, kHeader.size()) != kHeader) {
      return error_at(start, "expected the header 'stitchopt.ir 1'");
    }
    pos_ += kHeader.size();
    STITCH_ASSIGN_OR_RETURN(int64_t version, integer("the text IR version"));
    if (version != kTextVersion) {
      return error_at(number_start_, "unsupported text IR version " + std::to_string(version) +
                                         "; this build reads version 1");
    }
    return Status::ok();
  }

  Status parse_model_line(Model& model) {
    if (!consume_word("model")) return error("expected 'model'");
    std::unordered_set<std::string> seen;
    while (true) {
      size_t start = (skip_space(), pos_);
      std::string_view key = peek_identifier();
      if (key.empty() || key == "graph") break;
      pos_ += key.size();
      if (!seen.insert(std::string(key)).second) {
        return error_at(start, "model field '" + std::string(key) + "' given twice");
      }
      STITCH_RETURN_IF_ERROR(expect('=', "after the model field"));
      if (key == "ir_version") {
        STITCH_ASSIGN_OR_RETURN(model.ir_version, integer("the IR version"));
      } else if (key == "model_version") {
        STITCH_ASSIGN_OR_RETURN(model.model_version, integer("the model version"));
      } else if (key == "producer") {
        STITCH_ASSIGN_OR_RETURN(model.producer_name, string_literal("the producer"));
      } else if (key == "producer_version") {
        STITCH_ASSIGN_OR_RETURN(model.producer_version, string_literal("the producer version"));
      } else if (key == "domain") {
        STITCH_ASSIGN_OR_RETURN(model.domain, string_literal("the model domain"));
      } else if (key == "doc") {
        STITCH_ASSIGN_OR_RETURN(model.doc_string, string_literal("the doc string"));
      } else if (key == "opsets" || key == "metadata") {
        STITCH_RETURN_IF_ERROR(expect('{', "to open the map"));
        if (!consume('}')) {
          do {
            STITCH_ASSIGN_OR_RETURN(std::string entry_key, string_literal("a key"));
            STITCH_RETURN_IF_ERROR(expect(':', "after the key"));
            if (key == "opsets") {
              STITCH_ASSIGN_OR_RETURN(int64_t version, integer("the opset version"));
              model.opset_imports.push_back(OpsetImport{std::move(entry_key), version});
            } else {
              STITCH_ASSIGN_OR_RETURN(std::string value, string_literal("the metadata value"));
              model.metadata_props.emplace_back(std::move(entry_key), std::move(value));
            }
          } while (consume(','));
          STITCH_RETURN_IF_ERROR(expect('}', "to close the map"));
        }
      } else if (key == "functions") {
        STITCH_RETURN_IF_ERROR(expect('[', "to open the function list"));
        if (!consume(']')) {
          do {
            STITCH_ASSIGN_OR_RETURN(std::string function, hex_literal("a serialized function"));
            model.functions.push_back(std::move(function));
          } while (consume(','));
          STITCH_RETURN_IF_ERROR(expect(']', "to close the function list"));
        }
      } else {
        return error_at(start, "unknown model field '" + std::string(key) +
                                   "'; expected ir_version, opsets, producer, "
                                   "producer_version, domain, model_version, doc, metadata "
                                   "or functions");
      }
    }
    return Status::ok();
  }

  // ---- graph ----

  // Registers a new value; error when the name is taken.
  Result<ValueId> define_value(std::string name, size_t position, TensorType type,
                               bool type_from_model) {
    auto [it, inserted] = value_ids_.emplace(name, static_cast<ValueId>(values_.size()));
    if (!inserted) {
      return error_at(position, "value %" + name + " is defined twice");
    }
    ValueDefinition definition;
    definition.name = std::move(name);
    definition.type = std::move(type);
    definition.type_from_model = type_from_model;
    values_.push_back(std::move(definition));
    return it->second;
  }

  // %name: type[!]
  Result<ValueId> value_definition() {
    size_t start = (skip_space(), pos_);
    STITCH_ASSIGN_OR_RETURN(std::string name, value_name());
    STITCH_RETURN_IF_ERROR(expect(':', "after the value name"));
    STITCH_ASSIGN_OR_RETURN(TensorType type, tensor_type());
    bool type_from_model = consume('!');
    return define_value(std::move(name), start, std::move(type), type_from_model);
  }

  Result<ValueReference> value_reference(bool allow_omitted) {
    ValueReference reference;
    reference.position = (skip_space(), pos_);
    if (allow_omitted && peek() == '_' &&
        (pos_ + 1 >= text_.size() || !is_identifier_char(text_[pos_ + 1]))) {
      ++pos_;
      reference.omitted = true;
      return reference;
    }
    STITCH_ASSIGN_OR_RETURN(reference.name, value_name());
    return reference;
  }

  Status parse_graph(Model& model) {
    if (!consume_word("graph")) return error("expected 'graph'");
    STITCH_ASSIGN_OR_RETURN(graph_name_, string_literal("the graph name"));
    if (consume_word("doc")) {
      STITCH_RETURN_IF_ERROR(expect('=', "after 'doc'"));
      STITCH_ASSIGN_OR_RETURN(graph_doc_, string_literal("the graph's doc string"));
    }
    STITCH_RETURN_IF_ERROR(expect('(', "to open the graph inputs"));
    if (!consume(')')) {
      do {
        STITCH_ASSIGN_OR_RETURN(ValueId id, value_definition());
        values_[static_cast<size_t>(id)].is_graph_input = true;
        if (consume('=')) {
          STITCH_ASSIGN_OR_RETURN(Tensor initializer, tensor());
          values_[static_cast<size_t>(id)].initializer = std::move(initializer);
        }
      } while (consume(','));
      STITCH_RETURN_IF_ERROR(expect(')', "to close the graph inputs"));
    }
    STITCH_RETURN_IF_ERROR(expect('{', "to open the graph body"));
    while (!consume_word("return")) {
      if (pos_ >= text_.size()) return error("expected 'return' before the end of the graph");
      STITCH_RETURN_IF_ERROR(parse_statement(model));
    }
    if (peek() == '%') {
      do {
        STITCH_ASSIGN_OR_RETURN(ValueReference reference, value_reference(false));
        graph_outputs_.push_back(std::move(reference));
      } while (consume(','));
    }
    return expect('}', "to close the graph body");
  }

  // One body line: an initializer, an undefined value, or a node.
  Status parse_statement(Model& model) {
    size_t start = (skip_space(), pos_);
    NodeDefinition definition;
    char c = peek();
    if (c == '%' || c == '_') {
      do {
        skip_space();
        if (peek() == '_' && (pos_ + 1 >= text_.size() || !is_identifier_char(text_[pos_ + 1]))) {
          ++pos_;
          definition.outputs.push_back(kNoId);
          continue;
        }
        STITCH_ASSIGN_OR_RETURN(ValueId id, value_definition());
        definition.outputs.push_back(id);
      } while (consume(','));
      STITCH_RETURN_IF_ERROR(expect('=', "after the defined values"));
      // `dense` and `undefined` are reserved here: ops named so are quoted.
      std::string_view word = peek_identifier();
      if (word == "dense" || word == "undefined") {
        if (definition.outputs.size() != 1 || definition.outputs[0] == kNoId) {
          return error_at(start, "an initializer or undefined value defines exactly one value");
        }
        ValueDefinition& value = values_[static_cast<size_t>(definition.outputs[0])];
        if (word == "dense") {
          STITCH_ASSIGN_OR_RETURN(value.initializer, tensor());
        } else {
          pos_ += word.size();
        }
        return Status::ok();
      }
    }
    return parse_node(model, std::move(definition));
  }

  // Op(%a, _, %b) {name="...", attr=..., origin=[...], implicit=[%v]}
  Status parse_node(Model& model, NodeDefinition definition) {
    Node& node = definition.node;
    skip_space();
    if (peek() == '"') {
      STITCH_ASSIGN_OR_RETURN(node.op_type, string_literal("the op type"));
    } else {
      STITCH_ASSIGN_OR_RETURN(node.op_type,
                              identifier("an op type, a value definition or 'return'"));
    }
    STITCH_RETURN_IF_ERROR(expect('(', "after the op type"));
    if (!consume(')')) {
      do {
        STITCH_ASSIGN_OR_RETURN(ValueReference reference, value_reference(true));
        definition.inputs.push_back(std::move(reference));
      } while (consume(','));
      STITCH_RETURN_IF_ERROR(expect(')', "to close the node's inputs"));
    }
    if (consume('{')) {
      std::unordered_set<std::string> fields;
      do {
        size_t key_start = (skip_space(), pos_);
        if (peek() == '"') {
          Attribute attribute;
          STITCH_ASSIGN_OR_RETURN(attribute.name, string_literal("an attribute name"));
          STITCH_RETURN_IF_ERROR(expect('=', "after the attribute name"));
          STITCH_RETURN_IF_ERROR(attribute_value(attribute));
          node.attributes.push_back(std::move(attribute));
          continue;
        }
        STITCH_ASSIGN_OR_RETURN(std::string key, identifier("an attribute or field name"));
        STITCH_RETURN_IF_ERROR(expect('=', "after '" + key + "'"));
        if (!is_reserved_node_key(key)) {
          Attribute attribute;
          attribute.name = std::move(key);
          STITCH_RETURN_IF_ERROR(attribute_value(attribute));
          node.attributes.push_back(std::move(attribute));
          continue;
        }
        if (!fields.insert(key).second) {
          return error_at(key_start, "node field '" + key + "' given twice");
        }
        if (key == "name") {
          STITCH_ASSIGN_OR_RETURN(node.name, string_literal("the node name"));
        } else if (key == "domain") {
          STITCH_ASSIGN_OR_RETURN(node.domain, string_literal("the node's domain"));
        } else if (key == "opset") {
          STITCH_ASSIGN_OR_RETURN(node.opset, integer("the node's opset"));
          definition.has_opset = true;
        } else if (key == "doc") {
          STITCH_ASSIGN_OR_RETURN(node.doc_string, string_literal("the node's doc string"));
        } else if (key == "origin") {
          definition.has_origin = true;
          STITCH_RETURN_IF_ERROR(expect('[', "to open the origin list"));
          if (!consume(']')) {
            do {
              STITCH_ASSIGN_OR_RETURN(std::string origin, string_literal("an origin node name"));
              node.origin.push_back(std::move(origin));
            } while (consume(','));
            STITCH_RETURN_IF_ERROR(expect(']', "to close the origin list"));
          }
        } else {  // implicit
          STITCH_RETURN_IF_ERROR(expect('[', "to open the implicit inputs"));
          if (!consume(']')) {
            do {
              STITCH_ASSIGN_OR_RETURN(ValueReference reference, value_reference(false));
              definition.implicit_inputs.push_back(std::move(reference));
            } while (consume(','));
            STITCH_RETURN_IF_ERROR(expect(']', "to close the implicit inputs"));
          }
        }
      } while (consume(','));
      STITCH_RETURN_IF_ERROR(expect('}', "to close the node's attributes"));
    }
    if (!definition.has_opset) node.opset = model.opset_of(node.domain);
    nodes_.push_back(std::move(definition));
    return Status::ok();
  }

  Result<ValueId> resolve(const ValueReference& reference) const {
    if (reference.omitted) return kNoId;
    auto it = value_ids_.find(reference.name);
    if (it == value_ids_.end()) {
      return error_at(reference.position, "use of undefined value %" + reference.name);
    }
    return it->second;
  }

  Status build_graph(Model& model) {
    Graph& graph = model.graph;
    graph.name = std::move(graph_name_);
    graph.doc_string = std::move(graph_doc_);
    for (ValueDefinition& definition : values_) {
      ValueId id = kNoId;
      if (definition.initializer) {
        id = graph.add_initializer(definition.name, std::move(*definition.initializer));
        graph.value(id).type = definition.type;
      } else {
        id = graph.add_value(definition.name, definition.type);
      }
      graph.value(id).type_from_model = definition.type_from_model;
      if (definition.is_graph_input) graph.add_graph_input(id);
    }
    for (NodeDefinition& definition : nodes_) {
      std::vector<ValueId> inputs;
      inputs.reserve(definition.inputs.size());
      for (const ValueReference& reference : definition.inputs) {
        STITCH_ASSIGN_OR_RETURN(ValueId id, resolve(reference));
        inputs.push_back(id);
      }
      std::vector<ValueId> implicit_inputs;
      for (const ValueReference& reference : definition.implicit_inputs) {
        STITCH_ASSIGN_OR_RETURN(ValueId id, resolve(reference));
        implicit_inputs.push_back(id);
      }
      Node& parsed = definition.node;
      NodeId id = graph.add_node(std::move(parsed.op_type), std::move(inputs),
                                 std::move(definition.outputs), std::move(parsed.domain),
                                 std::move(parsed.name));
      for (ValueId implicit : implicit_inputs) graph.add_implicit_input(id, implicit);
      Node& node = graph.node(id);
      node.opset = parsed.opset;
      node.attributes = std::move(parsed.attributes);
      node.doc_string = std::move(parsed.doc_string);
      node.origin = definition.has_origin ? std::move(parsed.origin) : default_origin(node.name);
    }
    for (const ValueReference& reference : graph_outputs_) {
      STITCH_ASSIGN_OR_RETURN(ValueId id, resolve(reference));
      graph.add_graph_output(id);
    }
    return Status::ok();
  }

  std::string graph_name_;
  std::string graph_doc_;
  std::vector<ValueDefinition> values_;
  std::unordered_map<std::string, ValueId> value_ids_;
  std::vector<NodeDefinition> nodes_;
  std::vector<ValueReference> graph_outputs_;
};

}  // namespace
}  // namespace text_lexicon

Result<Model> parse_model(std::string_view text, std::string_view source_name) {
  return text_lexicon::Parser(text, source_name).parse();
}

}  // namespace stitch::ir
