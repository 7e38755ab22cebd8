// ModelBuilder: the mechanics under the random model generator (random_model.h). It
// keeps the values built so far with their dtypes and shapes, makes names (plain or
// hostile), leaves (graph inputs, initializers, Constant nodes), nodes and the final
// ModelProto, and reads every decision from the FuzzedDataProvider. It knows no op;
// random_model.cc does.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/dtype.h"
#include "tests/fuzz/random_model.h"

namespace stitch::fuzz {

// Upper bound on the elements of any tensor the generator makes: the interpreter
// and the emulated kernels stay fast, and shapes still reach every code path.
inline constexpr int64_t kMaxElements = 4096;

enum class DTypeClass { kFloat, kNumeric, kSignedNumeric, kInteger, kBool, kAny };

struct GenValue {
  std::string name;
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<int64_t> dims;
};

int64_t element_count(const std::vector<int64_t>& dims);
bool in_class(ir::DType dtype, DTypeClass type_class);

class ModelBuilder {
 public:
  ModelBuilder(FuzzedDataProvider& data, const GeneratorOptions& options);

  const GeneratorOptions& options() const { return options_; }
  int64_t opset() const { return opset_; }

  // Decisions.
  bool coin() { return data_.ConsumeBool(); }
  // True with probability about 1/n; false once the data is exhausted (which reads
  // as the range's minimum), so short inputs give small, plain models.
  bool one_in(int n) { return data_.ConsumeIntegralInRange<int>(1, n) == n; }
  int64_t range(int64_t low, int64_t high) { return data_.ConsumeIntegralInRange(low, high); }
  template <typename T>
  const T& pick(const std::vector<T>& choices) {
    return choices[data_.ConsumeIntegralInRange<size_t>(0, choices.size() - 1)];
  }
  int64_t dim();                                           // 0 (unless excluded), 1 and small sizes
  std::vector<int64_t> shape(int min_rank, int max_rank);  // at most kMaxElements elements
  ir::DType dtype(DTypeClass type_class);
  double float_value();                // a small float, sometimes special
  int64_t int_value(ir::DType dtype);  // small, sometimes 0 or an extreme

  // Values. `find` returns a value `accept` takes, recent ones more often, or nullopt.
  std::optional<GenValue> find(const std::function<bool(const GenValue&)>& accept);
  // A value of `dtype` and `dims`: usually an existing one, else a new leaf.
  GenValue operand(ir::DType dtype, const std::vector<int64_t>& dims);
  GenValue leaf(ir::DType dtype, const std::vector<int64_t>& dims);      // input or constant
  GenValue constant(ir::DType dtype, const std::vector<int64_t>& dims);  // random data
  // An integer constant (int64 unless `dtype` says int32 or bool) holding `ints` in `dims`:
  // axes, shapes, pads, starts, indices...
  GenValue int_constant(const std::vector<int64_t>& ints, const std::vector<int64_t>& dims,
                        ir::DType dtype = ir::DType::kInt64);
  GenValue ints(const std::vector<int64_t>& values) {
    return int_constant(values, {static_cast<int64_t>(values.size())});
  }
  GenValue int_scalar(int64_t value, ir::DType dtype = ir::DType::kInt64) {
    return int_constant({value}, {}, dtype);
  }
  // A float constant of `dtype` holding `values` in `dims`.
  GenValue float_constant(ir::DType dtype, const std::vector<double>& values,
                          const std::vector<int64_t>& dims);

  // Declares an opset import for a custom domain (once).
  void use_domain(const std::string& domain);

  // Nodes. Inputs are value names ("" for an omitted optional input).
  onnx::NodeProto* add_node(std::string_view op_type, const std::vector<std::string>& inputs,
                            std::string_view domain = "");
  // A new output of `node` with the given type, added to the values.
  GenValue add_output(onnx::NodeProto* node, ir::DType dtype, std::vector<int64_t> dims);
  // Declares the value's type in value_info (for custom-domain ops, and sometimes
  // for others, so the importer's declared-vs-inferred check runs).
  void declare(const GenValue& value);

  static void set_int(onnx::NodeProto* node, const std::string& name, int64_t value);
  static void set_ints(onnx::NodeProto* node, const std::string& name,
                       const std::vector<int64_t>& values);
  static void set_float(onnx::NodeProto* node, const std::string& name, float value);
  static void set_string(onnx::NodeProto* node, const std::string& name, const std::string& value);
  // A tensor attribute holding one random element of `dtype` (ConstantOfShape's value).
  void set_scalar_tensor(onnx::NodeProto* node, const std::string& name, ir::DType dtype);

  // The graph outputs (every value nothing reads, and a few more), then the bytes.
  GeneratedModel finish();

 private:
  std::string hostile(std::string_view text);  // records a hostile name, returns it
  std::string value_name(std::string_view base);
  std::string node_name(std::string_view op_type);
  // An initializer named after `value` (also a graph input under IR version 3).
  onnx::TensorProto* add_initializer(const GenValue& value);
  // Name and tensor type of `value`; the dims' values only when `with_dims`.
  static void declare_type(onnx::ValueInfoProto* info, const GenValue& value, bool with_dims);
  void fill(onnx::TensorProto* tensor, ir::DType dtype, const std::vector<int64_t>& dims);
  void add_value(GenValue value);

  FuzzedDataProvider& data_;
  const GeneratorOptions& options_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  int64_t opset_;
  std::vector<GenValue> values_;
  std::set<std::string> used_names_;
  std::set<std::string> read_;  // values some node reads
  std::vector<std::string> node_names_;
  std::vector<std::string> hostile_names_;
  int next_name_ = 0;
};

}  // namespace stitch::fuzz
