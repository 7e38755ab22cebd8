// The random model generator's op builders (random_model.h): one per family of
// registry ops, each choosing operands, attributes (or attribute-inputs, by opset)
// and computing the output types as ONNX defines them. A builder that cannot fit its
// op to what exists (no operand of a usable rank, a shape past kMaxElements) returns
// false and the generator tries another op. Elementwise ops and reductions are in
// random_model.cc, shape and NN ops in random_model_shape_nn.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/fuzz/model_builder.h"
#include "tests/fuzz/random_model.h"

namespace stitch::fuzz::detail {

using Dims = std::vector<int64_t>;
using ir::DType;

// numpy broadcasting; nullopt when the shapes do not broadcast.
std::optional<Dims> broadcast(const Dims& a, const Dims& b);
inline int64_t rank_of(const GenValue& value) { return static_cast<int64_t>(value.dims.size()); }

class Generator {
 public:
  Generator(FuzzedDataProvider& data, const GeneratorOptions& options) : b_(data, options) {}
  GeneratedModel run();

 private:
  using Build = bool (Generator::*)(const std::string& op);
  struct OpEntry {
    std::string op;
    int64_t min_opset;
    Build build;
  };
  static const std::vector<OpEntry>& ops();

  // An operand of `type_class` with rank in [min_rank, max_rank].
  GenValue input(DTypeClass type_class, int min_rank = 0, int max_rank = 4);
  // A second operand of `dtype` that broadcasts with `first` (result within bounds).
  GenValue partner(const GenValue& first, DType dtype);
  // `axis_value` of a rank-`rank` tensor, counted from the back (negative) when the
  // opset allows it and the fuzzer says so.
  int64_t axis(int64_t axis_value, int64_t rank, int64_t negative_from_opset = 11);
  GenValue output(onnx::NodeProto* node, DType dtype, Dims dims) {
    return b_.add_output(node, dtype, std::move(dims));
  }
  // Within kMaxElements, and not empty unless zero-size tensors are allowed.
  bool fits(const Dims& dims) const {
    const int64_t count = element_count(dims);
    return count <= kMaxElements && (count > 0 || b_.options().zero_dims);
  }
  int64_t min_dim() const { return b_.options().zero_dims ? 0 : 1; }
  bool int_division_ok(DType dtype) const {
    return b_.options().integer_division || ir::dtype_is_float(dtype);
  }

  bool unary_float(const std::string& op);
  bool unary_numeric(const std::string& op);
  bool unary_any(const std::string& op);
  bool cast(const std::string& op);
  bool binary(const std::string& op);
  bool compare(const std::string& op);
  bool logic(const std::string& op);
  bool where(const std::string& op);
  bool variadic(const std::string& op);
  bool clip(const std::string& op);
  bool dropout(const std::string& op);
  bool prelu(const std::string& op);
  bool reduce(const std::string& op);
  bool arg_reduce(const std::string& op);
  bool softmax(const std::string& op);
  bool normalization(const std::string& op);
  bool expand(const std::string& op);
  bool transpose(const std::string& op);
  bool concat(const std::string& op);
  bool split(const std::string& op);
  bool slice(const std::string& op);
  bool gather(const std::string& op);
  bool pad(const std::string& op);
  bool tile(const std::string& op);
  bool trilu(const std::string& op);
  bool reshape(const std::string& op);
  bool flatten(const std::string& op);
  bool squeeze(const std::string& op);
  bool shape_of(const std::string& op);
  bool constant_of_shape(const std::string& op);
  bool range(const std::string& op);
  bool cumsum(const std::string& op);
  bool scatter_nd(const std::string& op);
  bool matmul(const std::string& op);
  bool gemm(const std::string& op);
  bool conv_or_pool(const std::string& op);
  bool global_pool(const std::string& op);
  bool topk(const std::string& op);
  bool einsum(const std::string& op);
  bool resize(const std::string& op);
  bool lstm(const std::string& op);
  bool custom(const std::string& op);
  bool wide(const std::string& op);
  bool chain(const std::string& op);

  ModelBuilder b_;
};

}  // namespace stitch::fuzz::detail
