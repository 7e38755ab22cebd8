// The random model generator's mechanics: decisions, names, leaves, nodes.
#include "tests/fuzz/model_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "ir/core/tensor.h"

namespace stitch::fuzz {
namespace {

using ir::DType;

// The IR version each opset needs (onnx/helper.py's VERSION_TABLE): the checker
// refuses a model whose IR version is older than its opset.
int64_t ir_version_for(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  return 10;
}

// Bytes a name may carry that generated code must never show raw: comment
// terminators, line splices (a trailing backslash, the "??/" trigraph), line breaks,
// NUL, invalid and bidirectional UTF-8, quotes, shell and preprocessor syntax.
const std::vector<std::string>& hostile_fragments() {
  // (clang-format would put one fragment per line.)
  // clang-format off
  static const std::vector<std::string> fragments = {
      "\n", "\r\n", "*/", "/*", "//", "?\?/", "\\", "\"", "'", std::string("\0", 1), "\xff",
      "\xc3\x28", "\xe2\x80\xae", "\xc3\xa9", "\t", " ", "#define X 1\n", "%s%n",
      "$(touch pwned)", "`id`", ".", "-", "::", "<>&;{},", "\x01\x7f"};
  // clang-format on
  return fragments;
}

// Whole names that are identifiers of the generated code or of C/CUDA.
const std::vector<std::string>& identifier_traps() {
  static const std::vector<std::string> traps = {
      "i",       "a",          "tid",       "threads",  "row",    "lane",  "sum",       "int",
      "float",   "__global__", "threadIdx", "blockIdx", "std",    "main",  "NULL",      "_",
      "__",      "0",          "1e5",       "v_0",      "p_0",    "ws",    "workspace", "inputs",
      "outputs", "stream",     "x",         "half",     "__half", "return"};
  return traps;
}

template <typename T>
void append_raw(std::string* bytes, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes->append(raw, sizeof(T));
}

}  // namespace

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;
  return count;
}

bool in_class(DType dtype, DTypeClass type_class) {
  switch (type_class) {
    case DTypeClass::kFloat:
      return ir::dtype_is_float(dtype);
    case DTypeClass::kNumeric:
      return ir::dtype_is_float(dtype) || ir::dtype_is_integer(dtype);
    case DTypeClass::kSignedNumeric:
      return ir::dtype_is_signed(dtype) && dtype != DType::kBool;
    case DTypeClass::kInteger:
      return ir::dtype_is_integer(dtype);
    case DTypeClass::kBool:
      return dtype == DType::kBool;
    case DTypeClass::kAny:
      return true;
  }
  return false;
}

bool is_hostile_name(std::string_view name) {
  if (name.find("*/") != std::string_view::npos || name.find("?\?/") != std::string_view::npos) {
    return true;
  }
  for (unsigned char c : name) {
    if (c == '\\' || c < 0x20 || c > 0x7e) return true;
  }
  return false;
}

ModelBuilder::ModelBuilder(FuzzedDataProvider& data, const GeneratorOptions& options)
    : data_(data), options_(options), graph_(model_.mutable_graph()) {
  static const std::vector<int64_t> opsets = {7,  9,  10, 11, 12, 13, 13, 14, 15,
                                              16, 17, 17, 18, 19, 20, 21, 21};
  opset_ = pick(opsets);
  model_.set_ir_version(ir_version_for(opset_));
  onnx::OperatorSetIdProto* import = model_.add_opset_import();
  import->set_domain("");
  import->set_version(opset_);
  model_.set_producer_name("stitchopt tests/fuzz");
  graph_->set_name(value_name("graph"));
  if (one_in(4)) model_.set_doc_string(value_name("model doc"));
}

int64_t ModelBuilder::dim() {
  static const std::vector<int64_t> dims = {0, 1, 1, 2, 3, 4, 5, 7, 8, 16};
  int64_t value = pick(dims);
  return value == 0 && !options_.zero_dims ? 1 : value;
}

std::vector<int64_t> ModelBuilder::shape(int min_rank, int max_rank) {
  std::vector<int64_t> dims(static_cast<size_t>(range(min_rank, max_rank)));
  for (int64_t& value : dims) value = dim();
  while (element_count(dims) > kMaxElements) {
    *std::max_element(dims.begin(), dims.end()) /= 2;
  }
  return dims;
}

DType ModelBuilder::dtype(DTypeClass type_class) {
  static const std::vector<DType> floats = {DType::kFloat32, DType::kFloat32, DType::kFloat32,
                                            DType::kFloat32, DType::kFloat16, DType::kFloat64,
                                            DType::kBFloat16};
  static const std::vector<DType> integers = {DType::kInt64,  DType::kInt64,  DType::kInt32,
                                              DType::kInt8,   DType::kUInt8,  DType::kInt16,
                                              DType::kUInt16, DType::kUInt32, DType::kUInt64};
  static const std::vector<DType> signed_integers = {DType::kInt64, DType::kInt32, DType::kInt8,
                                                     DType::kInt16};
  DType chosen = DType::kFloat32;
  switch (type_class) {
    case DTypeClass::kFloat:
      chosen = pick(floats);
      break;
    case DTypeClass::kInteger:
      chosen = pick(integers);
      break;
    case DTypeClass::kBool:
      chosen = DType::kBool;
      break;
    case DTypeClass::kNumeric:
      chosen = coin() ? pick(floats) : pick(integers);
      break;
    case DTypeClass::kSignedNumeric:
      chosen = coin() ? pick(floats) : pick(signed_integers);
      break;
    case DTypeClass::kAny:
      chosen = one_in(6) ? DType::kBool : coin() ? pick(floats) : pick(integers);
      break;
  }
  // bfloat16 arrives with opset 13.
  return chosen == DType::kBFloat16 && opset_ < 13 ? DType::kFloat32 : chosen;
}

double ModelBuilder::float_value() {
  static const std::vector<double> notable = {0, 1, -1, 0.5, 2, -0.25, 1e-3, 100, 65504, -3};
  static const std::vector<double> special = {NAN, INFINITY, -INFINITY, -0.0, 1e30, 1e-40};
  switch (range(0, 9)) {
    case 0:
    case 1:
    case 2:
    case 3:
      return data_.ConsumeFloatingPointInRange(-4.0, 4.0);
    case 4:
    case 5:
      return pick(notable);
    case 6:
      return 0;
    case 7:
      return static_cast<double>(range(-8, 8));
    case 8:
      return range(1, 8) * 0.25;
    default: {
      double value = pick(special);
      return options_.special_floats ? value : 1.0;
    }
  }
}

int64_t ModelBuilder::int_value(DType dtype) {
  int64_t low = 0;
  int64_t high = 0;
  switch (dtype) {
    case DType::kInt8:
      low = INT8_MIN, high = INT8_MAX;
      break;
    case DType::kUInt8:
      high = UINT8_MAX;
      break;
    case DType::kInt16:
      low = INT16_MIN, high = INT16_MAX;
      break;
    case DType::kUInt16:
      high = UINT16_MAX;
      break;
    case DType::kInt32:
      low = INT32_MIN, high = INT32_MAX;
      break;
    case DType::kUInt32:
      high = UINT32_MAX;
      break;
    case DType::kUInt64:
      high = INT64_MAX;
      break;
    case DType::kBool:
      high = 1;
      break;
    default:
      low = INT64_MIN, high = INT64_MAX;
      break;
  }
  int64_t value = 0;
  switch (range(0, 7)) {
    case 5:
      value = 0;
      break;
    case 6: {
      std::vector<int64_t> extremes = {low, high, -1, low + 1};
      value = pick(extremes);
      break;
    }
    case 7:
      value = range(-100, 100);
      break;
    default:
      value = range(-5, 5);
      break;
  }
  return std::clamp(value, low, high);
}

std::optional<GenValue> ModelBuilder::find(const std::function<bool(const GenValue&)>& accept) {
  std::vector<size_t> candidates;
  for (size_t index = 0; index < values_.size(); ++index) {
    if (accept(values_[index])) candidates.push_back(index);
  }
  if (candidates.empty()) return std::nullopt;
  if (coin()) return values_[candidates.back()];
  return values_[pick(candidates)];
}

GenValue ModelBuilder::operand(DType dtype, const std::vector<int64_t>& dims) {
  if (!one_in(3)) {
    std::optional<GenValue> found =
        find([&](const GenValue& value) { return value.dtype == dtype && value.dims == dims; });
    if (found) return *found;
  }
  return leaf(dtype, dims);
}

GenValue ModelBuilder::leaf(DType dtype, const std::vector<int64_t>& dims) {
  if (range(0, 2) == 2) return constant(dtype, dims);
  GenValue value{value_name("input"), dtype, dims};
  declare_type(graph_->add_input(), value, true);
  // A graph input with an initializer as its default value (IR version 4 and up).
  if (model_.ir_version() >= 4 && one_in(10)) fill(add_initializer(value), dtype, dims);
  add_value(value);
  return value;
}

GenValue ModelBuilder::constant(DType dtype, const std::vector<int64_t>& dims) {
  GenValue value{value_name("const"), dtype, dims};
  // Constant nodes hold only float tensors before opset 9.
  if (coin() || (opset_ < 9 && !ir::dtype_is_float(dtype))) {
    fill(add_initializer(value), dtype, dims);
  } else {
    onnx::NodeProto* node = add_node("Constant", {});
    node->add_output(value.name);
    onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    fill(attribute->mutable_t(), dtype, dims);
  }
  add_value(value);
  return value;
}

GenValue ModelBuilder::int_constant(const std::vector<int64_t>& ints,
                                    const std::vector<int64_t>& dims, DType dtype) {
  GenValue value{value_name("ints"), dtype, dims};
  onnx::TensorProto tensor;
  tensor.set_data_type(static_cast<int32_t>(dtype));
  for (int64_t dim : dims) tensor.add_dims(dim);
  std::string raw;
  for (int64_t element : ints) {
    if (dtype == DType::kInt32) {
      append_raw(&raw, static_cast<int32_t>(element));
    } else if (dtype == DType::kBool) {
      append_raw(&raw, static_cast<uint8_t>(element));
    } else {
      append_raw(&raw, element);
    }
  }
  tensor.set_raw_data(raw);
  if (coin() || opset_ < 9) {
    onnx::TensorProto* initializer = add_initializer(value);
    tensor.set_name(value.name);
    *initializer = tensor;
  } else if (opset_ >= 12 && dtype == DType::kInt64 && dims.size() == 1 && one_in(8)) {
    // (ONNX 1.17's shape inference mistypes value_ints: the checker rejects the model.)
    onnx::NodeProto* node = add_node("Constant", {});
    node->add_output(value.name);
    set_ints(node, "value_ints", ints);
  } else {
    onnx::NodeProto* node = add_node("Constant", {});
    node->add_output(value.name);
    onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name("value");
    attribute->set_type(onnx::AttributeProto::TENSOR);
    *attribute->mutable_t() = tensor;
  }
  add_value(value);
  return value;
}

GenValue ModelBuilder::float_constant(DType dtype, const std::vector<double>& values,
                                      const std::vector<int64_t>& dims) {
  GenValue value{value_name("floats"), dtype, dims};
  onnx::TensorProto* tensor = add_initializer(value);
  tensor->set_data_type(static_cast<int32_t>(dtype));
  for (int64_t dim : dims) tensor->add_dims(dim);
  std::string raw;
  for (double element : values) {
    switch (dtype) {
      case DType::kFloat64:
        append_raw(&raw, element);
        break;
      case DType::kFloat16:
        append_raw(&raw, ir::float_to_half(static_cast<float>(element)));
        break;
      case DType::kBFloat16:
        append_raw(&raw, ir::float_to_bfloat16(static_cast<float>(element)));
        break;
      default:
        append_raw(&raw, static_cast<float>(element));
        break;
    }
  }
  tensor->set_raw_data(raw);
  add_value(value);
  return value;
}

void ModelBuilder::use_domain(const std::string& domain) {
  for (const onnx::OperatorSetIdProto& import : model_.opset_import()) {
    if (import.domain() == domain) return;
  }
  onnx::OperatorSetIdProto* import = model_.add_opset_import();
  import->set_domain(domain);
  import->set_version(1);
}

onnx::NodeProto* ModelBuilder::add_node(std::string_view op_type,
                                        const std::vector<std::string>& inputs,
                                        std::string_view domain) {
  onnx::NodeProto* node = graph_->add_node();
  node->set_op_type(std::string(op_type));
  node->set_domain(std::string(domain));
  std::string name = node_name(op_type);
  if (!name.empty()) node->set_name(name);
  for (const std::string& input : inputs) {
    node->add_input(input);
    if (!input.empty()) read_.insert(input);
  }
  if (one_in(8)) node->set_doc_string(value_name("doc"));
  return node;
}

GenValue ModelBuilder::add_output(onnx::NodeProto* node, DType dtype, std::vector<int64_t> dims) {
  GenValue value{value_name(node->op_type()), dtype, std::move(dims)};
  node->add_output(value.name);
  add_value(value);
  if (one_in(6)) declare(value);
  return value;
}

void ModelBuilder::declare(const GenValue& value) {
  declare_type(graph_->add_value_info(), value, true);
}

void ModelBuilder::declare_type(onnx::ValueInfoProto* info, const GenValue& value, bool with_dims) {
  info->set_name(value.name);
  onnx::TypeProto::Tensor* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(static_cast<int32_t>(value.dtype));
  onnx::TensorShapeProto* shape = type->mutable_shape();
  for (int64_t dim : value.dims) {
    onnx::TensorShapeProto::Dimension* added = shape->add_dim();
    if (with_dims) added->set_dim_value(dim);
  }
}

onnx::TensorProto* ModelBuilder::add_initializer(const GenValue& value) {
  // IR version 3 lists every initializer among the graph inputs.
  if (model_.ir_version() < 4) declare_type(graph_->add_input(), value, true);
  onnx::TensorProto* initializer = graph_->add_initializer();
  initializer->set_name(value.name);
  return initializer;
}

void ModelBuilder::set_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

void ModelBuilder::set_ints(onnx::NodeProto* node, const std::string& name,
                            const std::vector<int64_t>& values) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values) attribute->add_ints(value);
}

void ModelBuilder::set_float(onnx::NodeProto* node, const std::string& name, float value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(value);
}

void ModelBuilder::set_string(onnx::NodeProto* node, const std::string& name,
                              const std::string& value) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::STRING);
  attribute->set_s(value);
}

void ModelBuilder::set_scalar_tensor(onnx::NodeProto* node, const std::string& name, DType dtype) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::TENSOR);
  fill(attribute->mutable_t(), dtype, {1});
}

GeneratedModel ModelBuilder::finish() {
  if (graph_->node_size() == 0 || values_.empty()) {
    GenValue input = leaf(DType::kFloat32, shape(0, 3));
    onnx::NodeProto* node = add_node("Identity", {input.name});
    add_output(node, input.dtype, input.dims);
  }
  std::set<std::string> produced;
  for (const onnx::NodeProto& node : graph_->node()) {
    if (node.op_type() == "Constant") continue;
    for (const std::string& output : node.output()) produced.insert(output);
  }
  std::vector<GenValue> outputs;
  for (const GenValue& value : values_) {
    bool leaf_value = produced.count(value.name) == 0;
    bool unread = read_.count(value.name) == 0;
    // Every node result nothing reads, some others, and now and then a graph input
    // or constant handed straight to the output.
    if ((!leaf_value && (unread || one_in(6))) || (leaf_value && one_in(24))) {
      outputs.push_back(value);
    }
  }
  if (outputs.empty()) outputs.push_back(values_.back());
  for (const GenValue& value : outputs) {
    // Now and then only the rank: the dims are left to inference.
    declare_type(graph_->add_output(), value, !one_in(5));
  }
  GeneratedModel generated;
  model_.SerializeToString(&generated.bytes);
  generated.hostile_names = std::move(hostile_names_);
  return generated;
}

std::string ModelBuilder::hostile(std::string_view text) {
  std::string name(text);
  if (is_hostile_name(name)) hostile_names_.push_back(name);
  return name;
}

// Reads the same decisions whether names are hostile or plain (random_model.h).
std::string ModelBuilder::value_name(std::string_view base) {
  const int form = static_cast<int>(range(0, 15));
  const std::string& fragment = pick(hostile_fragments());
  const std::string& second = pick(hostile_fragments());
  const std::string& trap = pick(identifier_traps());
  const int64_t position = range(0, 2);
  std::string stem = std::string(base) + "_" + std::to_string(next_name_++);
  std::replace(stem.begin(), stem.end(), ' ', '_');  // "model doc": plain names are identifiers
  std::string name = stem;
  if (options_.hostile_names) {
    if (form >= 8 && form <= 11) {
      name = position == 0 ? fragment + stem
             : position == 1
                 ? stem.substr(0, stem.size() / 2) + fragment + stem.substr(stem.size() / 2)
                 : stem + fragment;
    } else if (form == 12) {
      name = trap;
    } else if (form == 13 && !values_.empty()) {
      // Differs from an earlier name only where sanitizing to an identifier maps
      // both to '_'.
      name = values_[static_cast<size_t>(position) % values_.size()].name;
      std::replace(name.begin(), name.end(), '_', position == 2 ? '-' : '.');
    } else if (form == 14) {
      name.clear();
      while (name.size() < 300) name += stem;
      name += fragment;
    } else if (form == 15) {
      name = fragment + stem + second;
    }
  }
  while (used_names_.count(name) > 0) name += "_" + std::to_string(next_name_++);
  used_names_.insert(name);
  return hostile(name);
}

std::string ModelBuilder::node_name(std::string_view op_type) {
  const int64_t form = range(0, 7);
  const size_t earlier = static_cast<size_t>(range(0, 64));
  std::string name = value_name(op_type);  // read in every form: twins read alike
  used_names_.erase(name);                 // node names live apart from value names
  if (form == 0) return "";
  // A name another node has (ONNX Runtime refuses such models: not for plain twins).
  if (form == 1 && !node_names_.empty() && options_.hostile_names) {
    return node_names_[earlier % node_names_.size()];
  }
  node_names_.push_back(name);
  return name;
}

void ModelBuilder::fill(onnx::TensorProto* tensor, DType dtype, const std::vector<int64_t>& dims) {
  tensor->set_data_type(static_cast<int32_t>(dtype));
  for (int64_t dim : dims) tensor->add_dims(dim);
  std::string raw;
  const int64_t count = element_count(dims);
  for (int64_t i = 0; i < count; ++i) {
    if (ir::dtype_is_float(dtype)) {
      double value = float_value();
      switch (dtype) {
        case DType::kFloat64:
          append_raw(&raw, value);
          break;
        case DType::kFloat16:
          append_raw(&raw, ir::float_to_half(static_cast<float>(value)));
          break;
        case DType::kBFloat16:
          append_raw(&raw, ir::float_to_bfloat16(static_cast<float>(value)));
          break;
        default:
          append_raw(&raw, static_cast<float>(value));
          break;
      }
      continue;
    }
    int64_t value = int_value(dtype);
    switch (dtype) {
      case DType::kBool:
      case DType::kInt8:
      case DType::kUInt8:
        append_raw(&raw, static_cast<uint8_t>(value));
        break;
      case DType::kInt16:
      case DType::kUInt16:
        append_raw(&raw, static_cast<uint16_t>(value));
        break;
      case DType::kInt32:
      case DType::kUInt32:
        append_raw(&raw, static_cast<uint32_t>(value));
        break;
      default:
        append_raw(&raw, value);
        break;
    }
  }
  tensor->set_raw_data(raw);
}

void ModelBuilder::add_value(GenValue value) { values_.push_back(std::move(value)); }

}  // namespace stitch::fuzz
