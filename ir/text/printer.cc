// The textual IR's printer (grammar in text.h).
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

namespace stitch::ir {
namespace text_lexicon {
namespace {

// ---- printing ------------------------------------------------------------------

class Printer {
 public:
  explicit Printer(const Model& model) : model_(model), graph_(model.graph) {}

  std::string print() {
    out_ += kHeader;
    out_ += ' ';
    out_ += std::to_string(kTextVersion);
    out_ += '\n';
    print_model_line();
    print_graph();
    return std::move(out_);
  }

 private:
  template <typename T>
  void append_number(T value) {
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out_.append(buffer, result.ptr);
  }

  void append_hex_digits(uint64_t bits, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4)
      out_ += kDigits[(bits >> shift) & 0xf];
  }

  // NaN written as `nan`/`-nan` when it is the canonical quiet NaN, else with its
  // bits: `nan(0x7fc00001)`.
  void append_nan(uint64_t bits, uint64_t canonical, uint64_t sign_bit, int hex_digits) {
    if (bits == canonical) {
      out_ += "nan";
    } else if (bits == (canonical | sign_bit)) {
      out_ += "-nan";
    } else {
      out_ += "nan(0x";
      append_hex_digits(bits, hex_digits);
      out_ += ')';
    }
  }

  // Shortest text that reads back to the same float (std::to_chars); attributes
  // force a '.' so a float never reads back as an int.
  void append_float(float value, bool force_point) {
    if (std::isnan(value)) {
      append_nan(std::bit_cast<uint32_t>(value), kFloatNan, 0x80000000u, 8);
      return;
    }
    if (std::isinf(value)) {
      out_ += value < 0 ? "-inf" : "inf";
      return;
    }
    size_t start = out_.size();
    append_number(value);
    if (force_point && out_.find_first_of(".e", start) == std::string::npos) out_ += ".0";
  }

  void append_double(double value) {
    if (std::isnan(value)) {
      append_nan(std::bit_cast<uint64_t>(value), kDoubleNan, 0x8000000000000000u, 16);
    } else if (std::isinf(value)) {
      out_ += value < 0 ? "-inf" : "inf";
    } else {
      append_number(value);
    }
  }

  // f16 and bf16 elements: the float they stand for (exact), NaNs by their bits.
  void append_half_bits(uint16_t bits, bool bfloat) {
    float value = bfloat ? bfloat16_to_float(bits) : half_to_float(bits);
    if (std::isnan(value)) {
      append_nan(bits, bfloat ? kBFloat16Nan : kHalfNan, 0x8000u, 4);
    } else {
      append_float(value, false);
    }
  }

  void append_string(std::string_view text) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out_ += '"';
    for (char c : text) {
      auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (c == '\n') {
        out_ += "\\n";
      } else if (c == '\t') {
        out_ += "\\t";
      } else if (byte < 0x20 || byte >= 0x7f) {
        out_ += "\\x";
        out_ += kDigits[byte >> 4];
        out_ += kDigits[byte & 0xf];
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  void append_hex(std::string_view bytes) {
    out_ += "hex\"";
    for (char c : bytes) append_hex_digits(static_cast<unsigned char>(c), 2);
    out_ += '"';
  }

  void append_value_name(ValueId id) {
    const std::string& name = graph_.value(id).name;
    out_ += '%';
    if (!name.empty() && std::all_of(name.begin(), name.end(), is_bare_name_char)) {
      out_ += name;
    } else {
      append_string(name);
    }
  }

  void append_value_use(ValueId id) {
    if (id == kNoId) {
      out_ += '_';
    } else {
      append_value_name(id);
    }
  }

  // As to_string(TensorType) writes it ("f32[2,?,3]", "f32[*]"), without a stream.
  void append_type(const TensorType& type) {
    out_ += dtype_name(type.dtype);
    out_ += '[';
    if (!type.has_shape) {
      out_ += '*';
    } else {
      for (size_t i = 0; i < type.dims.size(); ++i) {
        if (i > 0) out_ += ',';
        if (type.dims[i] < 0) {
          out_ += '?';
        } else {
          append_number(type.dims[i]);
        }
      }
    }
    out_ += ']';
  }

  // `%x: f32[2,3]`, with `!` when the model declared the type.
  void append_value_definition(ValueId id) {
    const Value& value = graph_.value(id);
    append_value_name(id);
    out_ += ": ";
    append_type(value.type);
    if (value.type_from_model) out_ += '!';
  }

  void append_key(std::string_view key) {
    if (is_identifier(key) && !is_reserved_node_key(key)) {
      out_ += key;
    } else {
      append_string(key);
    }
  }

  void append_tensor_elements(const Tensor& tensor, int64_t count) {
    const char* data = tensor.bytes.data();
    auto load = [&]<typename T>(int64_t index, T) {
      T element;
      std::memcpy(&element, data + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
      return element;
    };
    int64_t n = count * list_width(tensor.dtype);
    out_ += '[';
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out_ += ", ";
      switch (tensor.dtype) {
        case DType::kFloat32:
        case DType::kComplex64:
          append_float(load(i, float{}), false);
          break;
        case DType::kFloat64:
        case DType::kComplex128:
          append_double(load(i, double{}));
          break;
        case DType::kFloat16:
          append_half_bits(load(i, uint16_t{}), false);
          break;
        case DType::kBFloat16:
          append_half_bits(load(i, uint16_t{}), true);
          break;
        case DType::kInt8:
          append_number(load(i, int8_t{}));
          break;
        case DType::kInt16:
          append_number(load(i, int16_t{}));
          break;
        case DType::kInt32:
          append_number(load(i, int32_t{}));
          break;
        case DType::kInt64:
          append_number(load(i, int64_t{}));
          break;
        case DType::kUInt8:
        case DType::kBool:
          append_number(load(i, uint8_t{}));
          break;
        case DType::kUInt16:
          append_number(load(i, uint16_t{}));
          break;
        case DType::kUInt32:
          append_number(load(i, uint32_t{}));
          break;
        case DType::kUInt64:
          append_number(load(i, uint64_t{}));
          break;
        case DType::kString:
        case DType::kUndefined:
          STITCH_CHECK(false) << "no numeric elements";
          break;
      }
    }
    out_ += ']';
  }

  // dense<f32[2,2]>[1, 2, 3, 4]; strings as a string list; bytes that don't match
  // the dims (or an undefined dtype) as hex"...".
  void append_tensor(const Tensor& tensor) {
    out_ += "dense<";
    out_ += dtype_name(tensor.dtype);
    out_ += '[';
    for (size_t i = 0; i < tensor.dims.size(); ++i) {
      if (i > 0) out_ += ',';
      append_number(tensor.dims[i]);
    }
    out_ += "]>";
    std::optional<int64_t> count = element_count(tensor.dims);
    int64_t size = dtype_size(tensor.dtype);
    if (tensor.dtype == DType::kString && count && tensor.bytes.empty() &&
        static_cast<int64_t>(tensor.strings.size()) == *count) {
      out_ += '[';
      for (size_t i = 0; i < tensor.strings.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_string(tensor.strings[i]);
      }
      out_ += ']';
    } else if (size > 0 && count && static_cast<int64_t>(tensor.bytes.size()) == *count * size) {
      append_tensor_elements(tensor, *count);
    } else {
      append_hex(tensor.bytes);
    }
    if (tensor.external) {
      out_ += " external(location=";
      append_string(tensor.external->location);
      out_ += ", offset=";
      append_number(tensor.external->offset);
      out_ += ", length=";
      append_number(tensor.external->length);
      out_ += ')';
    }
  }

  void append_attribute(const Attribute& attribute) {
    append_key(attribute.name);
    out_ += '=';
    auto list = [&](std::string_view kind, size_t size, auto append_element) {
      if (size == 0) {
        out_ += kind;
        out_ += "[]";
        return;
      }
      out_ += '[';
      for (size_t i = 0; i < size; ++i) {
        if (i > 0) out_ += ", ";
        append_element(i);
      }
      out_ += ']';
    };
    switch (attribute.kind) {
      case AttributeKind::kInt:
        append_number(attribute.i);
        break;
      case AttributeKind::kFloat:
        append_float(attribute.f, true);
        break;
      case AttributeKind::kString:
        append_string(attribute.s);
        break;
      case AttributeKind::kTensor:
        if (attribute.tensor != nullptr) {
          append_tensor(*attribute.tensor);
        } else {
          out_ += "dense<undef[]>hex\"\"";
        }
        break;
      case AttributeKind::kInts:
        list("ints", attribute.ints.size(), [&](size_t i) { append_number(attribute.ints[i]); });
        break;
      case AttributeKind::kFloats:
        list("floats", attribute.floats.size(),
             [&](size_t i) { append_float(attribute.floats[i], true); });
        break;
      case AttributeKind::kStrings:
        list("strings", attribute.strings.size(),
             [&](size_t i) { append_string(attribute.strings[i]); });
        break;
      case AttributeKind::kTensors:
        list("tensors", attribute.tensors.size(),
             [&](size_t i) { append_tensor(attribute.tensors[i]); });
        break;
      default:
        for (const OpaqueKindName& opaque : kOpaqueKinds) {
          if (opaque.kind == attribute.kind) out_ += opaque.name;
        }
        out_ += '<';
        append_hex(attribute.opaque_proto);
        out_ += '>';
        break;
    }
    if (!attribute.ref_attr_name.empty()) {
      out_ += " ref=";
      append_string(attribute.ref_attr_name);
    }
    if (!attribute.doc_string.empty()) {
      out_ += " doc=";
      append_string(attribute.doc_string);
    }
  }

  void print_model_line() {
    out_ += "model ir_version=";
    append_number(model_.ir_version);
    out_ += " opsets={";
    for (size_t i = 0; i < model_.opset_imports.size(); ++i) {
      if (i > 0) out_ += ", ";
      append_string(model_.opset_imports[i].domain);
      out_ += ':';
      append_number(model_.opset_imports[i].version);
    }
    out_ += '}';
    auto optional_string = [&](std::string_view key, const std::string& value) {
      if (value.empty()) return;
      out_ += ' ';
      out_ += key;
      out_ += '=';
      append_string(value);
    };
    optional_string("producer", model_.producer_name);
    optional_string("producer_version", model_.producer_version);
    optional_string("domain", model_.domain);
    if (model_.model_version != 0) {
      out_ += " model_version=";
      append_number(model_.model_version);
    }
    optional_string("doc", model_.doc_string);
    if (!model_.metadata_props.empty()) {
      out_ += " metadata={";
      for (size_t i = 0; i < model_.metadata_props.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_string(model_.metadata_props[i].first);
        out_ += ':';
        append_string(model_.metadata_props[i].second);
      }
      out_ += '}';
    }
    if (!model_.functions.empty()) {
      out_ += " functions=[";
      for (size_t i = 0; i < model_.functions.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_hex(model_.functions[i]);
      }
      out_ += ']';
    }
    out_ += '\n';
  }

  void print_graph() {
    std::vector<ValueId> initializers = graph_.initializers();
    std::vector<bool> is_initializer(static_cast<size_t>(graph_.value_capacity()), false);
    for (ValueId id : initializers) is_initializer[static_cast<size_t>(id)] = true;

    out_ += "graph ";
    append_string(graph_.name);
    if (!graph_.doc_string.empty()) {
      out_ += " doc=";
      append_string(graph_.doc_string);
    }
    out_ += " (";
    std::vector<bool> printed(static_cast<size_t>(graph_.value_capacity()), false);
    bool first = true;
    for (ValueId id : graph_.graph_inputs()) {
      if (!first) out_ += ", ";
      first = false;
      append_value_definition(id);
      if (is_initializer[static_cast<size_t>(id)]) {
        out_ += " = ";
        append_tensor(*graph_.value(id).constant);
      }
      printed[static_cast<size_t>(id)] = true;
    }
    out_ += ") {\n";
    for (ValueId id : initializers) {
      if (printed[static_cast<size_t>(id)]) continue;
      out_ += "  ";
      append_value_definition(id);
      out_ += " = ";
      append_tensor(*graph_.value(id).constant);
      out_ += '\n';
      printed[static_cast<size_t>(id)] = true;
    }
    std::vector<NodeId> nodes = graph_.node_ids();
    for (NodeId id : nodes) {
      for (ValueId output : graph_.node(id).outputs) {
        if (output != kNoId) printed[static_cast<size_t>(output)] = true;
      }
    }
    // Live values nothing defines (left behind by a pass): kept visible.
    for (ValueId id = 0; id < graph_.value_capacity(); ++id) {
      if (graph_.value(id).dead || printed[static_cast<size_t>(id)]) continue;
      out_ += "  ";
      append_value_definition(id);
      out_ += " = undefined\n";
    }
    for (NodeId id : nodes) print_node(graph_.node(id));
    out_ += "  return";
    first = true;
    for (ValueId id : graph_.graph_outputs()) {
      out_ += first ? " " : ", ";
      first = false;
      append_value_name(id);
    }
    out_ += "\n}\n";
  }

  void print_node(const Node& node) {
    out_ += "  ";
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (i > 0) out_ += ", ";
      if (node.outputs[i] == kNoId) {
        out_ += '_';
      } else {
        append_value_definition(node.outputs[i]);
      }
    }
    if (!node.outputs.empty()) out_ += " = ";
    if (is_identifier(node.op_type) && !is_reserved_op_word(node.op_type)) {
      out_ += node.op_type;
    } else {
      append_string(node.op_type);
    }
    out_ += '(';
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (i > 0) out_ += ", ";
      append_value_use(node.inputs[i]);
    }
    out_ += ')';
    bool first = true;
    auto field = [&](std::string_view key) {
      out_ += first ? " {" : ", ";
      first = false;
      out_ += key;
      out_ += '=';
    };
    if (!node.name.empty()) {
      field("name");
      append_string(node.name);
    }
    if (!node.domain.empty()) {
      field("domain");
      append_string(node.domain);
    }
    if (node.opset != model_.opset_of(node.domain)) {
      field("opset");
      append_number(node.opset);
    }
    for (const Attribute& attribute : node.attributes) {
      out_ += first ? " {" : ", ";
      first = false;
      append_attribute(attribute);
    }
    if (node.origin != default_origin(node.name)) {
      field("origin");
      out_ += '[';
      for (size_t i = 0; i < node.origin.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_string(node.origin[i]);
      }
      out_ += ']';
    }
    if (!node.implicit_inputs.empty()) {
      field("implicit");
      out_ += '[';
      for (size_t i = 0; i < node.implicit_inputs.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_value_use(node.implicit_inputs[i]);
      }
      out_ += ']';
    }
    if (!node.doc_string.empty()) {
      field("doc");
      append_string(node.doc_string);
    }
    if (!first) out_ += '}';
    out_ += '\n';
  }

  const Model& model_;
  const Graph& graph_;
  std::string out_;
};

}  // namespace
}  // namespace text_lexicon
std::string print_model(const Model& model) { return text_lexicon::Printer(model).print(); }

}  // namespace stitch::ir
