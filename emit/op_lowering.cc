// The op-lowering table (see op_lowering.h): the reductions' and GEMMs' entries, the
// table built once from every file's registrations, and the lookups.
#include "emit/op_lowering.h"

#include <unordered_map>
#include <utility>

#include "emit/cuda_text.h"
#include "ir/core/op_registry.h"

namespace stitch::emit {
namespace {

ReductionLowering accumulate(ReduceCombine combine, std::string_view pre = "v",
                             std::string_view post = "", bool mean = false) {
  ReductionLowering lowering;
  lowering.combine = combine;
  lowering.pre = std::string(pre);
  lowering.post = std::string(post);
  lowering.mean = mean;
  return lowering;
}

OpLowering reduction(ReductionLowering lowering) {
  OpLowering entry;
  entry.reduction = lowering;
  return entry;
}

OpLowering reduction_form(ReductionForm form) {
  ReductionLowering lowering;
  lowering.form = form;
  return reduction(lowering);
}

OpLowering gemm(GemmForm form) {
  OpLowering entry;
  entry.gemm = form;
  return entry;
}

// Reductions (the thread, warp, column and row-local emitters in reduction_emitter.cc
// read these) and GEMMs (gemm_emitter.cc).
void register_reduction_and_gemm_lowerings(OpLoweringRegistrations& table) {
  using C = ReduceCombine;
  table.emplace_back("ReduceSum", reduction(accumulate(C::kSum)));
  table.emplace_back("ReduceMean", reduction(accumulate(C::kSum, "v", "", true)));
  table.emplace_back("ReduceMax", reduction(accumulate(C::kMax)));
  table.emplace_back("ReduceMin", reduction(accumulate(C::kMin)));
  table.emplace_back("ReduceProd", reduction(accumulate(C::kProd)));
  table.emplace_back("ReduceL1", reduction(accumulate(C::kSum, "(v < 0 ? -v : v)")));
  table.emplace_back("ReduceL2", reduction(accumulate(C::kSum, "v * v", "sqrt")));
  table.emplace_back("ReduceSumSquare", reduction(accumulate(C::kSum, "v * v")));
  table.emplace_back("ReduceLogSum", reduction(accumulate(C::kSum, "v", "log")));
  table.emplace_back("ReduceLogSumExp", reduction_form(ReductionForm::kLogSumExp));
  table.emplace_back("ArgMax", reduction_form(ReductionForm::kArgMax));
  table.emplace_back("ArgMin", reduction_form(ReductionForm::kArgMin));
  table.emplace_back("MatMul", gemm(GemmForm::kMatMul));
  table.emplace_back("Gemm", gemm(GemmForm::kGemm));
}

using OpLoweringTable = std::unordered_map<const ir::OpSchema*, OpLowering>;

OpLoweringTable build_table() {
  OpLoweringRegistrations registrations;
  register_elementwise_lowerings(registrations);
  register_injective_lowerings(registrations);
  register_stencil_lowerings(registrations);
  register_reduction_and_gemm_lowerings(registrations);
  OpLoweringTable table;
  for (auto& [op_type, lowering] : registrations) {
    const ir::OpSchema* schema = ir::find_op_schema("", op_type);
    STITCH_CHECK(schema != nullptr)
        << "op lowering for \"" << op_type << "\", which the op registry does not know";
    STITCH_CHECK(table.emplace(schema, std::move(lowering)).second)
        << "two op lowerings for \"" << op_type << "\"";
  }
  return table;
}

}  // namespace

OpLowering inline_entry(InlineLowering body) {
  OpLowering lowering;
  lowering.inline_body = std::move(body);
  return lowering;
}

std::string combine_text(ReduceCombine kind, const std::string& a, const std::string& b,
                         bool floating) {
  if (kind == ReduceCombine::kSum) return a + " + " + b;
  if (kind == ReduceCombine::kProd) return a + " * " + b;
  std::string nan = floating ? " || isnan(" + b + ")" : "";
  std::string cmp = kind == ReduceCombine::kMax ? " > " : " < ";
  return "(" + b + cmp + a + nan + ") ? " + b + " : " + a;
}

// Lanes of a warp combine their accumulators `a` (of `type`) by xor shuffles over the
// offsets `highest` down to `lowest`: every lane ends with the combination of its
// group (the aligned 2 x highest lanes around it).
std::string shuffle_combine(ReduceCombine kind, const std::string& type, int lowest,
                            const std::string& indent, int highest) {
  if (highest < lowest) return "";
  return indent + "for (int offset = " + num(highest) + "; " +
         (lowest == 1 ? std::string("offset > 0") : "offset >= " + num(lowest)) +
         "; offset /= 2) {\n" + indent + "  const " + type +
         " b = __shfl_xor_sync(0xffffffffu, a, offset);\n" + indent +
         "  a = " + combine_text(kind, "a", "b", true) + ";\n" + indent + "}\n";
}

ir::ValueId OpLoweringContext::input(size_t k) const {
  return k < node.inputs.size() ? node.inputs[k] : ir::kNoId;
}

std::string OpLoweringContext::compute() const { return compute_type(dtype(output())); }

Result<std::string> OpLoweringContext::read(size_t k, const std::string& var) const {
  STITCH_ASSIGN_OR_RETURN(std::string name, accessor(input(k)));
  return name + "(" + broadcast_index(dims(output()), dims(input(k)), var) + ")";
}

Status OpLoweringContext::error(const std::string& why) const {
  return Status::invalid_input("node " + node.display_name() + ": " + why);
}

const OpLowering* find_op_lowering(const ir::Node& node) {
  static const OpLoweringTable table = build_table();
  const ir::OpSchema* schema = ir::find_op_schema(node.domain, node.op_type);
  if (schema == nullptr) return nullptr;
  auto it = table.find(schema);
  return it == table.end() ? nullptr : &it->second;
}

const ReductionLowering* find_reduction_lowering(const ir::Node& node) {
  const OpLowering* lowering = find_op_lowering(node);
  return lowering != nullptr && lowering->reduction ? &*lowering->reduction : nullptr;
}

bool reduces_per_thread_only(const ir::Node& node) {
  const ReductionLowering* lowering = find_reduction_lowering(node);
  return lowering != nullptr && lowering->form != ReductionForm::kAccumulate;
}

int reduction_accumulator_bytes(const ir::Graph& graph, const ir::Node& node) {
  const ReductionLowering* lowering = find_reduction_lowering(node);
  const bool max_or_min = lowering != nullptr && (lowering->combine == ReduceCombine::kMax ||
                                                  lowering->combine == ReduceCombine::kMin);
  const ir::DType input = graph.value(node.inputs[0]).type.dtype;
  // float32, float16 and bfloat16 sums accumulate in float (Kahan per lane); float64
  // and integer ones in 8 bytes.
  const bool float_sum = ir::dtype_is_float(input) && input != ir::DType::kFloat64;
  return max_or_min || float_sum ? 4 : 8;
}

std::optional<GemmForm> gemm_form(const ir::Node& node) {
  const OpLowering* lowering = find_op_lowering(node);
  return lowering != nullptr ? lowering->gemm : std::nullopt;
}

bool reads_later_operands_as_scalars(const ir::Node& reader) {
  const OpLowering* lowering = find_op_lowering(reader);
  return lowering != nullptr && lowering->later_operands_scalar;
}

bool permutes_axes(const ir::Node& node) {
  const OpLowering* lowering = find_op_lowering(node);
  return lowering != nullptr && lowering->permutes_axes;
}

}  // namespace stitch::emit
