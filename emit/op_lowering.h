// The op-lowering table: for every op the CUDA emitter supports, how it becomes CUDA.
// Entries are keyed by the op registry's schema (ir/core/op_registry.h): a node's entry
// is one find_op_schema lookup and one map lookup away, and everything the emitter and the
// scheduler decide per op (the index function of an inlined value, the accumulator
// of a reduction, the form of a GEMM) reads the entry, never the op-type string.
//
// Kinds of entries:
//   - inline_body: elementwise, broadcast and injective ops (op_lowering_elementwise.cc,
//     op_lowering_injective.cc) and stencils (op_lowering_stencil.cc: grouped Conv,
//     MaxPool, AveragePool): statements computing the output at flat index `i` from
//     the operands' accessors, ending in a return;
//   - reduction: Reduce*, ArgMax/ArgMin (op_lowering.cc): how elements combine;
//   - gemm: MatMul and Gemm (op_lowering.cc): which thread-composition body applies.
// View ops (Reshape, Squeeze, ...) need no entry: their kind (a flat-index identity)
// says everything. An op without an entry has no CUDA implementation: the emitter
// returns an error naming the node and the group stays unfused.
//
// Example: Relu's entry has an inline_body that, for f32[4,8], gives
//   const float x = v_s(i);
//   return x < 0 ? static_cast<float>(0) : x;
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

// What an inline lowering sees: the node, the output slot it computes, and the
// accessors of its operands. accessor() may fail with a "defined first" error that the
// kernel writer resolves by defining the operand and calling the lowering again, so a
// lowering has no side effects besides its accessor calls (in a fixed order).
struct OpLoweringContext {
  const ir::Graph& graph;
  const ir::Node& node;
  size_t slot;
  std::function<Result<std::string>(ir::ValueId)> accessor;
  // The stencil composition's staged stencil (schedule.h 3c.): the name of the
  // accessor that reads its input from the shared tile, `s(plane, p0, p1)` with the
  // input's plane (n x channels + channel) and spatial position; "" otherwise.
  std::string staged;
  // A staged Conv's filters in the shared arena (StencilTile::filter_offset): the name
  // of the accessor `f(plane, r)` of weight r (channel in the group x window + tap) of
  // output plane `plane` (n x filters + filter); "" otherwise.
  std::string staged_filters;

  ir::ValueId input(size_t k) const;  // kNoId when absent
  ir::ValueId output() const { return node.outputs[slot]; }
  const std::vector<int64_t>& dims(ir::ValueId id) const { return graph.value(id).type.dims; }
  ir::DType dtype(ir::ValueId id) const { return graph.value(id).type.dtype; }
  std::string compute() const;  // the output's compute type
  // Operand k broadcast to the output's shape, read at the flat index `var`.
  Result<std::string> read(size_t k, const std::string& var) const;
  // "node <name> (OpType): <why>"
  Status error(const std::string& why) const;
};

using InlineLowering = std::function<Result<std::string>(const OpLoweringContext&)>;

// How a reduction combines its elements.
enum class ReduceCombine { kSum, kProd, kMax, kMin };

// C text combining `a` and `b` by `kind`; max and min of floats keep a NaN `b`.
std::string combine_text(ReduceCombine kind, const std::string& a, const std::string& b,
                         bool floating);

// Lanes of a warp combine their accumulators `a` (of `type`) by xor shuffles over the
// offsets `highest` down to `lowest`: every lane ends with the combination of its
// group (the aligned 2 x highest lanes around it).
std::string shuffle_combine(ReduceCombine kind, const std::string& type, int lowest,
                            const std::string& indent, int highest = 16);

// How a reduction's per-thread loop is written: an accumulation (the combine, pre and
// post below), an arg-reduction's index search, or a max-shifted log-sum-exp.
enum class ReductionForm { kAccumulate, kArgMax, kArgMin, kLogSumExp };

struct ReductionLowering {
  ReductionForm form = ReductionForm::kAccumulate;
  ReduceCombine combine = ReduceCombine::kSum;
  std::string pre = "v";  // applied to each element: "v", "(v < 0 ? -v : v)", "v * v"
  std::string post;       // the function applied to the result: "", "sqrt", "log"
  bool mean = false;
  // (Which axes it reduces: ir::reduction_axes, the one reader.)
};

// The thread-composition body of a GEMM-kind op.
enum class GemmForm { kMatMul, kGemm };

struct OpLowering {
  InlineLowering inline_body = nullptr;
  // Output 0 is input 0 unchanged (Dropout at inference): no rounding.
  bool passes_through = false;
  // Operands after the first are read at element 0, not broadcast (Clip's bounds).
  bool later_operands_scalar = false;
  std::optional<ReductionLowering> reduction;
  std::optional<GemmForm> gemm;
  // The output is the input with its axes permuted (Transpose): the schedule moves
  // whole rows or tiles through it.
  bool permutes_axes = false;
};

// The registration table an op-lowering file fills: op type -> entry. Each op type
// must be in the op registry (checked when the table is built).
using OpLoweringRegistrations = std::vector<std::pair<std::string_view, OpLowering>>;
void register_elementwise_lowerings(OpLoweringRegistrations& table);
void register_injective_lowerings(OpLoweringRegistrations& table);
void register_stencil_lowerings(OpLoweringRegistrations& table);

// An entry with `body` as its inline_body.
OpLowering inline_entry(InlineLowering body);

// Output 0 as input 0 at the same index (View ops, Dropout); an error for other slots.
Result<std::string> pass_through_body(const OpLoweringContext& context);

// The entry for `node`, or null when the emitter has none (other domains, Opaque
// ops, ops without a CUDA implementation).
const OpLowering* find_op_lowering(const ir::Node& node);

// The node's reduction entry, or null.
const ReductionLowering* find_reduction_lowering(const ir::Node& node);
// Reductions whose schedule keeps a thread per output (ArgMax, ArgMin, ReduceLogSumExp).
bool reduces_per_thread_only(const ir::Node& node);
// Bytes of a warp- or column-mapped reduction's accumulator: 4 (float) for max, min
// and reductions of float32/float16/bfloat16 inputs, 8 (double, or 64-bit integer
// sums held in double as before) otherwise.
int reduction_accumulator_bytes(const ir::Graph& graph, const ir::Node& node);
// The node's GEMM form, or nullopt.
std::optional<GemmForm> gemm_form(const ir::Node& node);
// Whether `reader` reads its operands after the first at element 0 (Clip's bounds).
bool reads_later_operands_as_scalars(const ir::Node& reader);
// Whether `node` permutes its input's axes (OpLowering::permutes_axes: Transpose).
bool permutes_axes(const ir::Node& node);

}  // namespace stitch::emit
