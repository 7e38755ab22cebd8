// C text of values, types and indices for the generated CUDA (see cuda_text.h).
#include "emit/cuda_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "support/escape.h"

namespace stitch::emit {

using ir::DType;

std::string num(int64_t value) { return std::to_string(value); }

std::string float_literal(double value) {
  if (std::isnan(value)) return "__uint_as_float(0x7fc00000u)";
  if (std::isinf(value))
    return value < 0 ? "__uint_as_float(0xff800000u)" : "__uint_as_float(0x7f800000u)";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text + "f";
}

std::string double_literal(double value) {
  if (!std::isfinite(value)) return float_literal(value);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);  // round-trips every double
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

std::string empty_value_body(const std::string& compute) {
  return "    static_cast<void>(i);  // no elements: never called\n    return static_cast<" +
         compute + ">(0);\n";
}

std::string element_literal(const ir::Tensor& tensor, const std::string& compute) {
  if (ir::dtype_is_float(tensor.dtype)) {
    const double value = tensor.float_at(0);
    if (!std::isfinite(value)) return float_literal(value);
    if (tensor.dtype == DType::kFloat64) {
      return "static_cast<" + compute + ">(" + double_literal(value) + ")";
    }
    if (compute == "float") return float_literal(value);  // f32, f16 and bf16 values
    return "static_cast<" + compute + ">(" + float_literal(value) + ")";
  }
  if (tensor.dtype == DType::kBool) return tensor.int_at(0) != 0 ? "true" : "false";
  if (tensor.dtype == DType::kUInt64) {
    return "static_cast<" + compute + ">(" +
           std::to_string(static_cast<uint64_t>(tensor.int_at(0))) + "ULL)";
  }
  const int64_t value = tensor.int_at(0);
  const std::string text = value == std::numeric_limits<int64_t>::min()
                               ? "(-9223372036854775807LL - 1)"
                               : std::to_string(value) + "LL";
  return "static_cast<" + compute + ">(" + text + ")";
}

bool is_baked_scalar(const ir::Value& value) {
  if (value.constant == nullptr || value.is_graph_input || value.producer != ir::kNoId)
    return false;
  const ir::Tensor& tensor = *value.constant;
  const bool numeric = ir::dtype_is_float(tensor.dtype) || ir::dtype_is_integer(tensor.dtype) ||
                       tensor.dtype == DType::kBool;
  return numeric && tensor.num_elements() == 1 &&
         static_cast<int64_t>(tensor.bytes.size()) == ir::dtype_size(tensor.dtype);
}

std::string strided_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                          const std::string& var) {
  struct Merged {
    int64_t dim;
    int64_t stride;
  };
  std::vector<Merged> merged;  // innermost first
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 1) continue;
    if (!merged.empty() && merged.back().stride * merged.back().dim == strides[d]) {
      merged.back().dim *= dims[d];
    } else if (!merged.empty() && merged.back().stride == 0 && strides[d] == 0) {
      merged.back().dim *= dims[d];
    } else {
      merged.push_back(Merged{dims[d], strides[d]});
    }
  }
  int64_t total = product(dims);
  // Nothing is ever read from an index space without elements (and dividing by its
  // zero extent would not compile cleanly).
  if (total == 0) return "0";
  std::vector<std::string> terms;
  int64_t divisor = 1;
  for (const Merged& m : merged) {
    if (m.stride != 0) {
      std::string term = divisor == 1 ? var : "(" + var + " / " + num(divisor) + ")";
      if (divisor * m.dim != total) term = "(" + term + " % " + num(m.dim) + ")";
      if (m.stride != 1) term += " * " + num(m.stride);
      terms.push_back(term);
    }
    divisor *= m.dim;
  }
  if (terms.empty()) return "0";
  std::string text;
  for (size_t t = terms.size(); t-- > 0;) text += terms[t] + (t ? " + " : "");
  return text;
}

std::string transposed_index(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                             const std::vector<int64_t>& perm, size_t axes,
                             const std::string& var) {
  std::vector<int64_t> out_strides(axes, 1);
  for (size_t d = axes; d-- > 1;) out_strides[d - 1] = out_strides[d] * out[d];
  std::vector<int64_t> strides(axes, 0);
  for (size_t d = 0; d < axes; ++d) strides[static_cast<size_t>(perm[d])] = out_strides[d];
  return strided_index(
      std::vector<int64_t>(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(axes)), strides,
      var);
}

std::string broadcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                            const std::string& var) {
  if (out == in) return var;
  std::vector<int64_t> padded(out.size(), 1);
  size_t pad = out.size() - std::min(out.size(), in.size());
  for (size_t d = 0; d < in.size() && d + pad < out.size(); ++d) padded[d + pad] = in[d];
  std::vector<int64_t> strides = row_major_strides(padded);
  for (size_t d = 0; d < out.size(); ++d) {
    if (padded[d] == 1) strides[d] = 0;
  }
  return strided_index(out, strides, var);
}

Result<std::string> storage_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return std::string("float");
    case DType::kFloat16:
      return std::string("__half");
    case DType::kBFloat16:
      return std::string("__nv_bfloat16");
    case DType::kFloat64:
      return std::string("double");
    case DType::kInt64:
      return std::string("long long");
    case DType::kInt32:
      return std::string("int");
    case DType::kInt16:
      return std::string("short");
    case DType::kInt8:
      return std::string("signed char");
    case DType::kUInt8:
      return std::string("unsigned char");
    case DType::kUInt16:
      return std::string("unsigned short");
    case DType::kUInt32:
      return std::string("unsigned int");
    case DType::kUInt64:
      return std::string("unsigned long long");
    case DType::kBool:
      return std::string("bool");
    default:
      break;
  }
  return Status::invalid_input("dtype " + std::string(ir::dtype_onnx_name(dtype)) +
                               " has no CUDA representation");
}

bool is_half_like(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

std::string compute_type(DType dtype) {
  if (is_half_like(dtype)) return "float";
  Result<std::string> storage = storage_type(dtype);
  return storage.is_ok() ? storage.value() : "float";
}

std::string load(DType dtype, const std::string& element) {
  if (dtype == DType::kFloat16) return "__half2float(" + element + ")";
  if (dtype == DType::kBFloat16) return "__bfloat162float(" + element + ")";
  return element;
}

std::string store(DType dtype, const std::string& value) {
  if (dtype == DType::kFloat16) return "__float2half_rn(" + value + ")";
  if (dtype == DType::kBFloat16) return "__float2bfloat16_rn(" + value + ")";
  return value;
}

std::string rounded(DType dtype, const std::string& value) {
  return load(dtype, store(dtype, value));
}

std::string convert(DType from, DType to, const std::string& x) {
  std::string target = compute_type(to);
  if (from == to || compute_type(from) == target) return x;
  if (to == DType::kBool) return "(" + x + " != 0)";
  if (ir::dtype_is_float(from) && !ir::dtype_is_float(to)) {
    // The range checks in the value's own type: -2^63, 2^63 and 2^64 are exact in
    // float too, so a float never widens to double (no FP64 instruction).
    const bool in_float = compute_type(from) == "float";
    std::string wide = in_float ? x : "static_cast<double>(" + x + ")";
    const std::string suffix = in_float ? "f" : "";
    std::string in_range = "(" + wide + " > -9.2233720368547758e18" + suffix + " && " + wide +
                           " < 9.2233720368547758e18" + suffix + ")";
    std::string fallback = "static_cast<" + target + ">(-9223372036854775807LL - 1)";
    if (to == DType::kUInt64) {
      fallback = "((" + wide + " >= 0" + (in_float ? ".0f" : ".0") + " && " + wide +
                 " < 1.8446744073709552e19" + suffix + ") ? static_cast<unsigned long long>(" +
                 wide + ") : " + fallback + ")";
    }
    return "(" + in_range + " ? static_cast<" + target + ">(static_cast<long long>(" + wide +
           ")) : " + fallback + ")";
  }
  return "static_cast<" + target + ">(" + x + ")";
}

std::string comment_name(const ir::Node& node) {
  std::string shown = node.name.empty() ? "<unnamed>" : support::source_literal(node.name);
  return shown + " (" + support::source_text(node.op_type) + ")";
}

size_t output_slot(const ir::Node& node, ir::ValueId value) {
  size_t slot = 0;
  while (node.outputs[slot] != value) ++slot;
  return slot;
}

std::vector<int64_t> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t slot,
                                   bool* present) {
  *present = false;
  if (slot >= node.inputs.size() || node.inputs[slot] == ir::kNoId) return {};
  const ir::Value& value = graph.value(node.inputs[slot]);
  if (value.constant == nullptr) return {};
  *present = true;
  return value.constant->to_int64_vector();
}

}  // namespace stitch::emit
