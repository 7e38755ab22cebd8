// The CUDA emitter (see cuda_emitter.h).
#include "emit/cuda_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "cost_model/cost_model.h"
#include "emit/schedule.h"
#include "ir/reference/interpreter.h"
#include "ir/core/op_registry.h"
#include "support/escape.h"

namespace stitch::emit {
namespace {

using ir::DType;

std::string num(int64_t value) { return std::to_string(value); }

// A float literal that round-trips (as float).
// A float constant (attributes, fill values) as C: %.9g round-trips every float;
// infinities and NaN, which have no literal, by their bits.
std::string float_literal(double value) {
  if (std::isnan(value)) return "__uint_as_float(0x7fc00000u)";
  if (std::isinf(value)) return value < 0 ? "__uint_as_float(0xff800000u)" : "__uint_as_float(0x7f800000u)";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  std::string text = buffer;
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text + "f";
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// The body of the index function of a value without elements: no thread ever calls it.
std::string empty_value_body(const std::string& compute) {
  return "    static_cast<void>(i);  // no elements: never called\n    return static_cast<" + compute +
         ">(0);\n";
}

// Element 0 of `tensor` as a C expression of its compute type `compute`, valid in every
// compile mode (infinities and NaN by their bits).
std::string element_literal(const ir::Tensor& tensor, const std::string& compute) {
  if (ir::dtype_is_float(tensor.dtype)) {
    const double value = tensor.float_at(0);
    if (!std::isfinite(value)) return float_literal(value);
    return "static_cast<" + compute + ">(" + float_literal(value) + ")";
  }
  if (tensor.dtype == DType::kBool) return tensor.int_at(0) != 0 ? "true" : "false";
  if (tensor.dtype == DType::kUInt64) {
    return "static_cast<" + compute + ">(" + std::to_string(static_cast<uint64_t>(tensor.int_at(0))) + "ULL)";
  }
  const int64_t value = tensor.int_at(0);
  const std::string text = value == std::numeric_limits<int64_t>::min() ? "(-9223372036854775807LL - 1)"
                                                                          : std::to_string(value) + "LL";
  return "static_cast<" + compute + ">(" + text + ")";
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t result = 1;
  for (int64_t d : dims) result *= d;
  return result;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t d = 0; d < dims.size(); ++d) text += (d ? "," : "") + num(dims[d]);
  return text + "]";
}

// The flat index of an operand read through a mixed-radix decomposition of `var` over
// `dims` (innermost last), each coordinate scaled by `strides` (0: broadcast).
// Adjacent dims that stay contiguous are merged, so a plain copy reads `var`.
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

// Numpy broadcasting: the index of an operand of shape `in` read at the flat index
// `var` of the output shape `out`.
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
    case DType::kFloat32: return std::string("float");
    case DType::kFloat16: return std::string("__half");
    case DType::kBFloat16: return std::string("__nv_bfloat16");
    case DType::kFloat64: return std::string("double");
    case DType::kInt64: return std::string("long long");
    case DType::kInt32: return std::string("int");
    case DType::kInt16: return std::string("short");
    case DType::kInt8: return std::string("signed char");
    case DType::kUInt8: return std::string("unsigned char");
    case DType::kUInt16: return std::string("unsigned short");
    case DType::kUInt32: return std::string("unsigned int");
    case DType::kUInt64: return std::string("unsigned long long");
    case DType::kBool: return std::string("bool");
    default: break;
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

// A float value rounded to `dtype` and back: ONNX computes every float16/bfloat16
// result in its type, so a fused kernel rounds each one before anything reads it (as
// memory would), the way the reference interpreter does; other types are unchanged.
std::string rounded(DType dtype, const std::string& value) { return load(dtype, store(dtype, value)); }

// Conversion of a compute-type value `x` from `from` to `to` (ONNX Cast as the
// reference interpreter does it: float -> integer truncates toward zero through
// int64, out-of-range and NaN give INT64_MIN converted; anything -> bool is != 0).
std::string convert(DType from, DType to, const std::string& x) {
  std::string target = compute_type(to);
  if (from == to || compute_type(from) == target) return x;
  if (to == DType::kBool) return "(" + x + " != 0)";
  if (ir::dtype_is_float(from) && !ir::dtype_is_float(to)) {
    std::string wide = "static_cast<double>(" + x + ")";
    std::string in_range = "(" + wide + " > -9.2233720368547758e18 && " + wide +
                           " < 9.2233720368547758e18)";
    std::string fallback = "static_cast<" + target + ">(-9223372036854775807LL - 1)";
    if (to == DType::kUInt64) {
      fallback = "((" + wide + " >= 0.0 && " + wide + " < 1.8446744073709552e19) ? static_cast<unsigned long long>(" +
                 wide + ") : " + fallback + ")";
    }
    return "(" + in_range + " ? static_cast<" + target + ">(static_cast<long long>(" + wide +
           ")) : " + fallback + ")";
  }
  return "static_cast<" + target + ">(" + x + ")";
}

// A node as the generated comments show it: "name" (OpType), both escaped
// (ir/escape.h): model strings never reach the source raw.
std::string comment_name(const ir::Node& node) {
  std::string shown = node.name.empty() ? "<unnamed>" : support::source_literal(node.name);
  return shown + " (" + support::source_text(node.op_type) + ")";
}

// The output slot of `node` that produces `value`.
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

struct ReduceSpec {
  std::string kind;  // "sum", "max", "min", "prod"
  std::string pre;   // applied to each element: "v", "fabs(v)", "v * v"
  std::string post;  // the function applied to the result: "", "sqrt", "log"
  bool mean = false;
};

// The reduction's result from its accumulator `a`, in double or in float math.
std::string reduce_result(const ReduceSpec& spec, bool in_float) {
  if (spec.post.empty()) return "a";
  return spec.post + (in_float ? "f(a)" : "(a)");
}

Result<ReduceSpec> reduce_spec(const ir::Node& node) {
  const std::string& op = node.op_type;
  if (op == "ReduceSum") return ReduceSpec{"sum", "v", "", false};
  if (op == "ReduceMean") return ReduceSpec{"sum", "v", "", true};
  if (op == "ReduceMax") return ReduceSpec{"max", "v", "", false};
  if (op == "ReduceMin") return ReduceSpec{"min", "v", "", false};
  if (op == "ReduceProd") return ReduceSpec{"prod", "v", "", false};
  if (op == "ReduceL1") return ReduceSpec{"sum", "(v < 0 ? -v : v)", "", false};
  if (op == "ReduceL2") return ReduceSpec{"sum", "v * v", "sqrt", false};
  if (op == "ReduceSumSquare") return ReduceSpec{"sum", "v * v", "", false};
  if (op == "ReduceLogSum") return ReduceSpec{"sum", "v", "log", false};
  return Status::invalid_input("node " + node.display_name() + ": no CUDA reduction for " + op);
}

// Row-local reductions: the statements turning the row's combined accumulator `a`
// (float) into the register r_<base>.
std::string row_result(const ReduceSpec& spec, int64_t length, const std::string& base,
                       DType dtype, const std::string& indent) {
  std::string code;
  if (spec.mean) code += indent + "a = a / " + float_literal(static_cast<double>(length)) + ";\n";
  return code + indent + "r_" + base + " = " + rounded(dtype, reduce_result(spec, true)) + ";\n";
}

std::string combine(const std::string& kind, const std::string& a, const std::string& b,
                    bool floating) {
  if (kind == "sum") return a + " + " + b;
  if (kind == "prod") return a + " * " + b;
  std::string nan = floating ? " || isnan(" + b + ")" : "";
  std::string cmp = kind == "max" ? " > " : " < ";
  return "(" + b + cmp + a + nan + ") ? " + b + " : " + a;
}

// The C++ type of a reduction's accumulator: float in the row-local schedules, the
// schedule's choice for warp and column mappings (double for sums and products).
std::string accumulator_type(int bytes) { return bytes == 8 ? "double" : "float"; }

// The identity of an accumulator of `kind` and `type`, valid in every compile mode.
std::string identity(const std::string& kind, const std::string& type) {
  const std::string suffix = type == "float" ? "f" : "";
  if (kind == "sum") return "0.0" + suffix;
  if (kind == "prod") return "1.0" + suffix;
  return kind == "max" ? "__uint_as_float(0xff800000u)" : "__uint_as_float(0x7f800000u)";  // -inf, +inf
}

// Lanes of a warp combine their accumulators `a` (of `type`) by xor shuffles over the
// offsets 16 down to `lowest`: every lane ends with the combination of its group.
std::string shuffle_combine(const std::string& kind, const std::string& type, int lowest,
                            const std::string& indent) {
  return indent + "for (int offset = 16; " + (lowest == 1 ? std::string("offset > 0") : "offset >= " + num(lowest)) +
         "; offset /= 2) {\n" + indent + "  const " + type + " b = __shfl_xor_sync(0xffffffffu, a, offset);\n" +
         indent + "  a = " + combine(kind, "a", "b", true) + ";\n" + indent + "}\n";
}

// Row-local block reductions: after shuffle_combine, every thread of the block gets the
// combination of the warps' float results, through the 32-float scratch at
// `scratch_offset` of the arena, in warp order.
std::string float_block_combine(const std::string& kind, int64_t scratch_offset, const std::string& indent) {
  return indent + "float* partials = reinterpret_cast<float*>(smem + " + num(scratch_offset) + ");\n" + indent +
         "if (threadIdx.x % 32 == 0) partials[threadIdx.x / 32] = a;\n" + indent + "__syncthreads();\n" + indent +
         "a = partials[0];\n" + indent + "for (unsigned int w = 1; w < blockDim.x / 32; ++w) a = " +
         combine(kind, "a", "partials[w]", true) + ";\n" + indent + "__syncthreads();\n";
}

// The stored result of a warp-mapped reduction's accumulator `a` of `type` (mean and
// post function applied) for an element of `dtype`.
std::string mapped_result(const ReduceSpec& spec, int64_t reduced, const std::string& type, DType dtype) {
  const bool in_float = type == "float";
  std::string value = spec.mean ? "(a / " + num(reduced) + (in_float ? ".0f)" : ".0)") : "a";
  if (!spec.post.empty()) value = spec.post + (in_float ? "f(" : "(") + value + ")";
  return store(dtype, in_float ? value : "static_cast<float>(" + value + ")");
}

class KernelWriter {
 public:
  KernelWriter(const ir::Graph& graph, const GroupSchedule& schedule)
      : graph_(graph), schedule_(schedule) {
    for (size_t i = 0; i < schedule.boundary.outputs.size(); ++i) {
      output_index_[schedule.boundary.outputs[i]] = i;
    }
    for (ir::NodeId id : schedule.boundary.ordered_nodes) inside_.insert(id);
    std::set<std::string> used;
    auto assign = [&](ir::ValueId id) {
      if (names_.count(id)) return;
      std::string base = support::identifier_slug(graph.value(id).name);
      std::string candidate = base;
      for (int k = 1; used.count(candidate); ++k) candidate = base + "_" + num(k);
      used.insert(candidate);
      names_[id] = candidate;
    };
    for (ir::ValueId id : schedule.boundary.inputs) assign(id);
    for (ir::NodeId node : schedule.boundary.ordered_nodes) {
      for (ir::ValueId id : graph.node(node).outputs) {
        if (id != ir::kNoId) assign(id);
      }
    }
  }

  Result<std::string> write_body();
  const std::vector<size_t>& used_inputs() const { return used_inputs_; }
  std::string pointer_name(ir::ValueId id) const { return "p_" + names_.at(id); }

 private:
  DType dtype(ir::ValueId id) const { return graph_.value(id).type.dtype; }
  const std::vector<int64_t>& dims(ir::ValueId id) const { return graph_.value(id).type.dims; }
  std::string accessor_name(ir::ValueId id) const { return "v_" + names_.at(id); }
  bool produced_inside(ir::ValueId id) const {
    ir::NodeId producer = graph_.value(id).producer;
    return producer != ir::kNoId && inside_.count(producer) > 0;
  }
  Status error(const ir::Node& node, const std::string& why) const {
    return Status::invalid_input("node " + node.display_name() + ": " + why);
  }

  // Makes sure `id` has an accessor lambda in defs_ (its operands' first); returns its
  // name.
  Result<std::string> accessor(ir::ValueId id);
  Result<std::string> define_memory_accessor(ir::ValueId id);
  Status define_inlined(ir::ValueId id);
  Result<std::string> op_body(const ir::Node& node, size_t slot);
  Result<std::string> op_statements(const ir::Node& node, size_t slot);
  Result<std::string> reduction_body(const ir::Node& node);
  Result<std::string> empty_reduction_result(const ir::Node& node, const std::vector<int64_t>& axes);
  Result<std::string> gemm_body(const ir::Node& node);
  std::string define_compute(ir::ValueId id, const std::string& body, const std::string& note);
  Result<std::string> value_function(ir::ValueId id);
  Result<std::string> stage_code(ir::ValueId id, const std::string& indent);
  Result<std::string> row_code(ir::ValueId id, const std::string& indent);
  Result<std::string> combine_code(ir::ValueId id, bool write, const std::string& indent);
  Result<std::string> mapped_reduction_code(ir::ValueId id, const std::string& indent);
  Result<std::string> partials_code(ir::ValueId id, const std::string& indent);
  std::string partials_pointer(ir::ValueId id);
  Result<std::string> tiled_gemm_code(const std::vector<ir::ValueId>& written);
  bool reads_through_registers(ir::ValueId written, ir::ValueId target) const;
  Result<std::string> operand_value(ir::ValueId id, const std::string& index);

  const ir::Graph& graph_;
  const GroupSchedule& schedule_;
  std::map<ir::ValueId, std::string> names_;
  std::map<ir::ValueId, size_t> output_index_;
  std::set<ir::NodeId> inside_;
  std::set<ir::ValueId> defined_;
  bool defining_inlined_ = false;     // inside accessor()'s loop
  ir::ValueId pending_ = ir::kNoId;   // the operand a define_inlined() is waiting for
  std::set<ir::ValueId> computed_;  // compute_ lambdas defined
  std::set<ir::ValueId> partials_declared_;  // pt_ pointers of sliced reductions
  std::vector<size_t> used_inputs_;
  std::ostringstream defs_;
};

// An inlined value's accessor is defined after its operands' accessors. That order comes
// without recursion (a chain of thousands of inlined ops must not overflow the
// stack): when op_body meets an inlined operand without an accessor, accessor() records
// it in pending_ and fails; the driver below defines the operand first and tries the
// value again. Boundary inputs and materialized values read memory and are defined on
// the spot, so the definitions come out in the order a depth-first recursion writes
// them, and the stack depth does not grow with the chain.
Result<std::string> KernelWriter::accessor(ir::ValueId id) {
  if (defined_.count(id)) return accessor_name(id);
  if (!produced_inside(id) || schedule_.values.at(id).materialized) return define_memory_accessor(id);
  if (defining_inlined_) {
    pending_ = id;
    return Status::internal("\"" + graph_.value(id).name + "\" is defined first");
  }
  defining_inlined_ = true;
  std::vector<ir::ValueId> stack = {id};
  Status status = Status::ok();
  while (!stack.empty() && status.is_ok()) {
    pending_ = ir::kNoId;
    status = define_inlined(stack.back());
    if (pending_ != ir::kNoId) {
      stack.push_back(pending_);
      status = Status::ok();
    } else if (status.is_ok()) {
      stack.pop_back();
    }
  }
  defining_inlined_ = false;
  STITCH_RETURN_IF_ERROR(status);
  return accessor_name(id);
}

// A boundary input (read from its pointer) or a materialized value (read from its
// storage).
Result<std::string> KernelWriter::define_memory_accessor(ir::ValueId id) {
  std::string name = accessor_name(id);
  STITCH_ASSIGN_OR_RETURN(std::string storage, storage_type(dtype(id)));
  std::string ct = compute_type(dtype(id));
  if (!produced_inside(id)) {
    auto it = std::find(schedule_.boundary.inputs.begin(), schedule_.boundary.inputs.end(), id);
    STITCH_CHECK(it != schedule_.boundary.inputs.end()) << "value outside the group";
    used_inputs_.push_back(static_cast<size_t>(it - schedule_.boundary.inputs.begin()));
    defs_ << "  auto " << name << " = [&](long long i) -> " << ct << " { return "
          << load(dtype(id), pointer_name(id) + "[i]") << "; };\n";
    defined_.insert(id);
    return name;
  }
  const ValueSchedule& value = schedule_.values.at(id);
  const std::string& base = names_.at(id);
  switch (value.storage) {
    case Storage::kOutput:
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](long long i) -> " << ct << " { return "
            << load(dtype(id), pointer_name(id) + "[i]") << "; };\n";
      break;
    case Storage::kWorkspace:
      defs_ << "  " << storage << "* ws_" << base << " = reinterpret_cast<" << storage
            << "*>(workspace + " << value.offset << ");\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](long long i) -> " << ct << " { return "
            << load(dtype(id), "ws_" + base + "[i]") << "; };\n";
      break;
    case Storage::kShared:
      defs_ << "  " << storage << "* sh_" << base << " = reinterpret_cast<" << storage
            << "*>(smem + row_slot + " << value.offset << ");\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](long long i) -> " << ct << " { return "
            << load(dtype(id), "sh_" + base + "[i - row * " + num(value.row_elements) + "]")
            << "; };\n";
      break;
    case Storage::kRegister:
      defs_ << "  " << ct << " r_" << base << " = 0;\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](long long) -> " << ct << " { return r_" << base
            << "; };\n";
      break;
  }
  defined_.insert(id);
  return name;
}

// An inlined value: an index function of its operands (whose accessors exist, or
// pending_ names the first that does not); cached per thread when several ops read it.
Status KernelWriter::define_inlined(ir::ValueId id) {
  STITCH_RETURN_IF_ERROR(storage_type(dtype(id)).status());
  const std::string name = accessor_name(id);
  const std::string ct = compute_type(dtype(id));
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  STITCH_ASSIGN_OR_RETURN(std::string body, op_body(node, output_slot(node, id)));
  int readers = 0;
  for (const ir::Use& use : graph_.value(id).users) readers += inside_.count(use.node) ? 1 : 0;
  defs_ << "  // " << node.op_type << " " << comment_name(node) << ": "
        << ir::to_string(graph_.value(id).type) << "\n";
  if (readers >= 2 && ir::op_kind(node) != ir::OpKind::kView) {
    const std::string& base = names_.at(id);
    defs_ << "  " << ct << " c_" << base << " = 0;\n";
    defs_ << "  long long ci_" << base << " = -1;\n";
    defs_ << "  auto compute_" << base << " = [&](long long i) -> " << ct << " {\n" << body << "  };\n";
    defs_ << "  auto " << name << " = [&](long long i) -> " << ct << " {\n"
          << "    if (ci_" << base << " != i) {\n      c_" << base << " = compute_" << base
          << "(i);\n      ci_" << base << " = i;\n    }\n    return c_" << base << ";\n  };\n";
  } else {
    defs_ << "  auto " << name << " = [&](long long i) -> " << ct << " {\n" << body << "  };\n";
  }
  defined_.insert(id);
  return Status::ok();
}

// Statements computing output `slot` of `node` at flat index `i`, ending in a return;
// a float16/bfloat16 result is rounded to its type (see rounded()).
Result<std::string> KernelWriter::op_body(const ir::Node& node, size_t slot) {
  STITCH_ASSIGN_OR_RETURN(std::string body, op_statements(node, slot));
  const DType out_type = dtype(node.outputs[slot]);
  const bool passes_through = ir::op_kind(node) == ir::OpKind::kView || node.op_type == "Dropout";
  if (rounded(out_type, "v") == "v" || passes_through) return body;
  std::string indented;
  for (size_t start = 0; start < body.size();) {
    size_t end = body.find('\n', start);
    indented += "  " + body.substr(start, end - start + 1);
    start = end + 1;
  }
  return "    return " + rounded(out_type, "[&]() -> float {\n" + indented + "    }()") + ";\n";
}

// op_body's statements before the rounding.
Result<std::string> KernelWriter::op_statements(const ir::Node& node, size_t slot) {
  const std::string& op = node.op_type;
  const ir::ValueId out = node.outputs[slot];
  const std::vector<int64_t>& out_dims = dims(out);
  const DType out_type = dtype(out);
  const std::string ct = compute_type(out_type);
  STITCH_RETURN_IF_ERROR(storage_type(out_type).status());
  if (product(out_dims) == 0) return empty_value_body(ct);
  ir::OpKind kind = ir::op_kind(node);
  auto input = [&](size_t k) { return k < node.inputs.size() ? node.inputs[k] : ir::kNoId; };
  // Reads operand k broadcast to the output's shape at index `var`.
  auto read = [&](size_t k, const std::string& var) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string name, accessor(input(k)));
    return name + "(" + broadcast_index(out_dims, dims(input(k)), var) + ")";
  };
  auto ret = [&](const std::string& expr) { return "    return " + expr + ";\n"; };

  if (kind == ir::OpKind::kReduction) {
    // Only a no-op reduction (noop_with_empty_axes, no axes) is inlined: the identity.
    STITCH_ASSIGN_OR_RETURN(std::string x, accessor(input(0)));
    return ret(x + "(i)");
  }
  if (kind == ir::OpKind::kGemm) return error(node, "is materialized, not inlined (emitter bug)");
  if (kind == ir::OpKind::kView || op == "Dropout") {
    if (slot != 0) return error(node, "only output 0 of " + op + " can be emitted");
    STITCH_ASSIGN_OR_RETURN(std::string x, accessor(input(0)));
    return ret(x + "(i)");
  }
  if (kind == ir::OpKind::kElementwise) {
    const DType in_type = dtype(input(0));
    const bool floating = ir::dtype_is_float(in_type);
    // Unary float math.
    static const std::map<std::string, std::string> unary = {
        {"Exp", "expf(x)"}, {"Log", "logf(x)"}, {"Sqrt", "sqrtf(x)"}, {"Tanh", "tanhf(x)"},
        {"Erf", "erff(x)"}, {"Sin", "sinf(x)"}, {"Cos", "cosf(x)"}, {"Floor", "floorf(x)"},
        {"Ceil", "ceilf(x)"}, {"Reciprocal", "1.0f / x"}, {"Tan", "tanf(x)"}, {"Asin", "asinf(x)"},
        {"Acos", "acosf(x)"}, {"Atan", "atanf(x)"}, {"Sinh", "sinhf(x)"}, {"Cosh", "coshf(x)"},
        {"Asinh", "asinhf(x)"}, {"Acosh", "acoshf(x)"}, {"Atanh", "atanhf(x)"},
        {"Sigmoid", "1.0f / (1.0f + expf(-x))"},
        {"Softplus", "x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))"},
        {"Softsign", "x / (1.0f + fabsf(x))"},
        {"Mish", "x * tanhf(x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)))"},
        {"Round", "(fabsf(x - truncf(x)) == 0.5f) ? 2.0f * roundf(0.5f * x) : roundf(x)"}};
    auto unary_it = unary.find(op);
    std::string head;
    if (op != "Where" && !node.inputs.empty() && input(0) != ir::kNoId) {
      STITCH_ASSIGN_OR_RETURN(std::string x_load, read(0, "i"));
      head = "    const " + compute_type(in_type) + " x = " + x_load + ";\n";
    }
    if (unary_it != unary.end()) {
      if (ct != "float") return error(node, "supports float, float16 and bfloat16 only in CUDA");
      return head + ret(unary_it->second);
    }
    if (op == "Abs") return head + ret(floating ? "fabs(x)" : "(x < 0 ? -x : x)");
    if (op == "Neg") return head + ret("-x");
    // Relu, Sign, Celu and HardSigmoid keep a NaN as the reference interpreter does
    // (docs/semantics.md): a NaN fails every comparison and falls through; Celu tests
    // for it because fmaxf and fminf would drop it.
    if (op == "Relu") return head + ret("x < 0 ? static_cast<" + ct + ">(0) : x");
    if (op == "Sign") {
      return head + ret("x > 0 ? static_cast<" + ct + ">(1) : (x < 0 ? static_cast<" + ct + ">(-1) : x)");
    }
    if (op == "Not") return head + ret("!x");
    if (op == "IsNaN") return head + ret("isnan(x)");
    if (op == "IsInf") {
      bool positive = node.int_attribute("detect_positive", 1) != 0;
      bool negative = node.int_attribute("detect_negative", 1) != 0;
      return head + ret(std::string("isinf(x) && ") + (positive && negative ? "true" : positive ? "x > 0" : negative ? "x < 0" : "false"));
    }
    if (op == "LeakyRelu") {
      return head + ret("x >= 0.0f ? x : " + float_literal(node.float_attribute("alpha", 0.01f)) + " * x");
    }
    if (op == "ThresholdedRelu") {
      return head + ret("x > " + float_literal(node.float_attribute("alpha", 1.0f)) + " ? x : 0.0f");
    }
    if (op == "Elu") {
      return head + ret("x >= 0.0f ? x : " + float_literal(node.float_attribute("alpha", 1.0f)) + " * expm1f(x)");
    }
    if (op == "Celu") {
      std::string alpha = float_literal(node.float_attribute("alpha", 1.0f));
      return head + ret("isnan(x) ? x : fmaxf(0.0f, x) + fminf(0.0f, " + alpha + " * expm1f(x / " + alpha + "))");
    }
    if (op == "Selu") {
      std::string alpha = float_literal(node.float_attribute("alpha", 1.67326319217681884765625f));
      std::string gamma = float_literal(node.float_attribute("gamma", 1.05070102214813232421875f));
      return head + ret(gamma + " * (x > 0.0f ? x : " + alpha + " * expm1f(x))");
    }
    if (op == "HardSigmoid") {
      return head + "    const " + ct + " y = " + float_literal(node.float_attribute("alpha", 0.2f)) + " * x + " +
             float_literal(node.float_attribute("beta", 0.5f)) + ";\n" + ret("y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y)");
    }
    if (op == "HardSwish") return head + ret("x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f))");
    if (op == "Gelu") {
      if (node.string_attribute("approximate", "none") == "tanh") {
        return head + ret("0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))");
      }
      return head + ret("0.5f * x * (1.0f + erff(x * 0.70710678118654752f))");
    }
    if (op == "Cast" || op == "CastLike") {
      return head + ret(convert(in_type, out_type, "x"));
    }
    if (op == "Clip") {
      std::string body = head + "    " + ct + " y = x;\n";
      if (node.opset < 11) {
        if (node.find_attribute("min")) body += "    if (y < " + float_literal(node.float_attribute("min", 0)) + ") y = " + float_literal(node.float_attribute("min", 0)) + ";\n";
        if (node.find_attribute("max")) body += "    if (y > " + float_literal(node.float_attribute("max", 0)) + ") y = " + float_literal(node.float_attribute("max", 0)) + ";\n";
      } else {
        for (size_t k = 1; k < 3; ++k) {
          if (input(k) == ir::kNoId) continue;
          STITCH_ASSIGN_OR_RETURN(std::string bound, accessor(input(k)));
          body += "    if (y " + std::string(k == 1 ? "<" : ">") + " " + bound + "(0)) y = " + bound + "(0);\n";
        }
      }
      return body + ret("y");
    }
    if (op == "Where") {
      STITCH_ASSIGN_OR_RETURN(std::string c, read(0, "i"));
      STITCH_ASSIGN_OR_RETURN(std::string a, read(1, "i"));
      STITCH_ASSIGN_OR_RETURN(std::string b, read(2, "i"));
      return ret(c + " ? " + a + " : " + b);
    }
    if (op == "PRelu") {
      STITCH_ASSIGN_OR_RETURN(std::string slope, read(1, "i"));
      return head + ret("x < 0 ? " + slope + " * x : x");
    }
    if (op == "Sum" || op == "Mean" || op == "Max" || op == "Min") {
      std::string body = head + "    " + ct + " y = x;\n";
      for (size_t k = 1; k < node.inputs.size(); ++k) {
        STITCH_ASSIGN_OR_RETURN(std::string v, read(k, "i"));
        body += "    {\n      const " + ct + " v = " + v + ";\n";
        if (op == "Sum" || op == "Mean") body += "      y = y + v;\n";
        if (op == "Max") body += "      y = (" + combine("max", "y", "v", floating) + ");\n";
        if (op == "Min") body += "      y = (" + combine("min", "y", "v", floating) + ");\n";
        body += "    }\n";
      }
      if (op == "Mean") body += "    y = y / static_cast<" + ct + ">(" + num(static_cast<int64_t>(node.inputs.size())) + ");\n";
      return body + ret("y");
    }
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Mod", "Pow",
                                                 "Equal", "Less", "Greater", "LessOrEqual",
                                                 "GreaterOrEqual", "And", "Or", "Xor"};
    if (binary.count(op)) {
      STITCH_ASSIGN_OR_RETURN(std::string b_load, read(1, "i"));
      const DType b_type = dtype(input(1));
      std::string body = head + "    const " + compute_type(b_type) + " y = " + b_load + ";\n";
      if (op == "Add") return body + ret("x + y");
      if (op == "Sub") return body + ret("x - y");
      if (op == "Mul") return body + ret("x * y");
      // Integer Div and Mod as ir/core/integer_arithmetic.h defines them: x / 0 and x % 0
      // are 0, MIN / -1 wraps to MIN (negated in unsigned arithmetic), MIN % -1 is 0.
      if (op == "Div") {
        if (floating) return body + ret("x / y");
        const std::string zero = "static_cast<" + ct + ">(0)";
        if (!ir::dtype_is_signed(in_type)) return body + ret("y == 0 ? " + zero + " : static_cast<" + ct + ">(x / y)");
        return body + ret("y == 0 ? " + zero + " : (y == -1 ? static_cast<" + ct +
                          ">(0ULL - static_cast<unsigned long long>(x)) : static_cast<" + ct + ">(x / y))");
      }
      if (op == "Mod") {
        if (floating) return body + ret("fmod(x, y)");
        if (!ir::dtype_is_signed(in_type)) return body + ret("y == 0 ? static_cast<" + ct + ">(0) : static_cast<" + ct + ">(x % y)");
        body += "    if (y == 0 || y == -1) return 0;\n    " + ct + " r = x % y;\n";
        if (node.int_attribute("fmod", 0) == 0) body += "    if (r != 0 && ((r < 0) != (y < 0))) r += y;\n";
        return body + ret("r");
      }
      if (op == "Pow") {
        if (floating && ct == "float") return body + ret("powf(x, static_cast<float>(y))");
        if (floating) return body + ret("pow(x, static_cast<double>(y))");
        return body + ret("static_cast<" + ct + ">(static_cast<long long>(pow(static_cast<double>(x), static_cast<double>(y))))");
      }
      if (op == "Equal") return body + ret("x == y");
      if (op == "Less") return body + ret("x < y");
      if (op == "Greater") return body + ret("x > y");
      if (op == "LessOrEqual") return body + ret("x <= y");
      if (op == "GreaterOrEqual") return body + ret("x >= y");
      if (op == "And") return body + ret("x && y");
      if (op == "Or") return body + ret("x || y");
      if (op == "Xor") return body + ret("x != y");
    }
    return error(node, "has no CUDA implementation in the emitter; it stays unfused");
  }
  if (op == "Expand") {
    STITCH_ASSIGN_OR_RETURN(std::string expanded, read(0, "i"));
    return ret(expanded);
  }
  const ir::ValueId x_id = input(0);
  const std::vector<int64_t>& in_dims = dims(x_id);
  const std::vector<int64_t> in_strides = row_major_strides(in_dims);
  const auto rank = static_cast<int64_t>(in_dims.size());
  auto norm_axis = [&](int64_t axis, int64_t r) { return axis < 0 ? axis + r : axis; };
  // Concat reads only its non-empty parts (below); the other ops read input 0.
  std::string x;
  if (op != "Concat") {
    STITCH_ASSIGN_OR_RETURN(x, accessor(x_id));
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = node.ints_attribute("perm", {});
    if (perm.empty()) {
      for (int64_t d = rank; d-- > 0;) perm.push_back(d);
    }
    std::vector<int64_t> strides;
    for (int64_t p : perm) strides.push_back(in_strides[static_cast<size_t>(p)]);
    return ret(x + "(" + strided_index(out_dims, strides, "i") + ")");
  }
  if (op == "Slice") {
    std::vector<int64_t> starts, ends, axes, steps;
    bool present = false;
    if (node.opset < 10) {
      starts = node.ints_attribute("starts", {});
      ends = node.ints_attribute("ends", {});
      axes = node.ints_attribute("axes", {});
    } else {
      starts = constant_ints(graph_, node, 1, &present);
      if (!present) return error(node, "starts is not a constant; fold it before emitting");
      ends = constant_ints(graph_, node, 2, &present);
      if (!present) return error(node, "ends is not a constant; fold it before emitting");
      axes = constant_ints(graph_, node, 3, &present);
      steps = constant_ints(graph_, node, 4, &present);
    }
    if (axes.empty()) {
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    }
    std::vector<int64_t> start(in_dims.size(), 0), step(in_dims.size(), 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      auto a = static_cast<size_t>(norm_axis(axes[k], rank));
      int64_t dim = in_dims[a];
      int64_t s = k < steps.size() ? steps[k] : 1;
      int64_t b = starts[k];
      if (b < 0) b += dim;
      b = s > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
      start[a] = b;
      step[a] = s;
    }
    int64_t offset = 0;
    std::vector<int64_t> strides;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      offset += start[d] * in_strides[d];
      strides.push_back(step[d] * in_strides[d]);
    }
    std::string index = strided_index(out_dims, strides, "i");
    if (offset != 0) index = num(offset) + " + " + index;
    return ret(x + "(" + index + ")");
  }
  if (op == "Concat" || op == "Split") {
    int64_t axis = norm_axis(node.int_attribute("axis", 0), static_cast<int64_t>(out_dims.size()));
    auto a = static_cast<size_t>(axis);
    int64_t inner = 1;
    for (size_t d = a + 1; d < out_dims.size(); ++d) inner *= out_dims[d];
    std::string body = "    const long long inner = i % " + num(inner) + ";\n" +
                       "    const long long a = (i / " + num(inner) + ") % " + num(out_dims[a]) + ";\n" +
                       "    const long long outer = i / " + num(inner * out_dims[a]) + ";\n";
    if (op == "Split") {
      int64_t begin = 0;
      for (size_t k = 0; k < slot; ++k) begin += dims(node.outputs[k])[a];
      return body + ret(x + "((outer * " + num(in_dims[a]) + " + a + " + num(begin) + ") * " + num(inner) + " + inner)");
    }
    int64_t begin = 0;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int64_t size = dims(input(k))[a];
      if (size == 0) continue;
      STITCH_ASSIGN_OR_RETURN(std::string part, accessor(input(k)));
      std::string pick = part + "((outer * " + num(size) + " + a - " + num(begin) + ") * " + num(inner) + " + inner)";
      if (k + 1 == node.inputs.size()) {
        body += "    return " + pick + ";\n";
      } else {
        body += "    if (a < " + num(begin + size) + ") return " + pick + ";\n";
      }
      begin += size;
    }
    return body;
  }
  if (op == "Gather") {
    int64_t axis = norm_axis(node.int_attribute("axis", 0), rank);
    auto a = static_cast<size_t>(axis);
    int64_t inner = 1;
    for (size_t d = a + 1; d < in_dims.size(); ++d) inner *= in_dims[d];
    int64_t count = product(dims(input(1)));
    STITCH_ASSIGN_OR_RETURN(std::string indices, accessor(input(1)));
    return "    const long long inner = i % " + num(inner) + ";\n" +
           "    const long long j = (i / " + num(inner) + ") % " + num(count) + ";\n" +
           "    const long long outer = i / " + num(inner * count) + ";\n" +
           "    long long g = static_cast<long long>(" + indices + "(j));\n" +
           "    if (g < 0) g += " + num(in_dims[a]) + ";\n" +
           ret(x + "((outer * " + num(in_dims[a]) + " + g) * " + num(inner) + " + inner)");
  }
  if (op == "GatherElements") {
    int64_t axis = norm_axis(node.int_attribute("axis", 0), rank);
    STITCH_ASSIGN_OR_RETURN(std::string indices, accessor(input(1)));
    std::vector<int64_t> strides = in_strides;
    strides[static_cast<size_t>(axis)] = 0;
    return "    long long g = static_cast<long long>(" + indices + "(i));\n" +
           "    if (g < 0) g += " + num(in_dims[static_cast<size_t>(axis)]) + ";\n" +
           ret(x + "(" + strided_index(out_dims, strides, "i") + " + g * " + num(in_strides[static_cast<size_t>(axis)]) + ")");
  }
  if (op == "Tile") {
    std::string body = "    long long index = 0;\n";
    std::vector<int64_t> out_strides = row_major_strides(out_dims);
    for (size_t d = 0; d < out_dims.size(); ++d) {
      if (in_dims[d] == 1) continue;
      body += "    index += ((i / " + num(out_strides[d]) + ") % " + num(out_dims[d]) + " % " +
              num(in_dims[d]) + ") * " + num(in_strides[d]) + ";\n";
    }
    return body + ret(x + "(index)");
  }
  if (op == "Pad") {
    std::string mode = node.string_attribute("mode", "constant");
    std::vector<int64_t> pads;
    bool present = false;
    if (node.opset < 11) {
      pads = node.ints_attribute("pads", {});
    } else {
      pads = constant_ints(graph_, node, 1, &present);
      if (!present) return error(node, "pads is not a constant; fold it before emitting");
    }
    std::vector<int64_t> pad_axes;
    bool has_axes = false;
    pad_axes = constant_ints(graph_, node, 3, &has_axes);
    if (!has_axes) {
      for (int64_t d = 0; d < rank; ++d) pad_axes.push_back(d);
    }
    std::vector<int64_t> begin(in_dims.size(), 0);
    for (size_t k = 0; k < pad_axes.size(); ++k) begin[static_cast<size_t>(norm_axis(pad_axes[k], rank))] = pads[k];
    std::vector<int64_t> out_strides = row_major_strides(out_dims);
    std::string body = "    long long index = 0;\n";
    if (mode == "constant") body += "    bool inside = true;\n";
    for (size_t d = 0; d < in_dims.size(); ++d) {
      std::string c = "c" + num(static_cast<int64_t>(d));
      body += "    long long " + c + " = (i / " + num(out_strides[d]) + ") % " + num(out_dims[d]) + " - " + num(begin[d]) + ";\n";
      int64_t n = in_dims[d];
      if (mode == "constant") {
        body += "    inside = inside && " + c + " >= 0 && " + c + " < " + num(n) + ";\n";
      } else if (mode == "edge") {
        body += "    " + c + " = " + c + " < 0 ? 0 : (" + c + " >= " + num(n) + " ? " + num(n - 1) + " : " + c + ");\n";
      } else if (mode == "reflect" && n == 1) {
        body += "    " + c + " = 0;\n";  // the period 2 * (n - 1) is 0: every position reflects to 0
      } else if (mode == "reflect") {
        body += "    while (" + c + " < 0 || " + c + " >= " + num(n) + ") " + c + " = " + c + " < 0 ? -" + c + " : " + num(2 * (n - 1)) + " - " + c + ";\n";
      } else {
        return error(node, "pad mode \"" + mode + "\" has no CUDA implementation");
      }
      body += "    index += " + c + " * " + num(in_strides[d]) + ";\n";
    }
    if (mode == "constant") {
      std::string fill = "static_cast<" + ct + ">(0)";
      if (node.opset < 11) {
        fill = "static_cast<" + ct + ">(" + float_literal(node.float_attribute("value", 0.0f)) + ")";
      } else if (input(2) != ir::kNoId) {
        STITCH_ASSIGN_OR_RETURN(std::string value, accessor(input(2)));
        fill = value + "(0)";
      }
      return body + ret("inside ? " + x + "(index) : " + fill);
    }
    return body + ret(x + "(index)");
  }
  if (op == "Trilu") {
    bool upper = node.int_attribute("upper", 1) != 0;
    int64_t k = 0;
    bool present = false;
    std::vector<int64_t> given = constant_ints(graph_, node, 1, &present);
    if (input(1) != ir::kNoId && !present) return error(node, "k is not a constant; fold it before emitting");
    if (present && !given.empty()) k = given[0];
    int64_t cols = out_dims.back();
    int64_t rows_n = out_dims[out_dims.size() - 2];
    return "    const long long col = i % " + num(cols) + ";\n    const long long row_index = (i / " +
           num(cols) + ") % " + num(rows_n) + ";\n" +
           ret("(col - row_index " + std::string(upper ? ">=" : "<=") + " " + num(k) + ") ? " + x +
               "(i) : static_cast<" + ct + ">(0)");
  }
  return error(node, "has no CUDA implementation in the emitter; it stays unfused");
}

// Body of compute_<v>(i) for a reduction output element i (thread composition: one
// thread loops over the reduced elements).
Result<std::string> KernelWriter::reduction_body(const ir::Node& node) {
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, reduction_axes(graph_, node, &noop));
  const ir::ValueId x_id = node.inputs[0];
  const std::string out_ct = compute_type(dtype(node.outputs[0]));
  if (elements_of(graph_, node.outputs[0]) == 0) return empty_value_body(out_ct);
  if (!noop && elements_of(graph_, x_id) == 0) {
    STITCH_ASSIGN_OR_RETURN(std::string result, empty_reduction_result(node, axes));
    return "    static_cast<void>(i);  // every element reduces an empty set\n    return " + result + ";\n";
  }
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
  if (noop) return std::string("    return " + x + "(i);\n");
  const std::vector<int64_t>& in = dims(x_id);
  std::vector<int64_t> strides = row_major_strides(in);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (reduced ? red_dims : kept_dims).push_back(in[d]);
    (reduced ? red_strides : kept_strides).push_back(strides[d]);
  }
  const int64_t count = product(red_dims);
  const DType in_type = dtype(x_id);
  const bool floating = ir::dtype_is_float(in_type);
  const std::string ct = compute_type(in_type);
  std::string body = "    const long long base = " + strided_index(kept_dims, kept_strides, "i") + ";\n";
  std::string element = x + "(base + " + strided_index(red_dims, red_strides, "r") + ")";
  if (node.op_type == "ArgMax" || node.op_type == "ArgMin") {
    bool last = node.int_attribute("select_last_index", 0) != 0;
    std::string cmp = node.op_type == "ArgMax" ? ">" : "<";
    body += "    " + ct + " best = " + x + "(base);\n    long long best_index = 0;\n";
    body += "    for (long long r = 1; r < " + num(count) + "; ++r) {\n";
    body += "      const " + ct + " v = " + element + ";\n";
    body += "      if (v " + cmp + " best" + (last ? " || v == best" : std::string()) + ") {\n        best = v;\n        best_index = r;\n      }\n    }\n";
    return body + "    return best_index;\n";
  }
  if (node.op_type == "ReduceLogSumExp") {
    body += "    double m = " + x + "(base);\n";
    body += "    for (long long r = 1; r < " + num(count) + "; ++r) {\n      const double v = " + element + ";\n      m = v > m ? v : m;\n    }\n";
    body += "    if (isinf(m)) m = 0.0;\n    double a = 0.0;\n";
    body += "    for (long long r = 0; r < " + num(count) + "; ++r) a += exp(static_cast<double>(" + element + ") - m);\n";
    return body + "    return static_cast<" + ct + ">(log(a) + m);\n";
  }
  STITCH_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec(node));
  // Sums accumulate in double for float inputs (the interpreter does too).
  std::string acc = floating && (spec.kind == "sum" || spec.kind == "prod") ? "double" : ct;
  if (spec.kind == "sum" || spec.kind == "prod") {
    body += "    " + acc + " a = " + (spec.kind == "sum" ? "0" : "1") + ";\n";
    body += "    for (long long r = 0; r < " + num(count) + "; ++r) {\n";
  } else {
    body += "    " + acc + " a = " + x + "(base);\n";
    body += "    for (long long r = 1; r < " + num(count) + "; ++r) {\n";
  }
  body += "      const " + acc + " v = " + element + ";\n";
  body += "      a = " + combine(spec.kind, "a", "(" + spec.pre + ")", floating) + ";\n    }\n";
  if (spec.mean) body += "    a = a / static_cast<" + acc + ">(" + num(count) + ");\n";
  return body + "    return static_cast<" + ct + ">(" + reduce_result(spec, false) + ");\n";
}

// The result of a reduction over an empty set (every output element is the same): the
// reference interpreter's, so emitted code and the reference agree by construction
// (docs/semantics.md), computed on an input with the kept dims cut to 1.
Result<std::string> KernelWriter::empty_reduction_result(const ir::Node& node,
                                                         const std::vector<int64_t>& axes) {
  const ir::ValueId x_id = node.inputs[0];
  std::vector<int64_t> empty_dims = dims(x_id);
  for (size_t d = 0; d < empty_dims.size(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) empty_dims[d] = 1;
  }
  ir::Tensor empty;
  empty.dtype = dtype(x_id);
  empty.dims = std::move(empty_dims);
  std::vector<const ir::Tensor*> inputs = {&empty};
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    inputs.push_back(node.inputs[k] == ir::kNoId ? nullptr : graph_.value(node.inputs[k]).constant.get());
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, ir::evaluate_node(node, node.opset, inputs));
  STITCH_CHECK(!results.empty() && results[0].num_elements() > 0) << "an empty reduction without a result";
  return element_literal(results[0], compute_type(dtype(node.outputs[0])));
}

// Body of compute_<v>(i) for a MatMul or Gemm output element (thread composition
// over k; fine-grained GEMMs only: at most 64x64x64 per batch).
Result<std::string> KernelWriter::gemm_body(const ir::Node& node) {
  const ir::ValueId out = node.outputs[0];
  const std::vector<int64_t>& out_dims = dims(out);
  if (product(out_dims) == 0) return empty_value_body(compute_type(dtype(out)));
  STITCH_ASSIGN_OR_RETURN(std::string a, accessor(node.inputs[0]));
  STITCH_ASSIGN_OR_RETURN(std::string b, accessor(node.inputs[1]));
  std::vector<int64_t> a_dims = dims(node.inputs[0]);
  std::vector<int64_t> b_dims = dims(node.inputs[1]);
  const std::string acc = ir::dtype_is_float(dtype(out)) ? "double" : compute_type(dtype(out));
  if (node.op_type == "Gemm") {
    bool ta = node.int_attribute("transA", 0) != 0;
    bool tb = node.int_attribute("transB", 0) != 0;
    int64_t m = ta ? a_dims[1] : a_dims[0];
    int64_t k = ta ? a_dims[0] : a_dims[1];
    int64_t n = tb ? b_dims[0] : b_dims[1];
    std::string a_index = ta ? "kk * " + num(m) + " + m" : "m * " + num(k) + " + kk";
    std::string b_index = tb ? "n * " + num(k) + " + kk" : "kk * " + num(n) + " + n";
    std::string body = "    const long long n = i % " + num(n) + ";\n    const long long m = i / " + num(n) + ";\n";
    body += "    " + acc + " sum = 0;\n    for (long long kk = 0; kk < " + num(k) + "; ++kk) {\n";
    body += "      sum += static_cast<" + acc + ">(" + a + "(" + a_index + ")) * static_cast<" + acc + ">(" + b + "(" + b_index + "));\n    }\n";
    body += "    " + acc + " y = static_cast<" + acc + ">(" + float_literal(node.float_attribute("alpha", 1.0f)) + ") * sum;\n";
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoId) {
      STITCH_ASSIGN_OR_RETURN(std::string c, accessor(node.inputs[2]));
      body += "    y += static_cast<" + acc + ">(" + float_literal(node.float_attribute("beta", 1.0f)) + ") * static_cast<" + acc + ">(" +
              c + "(" + broadcast_index(out_dims, dims(node.inputs[2]), "i") + "));\n";
    }
    return body + "    return static_cast<" + compute_type(dtype(out)) + ">(y);\n";
  }
  bool a_vector = a_dims.size() == 1;
  bool b_vector = b_dims.size() == 1;
  if (a_vector) a_dims.insert(a_dims.begin(), 1);
  if (b_vector) b_dims.push_back(1);
  int64_t m = a_dims[a_dims.size() - 2];
  int64_t k = a_dims.back();
  int64_t n = b_dims.back();
  std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  std::vector<int64_t> batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (size_t d = 0; d < batch.size(); ++d) {
    size_t from_end = batch.size() - d;
    int64_t ad = from_end <= a_batch.size() ? a_batch[a_batch.size() - from_end] : 1;
    int64_t bd = from_end <= b_batch.size() ? b_batch[b_batch.size() - from_end] : 1;
    batch[d] = std::max(ad, bd);
  }
  std::string body = "    const long long n = i % " + num(n) + ";\n    const long long m = (i / " + num(n) +
                     ") % " + num(m) + ";\n    const long long batch = i / " + num(m * n) + ";\n";
  body += "    const long long a_base = (" + broadcast_index(batch, a_batch, "batch") + ") * " + num(m * k) + " + m * " + num(k) + ";\n";
  body += "    const long long b_base = (" + broadcast_index(batch, b_batch, "batch") + ") * " + num(k * n) + " + n;\n";
  body += "    " + acc + " sum = 0;\n    for (long long kk = 0; kk < " + num(k) + "; ++kk) {\n";
  body += "      sum += static_cast<" + acc + ">(" + a + "(a_base + kk)) * static_cast<" + acc + ">(" + b + "(b_base + kk * " + num(n) + "));\n    }\n";
  return body + "    return static_cast<" + compute_type(dtype(out)) + ">(sum);\n";
}

// Defines compute_<v>(i) with `body` (once; `note` ends its comment line) and returns
// its name.
std::string KernelWriter::define_compute(ir::ValueId id, const std::string& body, const std::string& note) {
  const std::string name = "compute_" + names_.at(id);
  if (computed_.insert(id).second) {
    const ir::Node& node = graph_.node(graph_.value(id).producer);
    defs_ << "  // " << node.op_type << " " << comment_name(node) << ": " << ir::to_string(graph_.value(id).type)
          << note << "\n";
    defs_ << "  auto " << name << " = [&](long long i) -> " << compute_type(dtype(id)) << " {\n" << body << "  };\n";
  }
  return name;
}

// The function a stage calls to compute the value `id` at a flat index: compute_<v>
// for a materialized value (whose accessor then reads back what the stage wrote),
// the inlined accessor otherwise.
Result<std::string> KernelWriter::value_function(ir::ValueId id) {
  if (!schedule_.values.at(id).materialized) return accessor(id);
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  std::string body;
  if (ir::op_kind(node) == ir::OpKind::kReduction) {
    STITCH_ASSIGN_OR_RETURN(body, reduction_body(node));
  } else if (ir::op_kind(node) == ir::OpKind::kGemm) {
    STITCH_ASSIGN_OR_RETURN(body, gemm_body(node));
  } else {
    STITCH_ASSIGN_OR_RETURN(body, op_body(node, output_slot(node, id)));
  }
  std::string function = define_compute(id, body, "");
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  return function;
}

// Global/thread/packing stage code writing value `id` (materialized or output).
Result<std::string> KernelWriter::stage_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  std::string code = indent + "// " + comment_name(node) + " -> " +
                     ir::to_string(graph_.value(id).type) +
                     (value.storage == Storage::kWorkspace ? " (workspace)" : " (output)") + "\n";
  if (value.mapping != ReductionMapping::kThread) {
    STITCH_ASSIGN_OR_RETURN(std::string mapped, value.slices >= 2 ? partials_code(id, indent)
                                                                  : mapped_reduction_code(id, indent));
    return code + mapped;
  }
  STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
  std::string target = (output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id)) + "[i]";
  code += indent + "for (long long i = tid; i < " + num(elements_of(graph_, id)) + "; i += threads) " +
          target + " = " + store(dtype(id), function + "(i)") + ";\n";
  return code;
}

// Row-local code for value `id` inside the row loop (warp/block composition).
Result<std::string> KernelWriter::row_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  const bool warp = schedule_.composition == Composition::kWarp;
  const bool split = schedule_.blocks_per_row >= 2;
  const std::string lane = warp ? "lane" : "static_cast<long long>(threadIdx.x)";
  const std::string width = warp ? "32" : "static_cast<long long>(blockDim.x)";
  const std::string sync = warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
  // The row positions j this thread visits: the whole row, or the block's slice [j0, j1).
  const std::string first = split ? "j0 + static_cast<long long>(threadIdx.x)" : lane;
  auto end = [&](int64_t length) { return split ? std::string("j1") : num(length); };
  const std::string& base = names_.at(id);
  std::string code = indent + "// " + comment_name(node) + " -> " +
                     ir::to_string(graph_.value(id).type) + "\n";
  if (ir::op_kind(node) == ir::OpKind::kReduction) {
    STITCH_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec(node));
    const ir::ValueId x_id = node.inputs[0];
    STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
    STITCH_RETURN_IF_ERROR(accessor(id).status());
    const int64_t length = product(dims(x_id)) / std::max<int64_t>(schedule_.rows, 1);
    std::string element = x + "(row * " + num(length) + " + j)";
    code += indent + "{\n";
    std::string in = indent + "  ";
    if (spec.kind == "sum" || spec.kind == "prod") {
      code += in + "float a = " + (spec.kind == "sum" ? "0.0f" : "1.0f") + ";\n";
    } else {
      code += in + "float a = " + x + "(row * " + num(length) + (split ? " + j0" : "") + ");\n";
    }
    code += in + "for (long long j = " + first + "; j < " + end(length) + "; j += " + width + ") {\n";
    code += in + "  const float v = " + element + ";\n";
    code += in + "  a = " + combine(spec.kind, "a", "(" + spec.pre + ")", true) + ";\n" + in + "}\n";
    code += shuffle_combine(spec.kind, "float", 1, in);
    if (!warp) code += float_block_combine(spec.kind, schedule_.shared_bytes - kBlockScratchBytes, in);
    if (split) {
      // The slice's partial; the phase after the next grid barrier combines them.
      code += in + "if (threadIdx.x == 0) pt_" + base + "[row * " + num(schedule_.blocks_per_row) +
              " + part] = a;\n";
      return code + indent + "}\n";
    }
    code += row_result(spec, length, base, dtype(id), in);
    if (output_index_.count(id)) {
      code += in + "if (" + lane + " == 0) " + pointer_name(id) + "[row] = " + store(dtype(id), "r_" + base) + ";\n";
    }
    return code + indent + "}\n";
  }
  const int64_t k = value.row_elements;
  const std::string index = "row * " + num(k) + " + j";
  STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
  std::string target;
  if (output_index_.count(id)) {
    target = pointer_name(id) + "[" + index + "]";
  } else if (value.storage == Storage::kShared) {
    target = "sh_" + base + "[j]";
  } else {
    target = "ws_" + base + "[" + index + "]";
  }
  code += indent + "for (long long j = " + first + "; j < " + end(k) + "; j += " + width + ") " + target +
          " = " + store(dtype(id), function + "(" + index + ")") + ";\n";
  if (value.materialized) code += indent + sync + "\n";
  return code;
}

// The value of a MatMul operand at flat index `index` for a tile load: a reduction
// read only by the MatMul is computed here (one thread per element, rounded to its
// dtype as its storage would), anything else through its accessor.
Result<std::string> KernelWriter::operand_value(ir::ValueId id, const std::string& index) {
  if (produced_inside(id) && schedule_.values.at(id).materialized) {
    const ir::Node& node = graph_.node(graph_.value(id).producer);
    STITCH_ASSIGN_OR_RETURN(std::string body, reduction_body(node));
    std::string function = define_compute(id, body, " (computed into the shared tile)");
    return load(dtype(id), store(dtype(id), function + "(" + index + ")"));
  }
  STITCH_ASSIGN_OR_RETURN(std::string name, accessor(id));
  return name + "(" + index + ")";
}

// Block composition of the group's MatMul: tiles of A and B through shared memory.
Result<std::string> KernelWriter::tiled_gemm_code(const std::vector<ir::ValueId>& written) {
  const ir::Node& matmul = graph_.node(schedule_.tiled_gemm);
  const ir::ValueId c = matmul.outputs[0];
  const int64_t m = schedule_.gemm_m, n = schedule_.gemm_n, k = schedule_.gemm_k;
  const int64_t tm = schedule_.tile_m, tn = schedule_.tile_n;
  const int64_t m_tiles = (m + tm - 1) / tm, n_tiles = (n + tn - 1) / tn;
  const int64_t tiles = schedule_.gemm_batch * m_tiles * n_tiles;
  std::vector<int64_t> a_dims = dims(matmul.inputs[0]);
  std::vector<int64_t> b_dims = dims(matmul.inputs[1]);
  std::vector<int64_t> c_dims = dims(c);
  std::vector<int64_t> a_batch(a_dims.begin(), a_dims.end() - 2);
  std::vector<int64_t> b_batch(b_dims.begin(), b_dims.end() - 2);
  std::vector<int64_t> batch(c_dims.begin(), c_dims.end() - 2);
  STITCH_ASSIGN_OR_RETURN(std::string a_value, operand_value(matmul.inputs[0], "a_base + m * " + num(k) + " + e % " + num(k)));
  STITCH_ASSIGN_OR_RETURN(std::string b_value, operand_value(matmul.inputs[1], "b_base + (e / " + num(tn) + ") * " + num(n) + " + n"));
  STITCH_RETURN_IF_ERROR(accessor(c).status());
  const std::string ct = compute_type(dtype(c));
  std::ostringstream code;
  code << "  // " << comment_name(matmul) << " -> " << ir::to_string(graph_.value(c).type) << ": tiles of [" << tm
       << ", " << tn << "] outputs of one batch per block\n";
  code << "  for (long long tile = blockIdx.x; tile < " << tiles << "; tile += gridDim.x) {\n";
  code << "    const long long batch = tile / " << m_tiles * n_tiles << ";\n";
  if (n_tiles == 1) {
    code << "    const long long m0 = tile % " << m_tiles << " * " << tm << ";\n";
    code << "    const long long n0 = 0;\n";
  } else {
    code << "    const long long m0 = (tile / " << n_tiles << ") % " << m_tiles << " * " << tm << ";\n";
    code << "    const long long n0 = tile % " << n_tiles << " * " << tn << ";\n";
  }
  code << "    const long long a_base = (" << broadcast_index(batch, a_batch, "batch") << ") * " << m * k << ";\n";
  code << "    const long long b_base = (" << broadcast_index(batch, b_batch, "batch") << ") * " << k * n << ";\n";
  code << "    for (long long e = threadIdx.x; e < " << tm * k << "; e += blockDim.x) {\n";
  code << "      const long long m = m0 + e / " << k << ";\n";
  code << "      tile_a[e] = m < " << m << " ? static_cast<float>(" << a_value << ") : 0.0f;\n    }\n";
  code << "    for (long long e = threadIdx.x; e < " << k * tn << "; e += blockDim.x) {\n";
  code << "      const long long n = n0 + e % " << tn << ";\n";
  code << "      tile_b[e] = n < " << n << " ? static_cast<float>(" << b_value << ") : 0.0f;\n    }\n";
  code << "    __syncthreads();\n";
  code << "    for (long long e = threadIdx.x; e < " << tm * tn << "; e += blockDim.x) {\n";
  code << "      const long long m = m0 + e / " << tn << ";\n";
  code << "      const long long n = n0 + e % " << tn << ";\n";
  code << "      if (m >= " << m << " || n >= " << n << ") continue;\n";
  code << "      double sum = 0;\n";
  code << "      for (long long kk = 0; kk < " << k << "; ++kk) {\n";
  code << "        sum += static_cast<double>(tile_a[(e / " << tn << ") * " << k << " + kk]) * static_cast<double>(tile_b[kk * "
       << tn << " + e % " << tn << "]);\n      }\n";
  code << "      r_" << names_.at(c) << " = " << load(dtype(c), store(dtype(c), "static_cast<" + ct + ">(sum)")) << ";\n";
  code << "      const long long i = (batch * " << m << " + m) * " << n << " + n;\n";
  for (ir::ValueId id : written) {
    if (!output_index_.count(id)) continue;
    STITCH_ASSIGN_OR_RETURN(std::string name, accessor(id));
    code << "      // " << comment_name(graph_.node(graph_.value(id).producer)) << " -> " << ir::to_string(graph_.value(id).type)
         << " (output)\n";
    code << "      " << pointer_name(id) << "[i] = " << store(dtype(id), name + "(i)") << ";\n";
  }
  code << "    }\n    __syncthreads();\n  }\n";
  return code.str();
}

// Whether computing `written` (its producer's operands, through inlined values) reads
// the value `target`; materialized values other than `target` are read from memory.
bool KernelWriter::reads_through_registers(ir::ValueId written, ir::ValueId target) const {
  std::vector<ir::ValueId> stack(graph_.node(graph_.value(written).producer).inputs);
  std::set<ir::ValueId> seen;
  while (!stack.empty()) {
    ir::ValueId id = stack.back();
    stack.pop_back();
    if (id == ir::kNoId || !seen.insert(id).second || !produced_inside(id)) continue;
    if (id == target) return true;
    if (schedule_.values.at(id).materialized) continue;
    for (ir::ValueId input : graph_.node(graph_.value(id).producer).inputs) stack.push_back(input);
  }
  return false;
}

std::string KernelWriter::partials_pointer(ir::ValueId id) {
  const std::string name = "pt_" + names_.at(id);
  if (partials_declared_.insert(id).second) {
    const ValueSchedule& value = schedule_.values.at(id);
    const std::string acc = accumulator_type(value.accumulator_bytes);
    defs_ << "  " << acc << "* " << name << " = reinterpret_cast<" << acc << "*>(workspace + " << value.partial_offset << ");  // ["
          << elements_of(graph_, id) << ", " << value.slices << "] partials of "
          << comment_name(graph_.node(graph_.value(id).producer)) << "\n";
  }
  return name;
}

// A reduction with a warp or column mapping (schedule.h, 5.), writing its result, or
// with slices its partials ([output, slice] in the workspace).
//   warp:   a warp per (output, slice): lanes stride over the slice's reduced
//           elements, combined by shuffles.
//   column: a block per (column tile, slice): each warp's lanes are W consecutive
//           columns x 32 / W rows, the block's threads stride over the slice's rows
//           (coalesced across the columns); row lanes combine by shuffles inside a
//           warp, then the warps' results through shared memory in warp order.
Result<std::string> KernelWriter::mapped_reduction_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  STITCH_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec(node));
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, reduction_axes(graph_, node, &noop));
  const ir::ValueId x_id = node.inputs[0];
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::vector<int64_t>& in = dims(x_id);
  const std::vector<int64_t> strides = row_major_strides(in);
  const bool column = value.mapping == ReductionMapping::kColumn;
  // Kept dims (outside the trailing run C for a column reduction) and reduced dims.
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  const size_t trailing = column ? static_cast<size_t>(axes.back()) + 1 : in.size();
  for (size_t d = 0; d < trailing; ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (reduced ? red_dims : kept_dims).push_back(in[d]);
    (reduced ? red_strides : kept_strides).push_back(strides[d]);
  }
  const int64_t slices = value.slices;
  const bool split = slices >= 2;
  const int64_t w_cols = value.columns;
  const int64_t col_tiles = column ? (value.inner + w_cols - 1) / w_cols : 1;
  const std::string acc = accumulator_type(value.accumulator_bytes);
  const std::string in_ = indent + "  ";
  const std::string item = split ? "(item / " + num(slices) + ")" : "item";
  std::string code;
  if (column) {
    code += indent + "// a block per (tile of " + num(w_cols) + " columns, slice of " + num(value.slice) +
            " rows): threads over " + num(w_cols) + " columns x blockDim.x / " + num(w_cols) + " rows" +
            (split ? ", partials to the workspace" : "") + "\n";
    code += indent + "for (long long item = tid / blockDim.x; item < " + num(value.items) + "; item += threads / blockDim.x) {\n";
  } else {
    code += indent + "// a warp per (output, slice of " + num(value.slice) + "): lanes over the reduced elements" +
            (split ? ", partials to the workspace" : "") + "\n";
    code += indent + "for (long long item = tid / 32; item < " + num(value.items) + "; item += threads / 32) {\n";
  }
  code += in_ + "const long long lane = threadIdx.x % 32;\n";
  code += in_ + "const long long r0 = " + (split ? "(item % " + num(slices) + ") * " + num(value.slice) : std::string("0")) + ";\n";
  code += in_ + "const long long r1 = " +
          (split ? "r0 + " + num(value.slice) + " < " + num(value.reduced) + " ? r0 + " + num(value.slice) + " : " +
                       num(value.reduced)
                 : num(value.reduced)) +
          ";\n";
  code += in_ + acc + " a = " + identity(spec.kind, acc) + ";\n";
  const std::string element_offset = strided_index(red_dims, red_strides, "r");
  if (column) {
    const std::string column_lane = w_cols < 32 ? "threadIdx.x % " + num(w_cols) : std::string("lane");
    code += in_ + "const long long o = " + item + " / " + num(col_tiles) + ";\n";
    code += in_ + "const long long c0 = " + item + " % " + num(col_tiles) + " * " + num(w_cols) + ";\n";
    code += in_ + "const long long base = " + strided_index(kept_dims, kept_strides, "o") + ";\n";
    code += in_ + "if (c0 + " + column_lane + " < " + num(value.inner) + ") {\n";
    code += in_ + "  const long long c = c0 + " + column_lane + ";\n";
    code += in_ + "  for (long long r = r0 + threadIdx.x / " + num(w_cols) + "; r < r1; r += blockDim.x / " + num(w_cols) + ") {\n";
    code += in_ + "    const " + acc + " v = " + x + "(base + " + element_offset + " + c);\n";
    code += in_ + "    a = " + combine(spec.kind, "a", "(" + spec.pre + ")", true) + ";\n";
    code += in_ + "  }\n" + in_ + "}\n";
    if (w_cols < 32) code += shuffle_combine(spec.kind, acc, static_cast<int>(w_cols), in_);
    code += in_ + acc + "* columns = reinterpret_cast<" + acc + "*>(smem);  // [warps, " + num(w_cols) + "]\n";
    code += in_ + (w_cols < 32 ? "if (lane < " + num(w_cols) + ") " : "") + "columns[threadIdx.x / 32 * " + num(w_cols) +
            " + lane] = a;\n";
    code += in_ + "__syncthreads();\n";
    code += in_ + "if (threadIdx.x < " + num(w_cols) + " && c0 + threadIdx.x < " + num(value.inner) + ") {\n";
    code += in_ + "  a = columns[threadIdx.x];\n";
    code += in_ + "  for (unsigned int q = 1; q < blockDim.x / 32; ++q) a = " +
            combine(spec.kind, "a", "columns[q * " + num(w_cols) + " + threadIdx.x]", true) + ";\n";
    code += in_ + "  const long long i = o * " + num(value.inner) + " + c0 + threadIdx.x;\n";
    if (split) {
      code += in_ + "  " + partials_pointer(id) + "[i * " + num(slices) + " + item % " + num(slices) + "] = a;\n";
    } else {
      std::string target = output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id);
      code += in_ + "  " + target + "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) + ";\n";
    }
    code += in_ + "}\n" + in_ + "__syncthreads();\n";
    return code + indent + "}\n";
  }
  code += in_ + "const long long i = " + item + ";\n";
  code += in_ + "const long long base = " + strided_index(kept_dims, kept_strides, "i") + ";\n";
  code += in_ + "for (long long r = r0 + lane; r < r1; r += 32) {\n";
  code += in_ + "  const " + acc + " v = " + x + "(base + " + element_offset + ");\n";
  code += in_ + "  a = " + combine(spec.kind, "a", "(" + spec.pre + ")", true) + ";\n";
  code += in_ + "}\n";
  code += shuffle_combine(spec.kind, acc, 1, in_);
  if (split) {
    code += in_ + "if (lane == 0) " + partials_pointer(id) + "[i * " + num(slices) + " + item % " + num(slices) + "] = a;\n";
  } else {
    std::string target = output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id);
    code += in_ + "if (lane == 0) " + target + "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) + ";\n";
  }
  return code + indent + "}\n";
}

// The stage after a sliced reduction's partials: each output combines its slices'
// partials in slice order (deterministic), by a thread, or by a warp when there are
// more than 32, and writes the result.
Result<std::string> KernelWriter::partials_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  STITCH_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec(node));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::string pt = partials_pointer(id);
  const int64_t slices = value.slices;
  const int64_t outputs = elements_of(graph_, id);
  const std::string in_ = indent + "  ";
  std::string target = output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id);
  std::string code = indent + "// combine the " + num(slices) + " partials of each output in slice order\n";
  std::string writer;
  const std::string acc = accumulator_type(value.accumulator_bytes);
  if (value.warp_combine()) {
    code += indent + "for (long long i = tid / 32; i < " + num(outputs) + "; i += threads / 32) {\n";
    code += in_ + "const long long lane = threadIdx.x % 32;\n";
    code += in_ + acc + " a = " + identity(spec.kind, acc) + ";\n";
    code += in_ + "for (long long q = lane; q < " + num(slices) + "; q += 32) a = " +
            combine(spec.kind, "a", pt + "[i * " + num(slices) + " + q]", true) + ";\n";
    code += shuffle_combine(spec.kind, acc, 1, in_);
    writer = "if (lane == 0) ";
  } else {
    code += indent + "for (long long i = tid; i < " + num(outputs) + "; i += threads) {\n";
    code += in_ + acc + " a = " + pt + "[i * " + num(slices) + "];\n";
    code += in_ + "for (long long q = 1; q < " + num(slices) + "; ++q) a = " +
            combine(spec.kind, "a", pt + "[i * " + num(slices) + " + q]", true) + ";\n";
  }
  code += in_ + writer + target + "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) + ";\n";
  return code + indent + "}\n";
}

// Split rows: combines the partials of reduction `id` for the current row into its
// register (every thread of the block, in slice order, so the result is
// deterministic); part 0 writes it when it is a group output and `write` is set.
Result<std::string> KernelWriter::combine_code(ir::ValueId id, bool write, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  STITCH_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec(node));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::string& base = names_.at(id);
  const int64_t parts = schedule_.blocks_per_row;
  const int64_t length = product(dims(node.inputs[0])) / std::max<int64_t>(schedule_.rows, 1);
  std::string code = indent + "// " + comment_name(node) + ": combine the " + num(parts) + " partials of the row\n";
  code += indent + "{\n";
  std::string in = indent + "  ";
  if (parts <= 32) {
    code += in + "float a = pt_" + base + "[row * " + num(parts) + "];\n";
    code += in + "for (long long q = 1; q < " + num(parts) + "; ++q) a = " +
            combine(spec.kind, "a", "pt_" + base + "[row * " + num(parts) + " + q]", true) + ";\n";
  } else {
    // Many partials (a scalar over the whole GPU): the block's threads share the loads,
    // then a block reduction in a fixed order, so every block gets the same value.
    code += in + "float a = " + identity(spec.kind, "float") + ";\n";
    code += in + "for (long long q = threadIdx.x; q < " + num(parts) + "; q += blockDim.x) a = " +
            combine(spec.kind, "a", "pt_" + base + "[row * " + num(parts) + " + q]", true) + ";\n";
    code += shuffle_combine(spec.kind, "float", 1, in);
    code += float_block_combine(spec.kind, schedule_.shared_bytes - kBlockScratchBytes, in);
  }
  code += row_result(spec, length, base, dtype(id), in);
  if (write && output_index_.count(id)) {
    code += in + "if (part == 0 && threadIdx.x == 0) " + pointer_name(id) + "[row] = " +
            store(dtype(id), "r_" + base) + ";\n";
  }
  return code + indent + "}\n";
}

Result<std::string> KernelWriter::write_body() {
  std::ostringstream stages;
  std::set<ir::ValueId> outputs(schedule_.boundary.outputs.begin(), schedule_.boundary.outputs.end());
  // Values a stage writes, in topological order.
  std::vector<ir::ValueId> written;
  for (ir::NodeId id : schedule_.boundary.ordered_nodes) {
    for (ir::ValueId output : graph_.node(id).outputs) {
      if (output == ir::kNoId) continue;
      if (schedule_.values.at(output).materialized || outputs.count(output)) written.push_back(output);
    }
  }
  if (schedule_.tiled_gemm != ir::kNoId) {
    STITCH_ASSIGN_OR_RETURN(std::string code, tiled_gemm_code(written));
    stages << code;
  } else if (is_row_local(schedule_) && schedule_.blocks_per_row >= 2) {
    const int64_t parts = schedule_.blocks_per_row;
    const int64_t length = schedule_.row_length;
    for (int phase = 0; phase < schedule_.levels; ++phase) {
      if (phase > 0) stages << "  stitch_grid_sync(barrier);\n";
      stages << "  // Phase " << phase << ": block (row, part) over the row slice [j0, j1)\n";
      stages << "  for (long long vb = blockIdx.x; vb < " << schedule_.rows * parts << "; vb += gridDim.x) {\n";
      stages << "    row = vb / " << parts << ";\n";
      stages << "    const long long part = vb % " << parts << ";\n";
      stages << "    [[maybe_unused]] const long long j0 = part * " << schedule_.slice << ";\n";
      stages << "    [[maybe_unused]] const long long j1 = j0 + " << schedule_.slice << " < " << length << " ? j0 + "
             << schedule_.slice << " : " << length << ";\n";
      for (ir::ValueId id : written) {
        const ValueSchedule& value = schedule_.values.at(id);
        bool reduction = ir::op_kind(graph_.node(graph_.value(id).producer)) == ir::OpKind::kReduction;
        if (!reduction || value.level + 1 > phase) continue;
        bool needed = value.level + 1 == phase && output_index_.count(id) > 0;
        for (ir::ValueId other : written) {
          if (schedule_.values.at(other).level == phase && reads_through_registers(other, id)) needed = true;
        }
        if (!needed) continue;
        STITCH_ASSIGN_OR_RETURN(std::string code, combine_code(id, value.level + 1 == phase, "    "));
        stages << code;
      }
      for (ir::ValueId id : written) {
        if (schedule_.values.at(id).level != phase) continue;
        STITCH_ASSIGN_OR_RETURN(std::string code, row_code(id, "    "));
        stages << code;
      }
      stages << "    __syncthreads();\n  }\n";
    }
  } else if (is_row_local(schedule_)) {
    const bool warp = schedule_.composition == Composition::kWarp;
    const std::string sync = warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
    if (warp) {
      stages << "  for (row = static_cast<long long>(blockIdx.x) * " << schedule_.rows_per_block
             << " + threadIdx.x / 32; row < " << schedule_.rows << "; row += static_cast<long long>(gridDim.x) * "
             << schedule_.rows_per_block << ") {\n";
    } else {
      stages << "  for (row = blockIdx.x; row < " << schedule_.rows << "; row += gridDim.x) {\n";
    }
    for (ir::ValueId id : written) {
      STITCH_ASSIGN_OR_RETURN(std::string code, row_code(id, "    "));
      stages << code;
    }
    stages << "    " << sync << "\n  }\n";
  } else if (schedule_.composition == Composition::kPacking) {
    int64_t first = 0;
    for (size_t p = 0; p < schedule_.parts.size(); ++p) {
      std::set<ir::NodeId> part(schedule_.parts[p].begin(), schedule_.parts[p].end());
      int64_t blocks = schedule_.part_grids[p];
      stages << "  // Part " << p << ": blocks [" << first << ", " << first + blocks << ")\n";
      // (no lower bound for the first part: blockIdx.x >= 0 is a warning in nvcc)
      stages << "  if (" << (first > 0 ? "blockIdx.x >= " + num(first) + " && " : std::string()) << "blockIdx.x < "
             << first + blocks << ") {\n";
      stages << "    tid = static_cast<long long>(blockIdx.x - " << first << ") * blockDim.x + threadIdx.x;\n";
      stages << "    threads = static_cast<long long>(" << blocks << ") * blockDim.x;\n";
      for (ir::ValueId id : written) {
        if (!part.count(graph_.value(id).producer)) continue;
        STITCH_ASSIGN_OR_RETURN(std::string code, stage_code(id, "    "));
        stages << code;
      }
      stages << "  }\n";
      first += blocks;
    }
  } else {
    for (int level = 0; level < schedule_.levels; ++level) {
      if (level > 0) stages << "  stitch_grid_sync(barrier);\n";
      if (schedule_.levels > 1) stages << "  // Stage " << level << "\n";
      for (ir::ValueId id : written) {
        const ValueSchedule& value = schedule_.values.at(id);
        if (value.slices >= 2 && value.level - 1 == level) {
          STITCH_ASSIGN_OR_RETURN(std::string code, mapped_reduction_code(id, "  "));
          stages << "  // " << comment_name(graph_.node(graph_.value(id).producer)) << ": partials\n" << code;
        }
        if (value.level != level) continue;
        STITCH_ASSIGN_OR_RETURN(std::string code, stage_code(id, "  "));
        stages << code;
      }
    }
  }
  std::ostringstream body;
  if (schedule_.shared_bytes > 0) body << "  STITCH_SHARED_ARENA(smem, " << schedule_.shared_bytes << ");\n";
  if (schedule_.tiled_gemm != ir::kNoId) {
    const ir::Node& matmul = graph_.node(schedule_.tiled_gemm);
    body << "  float* tile_a = reinterpret_cast<float*>(smem + " << schedule_.tile_a_offset << ");  // ["
         << schedule_.tile_m << ", " << schedule_.gemm_k << "] rows of " << support::source_literal(graph_.value(matmul.inputs[0]).name) << "\n";
    body << "  float* tile_b = reinterpret_cast<float*>(smem + " << schedule_.tile_b_offset << ");  // ["
         << schedule_.gemm_k << ", " << schedule_.tile_n << "] columns of " << support::source_literal(graph_.value(matmul.inputs[1]).name) << "\n";
  } else if (is_row_local(schedule_)) {
    if (schedule_.composition == Composition::kWarp) {
      body << "  const long long lane = threadIdx.x % 32;\n";
    }
    body << "  long long row = 0;\n";
    if (schedule_.blocks_per_row >= 2) {
      body << "  unsigned int* barrier = reinterpret_cast<unsigned int*>(workspace + " << schedule_.barrier_offset << ");\n";
      for (ir::ValueId id : written) {
        const ValueSchedule& value = schedule_.values.at(id);
        if (value.partial_offset < 0) continue;
        body << "  float* pt_" << names_.at(id) << " = reinterpret_cast<float*>(workspace + "
             << value.partial_offset << ");  // [" << schedule_.rows << ", " << schedule_.blocks_per_row
             << "] partials of " << comment_name(graph_.node(graph_.value(id).producer)) << "\n";
      }
    }
    int64_t slot_bytes = schedule_.shared_bytes - (schedule_.composition == Composition::kBlock ? kBlockScratchBytes : 0);
    if (slot_bytes > 0) {
      body << "  const long long row_slot = " << (schedule_.composition == Composition::kWarp
                                                          ? "(threadIdx.x / 32) * " + num(slot_bytes / schedule_.rows_per_block)
                                                          : std::string("0"))
           << ";\n";
    }
  } else {
    const char* qualifier = schedule_.composition == Composition::kPacking ? "" : "const ";
    body << "  " << qualifier << "long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
    body << "  " << qualifier << "long long threads = static_cast<long long>(gridDim.x) * blockDim.x;\n";
    if (schedule_.barrier_offset >= 0) {
      body << "  unsigned int* barrier = reinterpret_cast<unsigned int*>(workspace + " << schedule_.barrier_offset << ");\n";
    }
  }
  body << defs_.str() << stages.str();
  return body.str();
}

std::string template_entry(const ir::Graph& graph, const GroupSchedule& schedule, ir::ValueId id,
                           const std::string& op_name) {
  const ValueSchedule& value = schedule.values.at(id);
  const ir::Node& node = graph.node(graph.value(id).producer);
  std::vector<int64_t> dims = graph.value(id).type.dims;
  bool reduction = ir::op_kind(node) == ir::OpKind::kReduction;
  if (reduction || ir::op_kind(node) == ir::OpKind::kGemm) dims = graph.value(node.inputs[0]).type.dims;
  std::vector<std::string> attrs;
  if (is_row_local(schedule)) {
    int64_t running = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (schedule.rows == 1) {  // a scalar: the whole value is the row
        attrs.push_back(d == 0 && schedule.blocks_per_row >= 2 ? "GRID-SPLIT_" + num(schedule.blocks_per_row) + "-CTA"
                                                               : "CTA");
        continue;
      }
      bool row_dim = running < schedule.rows;
      running *= dims[d];
      if (row_dim) {
        bool last_row_dim = running >= schedule.rows;
        std::string attr = "GRID";
        if (last_row_dim && schedule.composition == Composition::kWarp) {
          attr = "GRID-WARP_" + num(schedule.rows_per_block);
        } else if (last_row_dim && schedule.blocks_per_row >= 2) {
          attr = "GRID-SPLIT_" + num(schedule.blocks_per_row);
        }
        attrs.push_back(attr);
      } else {
        attrs.push_back("CTA");
      }
    }
  } else {
    bool noop = false;
    std::vector<int64_t> axes;
    if (reduction) {
      Result<std::vector<int64_t>> given = reduction_axes(graph, node, &noop);
      if (given.is_ok()) axes = given.value();
    }
    const bool tiled = schedule.tiled_gemm == node.id;
    const std::string split = value.slices >= 2 ? "GRID-SPLIT_" + num(value.slices) + "-" : "";
    for (size_t d = 0; d < dims.size(); ++d) {
      bool reduced = reduction && std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
      if (value.mapping == ReductionMapping::kWarp) {
        attrs.push_back(reduced ? split + "WARP" : "GRID");
      } else if (value.mapping == ReductionMapping::kColumn) {
        bool trailing = static_cast<int64_t>(d) > axes.back();
        attrs.push_back(reduced    ? split + "CTA-ROWS_" + num(schedule.block / value.columns)
                        : trailing ? "WARP-COL_" + num(value.columns)
                                   : "GRID");
      } else if (tiled && d + 2 == dims.size()) {
        attrs.push_back("GRID-TILE_" + num(schedule.tile_m) + "x" + num(schedule.tile_n));
      } else if (tiled && d + 1 == dims.size()) {
        attrs.push_back("THREAD");
      } else if (reduced) {
        attrs.push_back("THREAD");
      } else {
        attrs.push_back(d + 1 == dims.size() ? "CTA" : "GRID");
      }
    }
  }
  if (attrs.empty()) attrs.push_back("THREAD");
  std::string text = op_name + "[";
  for (size_t a = 0; a < attrs.size(); ++a) text += (a ? "," : "") + attrs[a];
  text += "]";
  if (value.materialized && value.storage == Storage::kShared) text += "S";
  return text;
}

}  // namespace

Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile) {
  return emit_kernel(graph, group_boundary(graph, nodes), kernel_name, profile);
}

Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const GroupBoundary& boundary,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile) {
  STITCH_ASSIGN_OR_RETURN(GroupSchedule schedule, build_schedule(graph, boundary, profile));
  EmittedKernel kernel;
  kernel.name = kernel_name;
  kernel.file = kernel_name + ".cu";
  for (ir::ValueId id : schedule.boundary.inputs) {
    STITCH_RETURN_IF_ERROR(storage_type(graph.value(id).type.dtype).status().with_prefix("input \"" + graph.value(id).name + "\": "));
    kernel.inputs.push_back(KernelTensor{graph.value(id).name, graph.value(id).type.dtype, graph.value(id).type.dims});
  }
  for (ir::ValueId id : schedule.boundary.outputs) {
    kernel.outputs.push_back(KernelTensor{graph.value(id).name, graph.value(id).type.dtype, graph.value(id).type.dims});
  }
  KernelWriter writer(graph, schedule);
  STITCH_ASSIGN_OR_RETURN(std::string body, writer.write_body());

  kernel.composition = std::string(composition_name(schedule.composition));
  kernel.workspace_bytes = schedule.workspace_bytes;
  kernel.launch = LaunchConfig{schedule.grid, schedule.block, schedule.shared_bytes, schedule.cooperative};
  kernel.shared_bytes_requested = schedule.shared_bytes_requested;
  kernel.shared_bytes_allocated = schedule.shared_bytes;
  kernel.shared_memory_fallback = schedule.shared_memory_fallback;
  kernel.predicted_time_us = cost_model::estimate_group(graph, schedule.boundary.ordered_nodes, profile).time_us;

  // Template and per-op schedules.
  std::set<ir::ValueId> outputs(schedule.boundary.outputs.begin(), schedule.boundary.outputs.end());
  std::map<std::string, int> op_counter;
  for (ir::NodeId id : schedule.boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    kernel.fused_nodes.push_back((node.name.empty() ? std::string("<unnamed>") : node.name) + " (" + node.op_type + ")");
    OpSchedule op{node.name, node.op_type, kernel.composition, ""};
    std::string lower;
    for (char c : node.op_type) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    std::string op_name = lower + "_" + num(++op_counter[lower]);
    for (ir::ValueId output : node.outputs) {
      if (output == ir::kNoId) continue;
      const ValueSchedule& value = schedule.values.at(output);
      if (!value.materialized && !outputs.count(output)) {
        op.composition = "thread";
        continue;
      }
      if (value.mapping != ReductionMapping::kThread) {
        op.composition = value.mapping == ReductionMapping::kColumn ? "block" : "warp";
      }
      std::string entry = template_entry(graph, schedule, output, op_name);
      op.template_entry += (op.template_entry.empty() ? "" : " ") + entry;
      kernel.template_text += (kernel.template_text.empty() ? "" : " ") + entry + ";";
    }
    kernel.ops.push_back(op);
  }

  // The .cu text.
  std::ostringstream cu;
  cu << "// " << kernel.file << ": generated by stitchopt (docs/codegen.md). Do not edit.\n//\n";
  cu << "// Fused ONNX nodes:\n";
  for (const std::string& name : kernel.fused_nodes) cu << "//   " << support::source_text(name) << "\n";
  cu << "// Template: " << support::source_text(kernel.template_text, 4096) << "\n";
  cu << "// Composition: " << kernel.composition;
  if (is_row_local(schedule)) {
    cu << " (" << schedule.rows << " rows of " << schedule.row_length << ", "
       << (schedule.composition == Composition::kWarp
               ? "a warp per row, " + num(schedule.rows_per_block) + " rows per block"
               : schedule.blocks_per_row >= 2
                     ? "each row split across " + num(schedule.blocks_per_row) + " blocks of " +
                           num(schedule.slice) + " elements, " + num(schedule.levels) +
                           " phases separated by grid barriers"
                     : std::string("a block per row"))
       << ")";
  } else if (schedule.tiled_gemm != ir::kNoId) {
    cu << " (" << schedule.gemm_batch << " x [" << schedule.gemm_m << ", " << schedule.gemm_k << "] x ["
       << schedule.gemm_k << ", " << schedule.gemm_n << "] MatMul in [" << schedule.tile_m << ", "
       << schedule.tile_n << "] output tiles, A and B tiles in shared memory)";
  } else if (schedule.composition == Composition::kGlobal) {
    cu << " (" << schedule.levels << " stages separated by grid barriers)";
  }
  cu << "\n// Inputs:\n";
  for (const KernelTensor& t : kernel.inputs) cu << "//   " << support::source_text(t.value_name) << ": " << ir::dtype_onnx_name(t.dtype) << dims_text(t.shape) << "\n";
  cu << "// Outputs:\n";
  for (const KernelTensor& t : kernel.outputs) cu << "//   " << support::source_text(t.value_name) << ": " << ir::dtype_onnx_name(t.dtype) << dims_text(t.shape) << "\n";
  cu << "// Launch: grid " << kernel.launch.grid << ", block " << kernel.launch.block << ", shared "
     << kernel.launch.shared_bytes << " bytes (requested " << kernel.shared_bytes_requested << ")"
     << (kernel.launch.cooperative ? ", cooperative" : "") << ", workspace " << kernel.workspace_bytes << " bytes\n";
  if (!kernel.shared_memory_fallback.empty()) cu << "// Shared-memory fallback: " << support::source_text(kernel.shared_memory_fallback, 4096) << "\n";
  char predicted[64];
  std::snprintf(predicted, sizeof(predicted), "%.3f", kernel.predicted_time_us);
  cu << "// Predicted time: " << predicted << " us\n";
  cu << "#include \"stitch_prelude.cuh\"\n\n";
  // Kernel parameters (the inputs the body reads, the outputs, the workspace) and
  // the launcher's locals passed as its arguments.
  std::string params;
  std::string args;
  std::ostringstream launcher_locals;
  auto add_tensor = [&](ir::ValueId id, bool input, size_t k) {
    const std::string type = (input ? "const " : "") + storage_type(graph.value(id).type.dtype).value();
    const std::string name = writer.pointer_name(id);
    params += (params.empty() ? "" : ",\n    ") + type + "* __restrict__ " + name;
    launcher_locals << "  " << type << "* " << name << " = static_cast<" << type << "*>("
                    << (input ? "inputs[" : "outputs[") << k << "]);\n";
    args += ", " + name;
  };
  std::vector<size_t> used = writer.used_inputs();
  std::sort(used.begin(), used.end());
  for (size_t k : used) add_tensor(schedule.boundary.inputs[k], true, k);
  for (size_t k = 0; k < schedule.boundary.outputs.size(); ++k) {
    add_tensor(schedule.boundary.outputs[k], false, k);
  }
  if (schedule.workspace_bytes > 0) {
    params += (params.empty() ? "" : ",\n    ") + std::string("unsigned char* __restrict__ workspace");
    launcher_locals << "  unsigned char* workspace_bytes = static_cast<unsigned char*>(workspace);\n";
    args += ", workspace_bytes";
  }
  cu << "STITCH_KERNEL void " << kernel_name << "_kernel(\n    " << params << ") {\n" << body << "}\n\n";
  cu << "#ifndef __CUDACC_RTC__\n";
  cu << "extern \"C\" size_t " << kernel_name << "_workspace_bytes(void) { return " << kernel.workspace_bytes << "; }\n\n";
  cu << "extern \"C\" cudaError_t " << kernel_name
     << "_launch(const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) {\n";
  cu << "  (void)inputs;\n";
  if (schedule.workspace_bytes == 0) cu << "  (void)workspace;\n";
  cu << launcher_locals.str();
  if (schedule.cooperative) {
    cu << "  long long grid = " << kernel.launch.grid << ";\n";
    cu << "  const long long resident = stitch_max_coresident_blocks(" << kernel_name << "_kernel, "
       << kernel.launch.block << ", 0);\n";
    cu << "  if (resident > 0 && grid > resident) grid = resident;\n";
    cu << "  return STITCH_LAUNCH_COOPERATIVE(" << kernel_name << "_kernel, static_cast<unsigned int>(grid), "
       << kernel.launch.block << ", 0, stream" << args << ");\n";
  } else {
    cu << "  return STITCH_LAUNCH(" << kernel_name << "_kernel, " << kernel.launch.grid << ", "
       << kernel.launch.block << ", 0, stream" << args << ");\n";
  }
  cu << "}\n#endif  // __CUDACC_RTC__\n";
  kernel.source = cu.str();
  // Model strings pass support::source_text on their way in; this keeps it that way.
  auto stray = std::find_if(kernel.source.begin(), kernel.source.end(), [](char c) {
    return c != '\n' && (c < 0x20 || c > 0x7e);
  });
  STITCH_CHECK(stray == kernel.source.end())
      << kernel.file << ": byte " << static_cast<int>(static_cast<unsigned char>(*stray))
      << " at offset " << (stray - kernel.source.begin()) << " is not printable ASCII";
  return kernel;
}

}  // namespace stitch::emit
