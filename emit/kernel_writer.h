// The kernel writer: the body of one fused group's STITCH_KERNEL, from its schedule
// (emit/schedule.h). Internal to emit/ (cuda_emitter.cc drives it).
//
// It names every value (a C identifier per value, unique in the kernel), defines the
// accessor lambda `v_<name>(long long i)` of each value it reads (an inlined op's index
// function through the op-lowering table, or a read of memory for inputs and
// materialized values) and has the composition's interface (Composition<Plan>, its folder under
// emit/compositions/) write its declarations and stages. Its member functions live in
// three files along their concepts (cuda_emitter.cc drives them):
//   kernel_writer.cc      accessors, inlined values, one value's stage code, the
//                         dispatch to the composition's writer;
//   reduction_emitter.cc  reductions: per-thread loops, warp/column mappings, partials,
//                         row-local shuffles;
//   gemm_emitter.cc       MatMul/Gemm per-thread bodies and the shared tile loads.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "emit/op_lowering.h"
#include "emit/schedule.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

class KernelWriter {
 public:
  KernelWriter(const ir::Graph& graph, const GroupSchedule& schedule);

  // The kernel body: shared-memory and index declarations, the accessors, the stages.
  Result<std::string> write_body();
  // Indices into boundary.inputs of the inputs the body reads (in the order first read).
  const std::vector<size_t>& used_inputs() const { return used_inputs_; }
  std::string pointer_name(ir::ValueId id) const { return "p_" + names_.at(id); }

 private:
  // Each composition's interface (emit/compositions/composition.h) writes its
  // declarations and stages with the accessors and stages below.
  template <class Plan>
  friend struct Composition;

  ir::DType dtype(ir::ValueId id) const { return graph_.value(id).type.dtype; }
  const std::vector<int64_t>& dims(ir::ValueId id) const { return graph_.value(id).type.dims; }
  std::string accessor_name(ir::ValueId id) const { return "v_" + names_.at(id); }
  bool produced_inside(ir::ValueId id) const;
  const ir::Node& producer(ir::ValueId id) const { return graph_.node(graph_.value(id).producer); }
  Status error(const ir::Node& node, const std::string& why) const {
    return Status::invalid_input("node " + node.display_name() + ": " + why);
  }
  // The pointer (output) or workspace array (ws_<name>) a stage writes `id` to.
  std::string target_array(ir::ValueId id) const;
  // The schedule's plan, which the caller knows is a P (the functions of one
  // composition's stages, reached through write_body's std::visit).
  template <class P>
  const P& plan() const {
    return std::get<P>(schedule_.plan);
  }
  // The thread and packing compositions' 128-bit accesses; none (width 1) otherwise.
  const VectorAccess& vector() const {
    static const VectorAccess kScalar;
    const VectorAccess* access = vector_access(schedule_);
    return access ? *access : kScalar;
  }

  // kernel_writer.cc: accessors and inlined values.
  // Makes sure `id` has an accessor lambda in defs_ (its operands' first); returns its
  // name.
  Result<std::string> accessor(ir::ValueId id);
  Result<std::string> define_memory_accessor(ir::ValueId id);
  std::string window_accessor(ir::ValueId id, const std::string& name) const;
  Status define_inlined(ir::ValueId id);
  Result<std::string> op_body(const ir::Node& node, size_t slot);
  Result<std::string> op_statements(const ir::Node& node, size_t slot);
  std::string define_compute(ir::ValueId id, const std::string& body, const std::string& note);
  Result<std::string> value_function(ir::ValueId id);

  // kernel_writer.cc: stages.
  // Values a stage writes (materialized values and group outputs), in topological
  // order; computed once, as written_.
  std::vector<ir::ValueId> written_values() const;
  Result<std::string> stage_code(ir::ValueId id, const std::string& indent);
  Result<std::string> epilogue_writes(ir::ValueId gemm, const std::string& indent);
  std::string loop_start(int64_t items, bool per_warp);
  std::string row_lane() const;
  bool row_guarded() const;
  // The loop header over the thread's elements j of a row of `length`: strided by the
  // row's lanes, or with 128-bit row accesses (RowPlan::vector) runs of 4 consecutive
  // elements, strided by 4 x the lanes (row_run_loop, then j over the run).
  std::string row_loop(int64_t length) const;
  // Whether a row of `length` is walked in runs of 4, and the header of the loop over
  // the runs' first elements j4.
  bool row_runs(int64_t length) const;
  std::string row_run_loop(int64_t length) const;
  // The declarations before the accessors: the shared arena, then the composition's
  // (tiles, row and thread indices, the grid barrier, the split rows' partials).
  std::string prologue(const std::vector<ir::ValueId>& written) const;
  std::string barrier_declaration() const;
  bool reads_through_registers(ir::ValueId written, ir::ValueId target) const;

  // reduction_emitter.cc.
  Result<std::string> reduction_body(const ir::Node& node);
  Result<std::string> empty_reduction_result(const ir::Node& node,
                                             const std::vector<int64_t>& axes);
  // A row reduction's code; with `stored`, its loop also stores that group output (the
  // reduction's input) at each element it reads (Composition<RowPlan>::stores_in_reductions).
  Result<std::string> row_reduction_code(ir::ValueId id, const std::string& indent,
                                         ir::ValueId stored = ir::kNoId);
  // `any_part`: the block writing the result may be any part of the row (the last to
  // arrive), not part 0.
  Result<std::string> combine_code(ir::ValueId id, bool write, const std::string& indent,
                                   bool any_part = false);
  Result<std::string> last_block_code(ir::ValueId id, const std::string& indent);
  Result<std::string> mapped_reduction_code(ir::ValueId id, const std::string& indent);
  Result<std::string> partials_code(ir::ValueId id, const std::string& indent);
  std::string partials_pointer(ir::ValueId id);

  // gemm_emitter.cc.
  Result<std::string> gemm_body(const ir::Node& node, bool lanes = false);
  Result<std::string> lane_gemm_code(ir::ValueId id, const std::string& indent);
  Result<std::string> warp_mma_code(ir::ValueId id, const std::string& indent);
  // A loop of the block's threads filling a shared tile: `slot` = `value` for each of
  // `elements` e (after `index`), several loads in flight per thread.
  std::string tile_load_loop(const std::string& slot, int64_t elements, const std::string& index,
                             const std::string& value, const std::string& indent) const;
  Result<std::string> operand_value(ir::ValueId id, const std::string& index);
  // `value`, a float32 GEMM operand computed on CUDA cores, as its product reads it:
  // rounded to TF32 under GroupSchedule::products kTf32, else unchanged.
  std::string cuda_core_operand(const std::string& value, ir::DType dtype) const;
  Result<std::string> output_writes(const std::vector<ir::ValueId>& written,
                                    const std::string& indent);

  // A group output written through a Transpose of a value computed at its own index
  // (the attention and stencil compositions' moved outputs).
  Result<std::string> write_through_transpose(ir::ValueId id, const ir::Node& transpose);

  bool narrow_indices() const;  // index_t is int (see prologue)

  const ir::Graph& graph_;
  const GroupSchedule& schedule_;
  std::map<ir::ValueId, std::string> names_;
  // Elements of the current stage's grid-stride loops written so far: the next loop
  // starts at that thread (modulo the grid), so that a stage's small loops (an
  // unrolled RNN step's GEMMs of a few hundred outputs) run side by side on different
  // blocks instead of one after another on the first block (measured on an H100,
  // docs/benchmarks.md). Reset at each stage and each packed part.
  int64_t loop_offset_ = 0;
  std::map<ir::ValueId, size_t> output_index_;
  std::set<ir::NodeId> inside_;
  std::set<ir::ValueId> defined_;
  bool defining_inlined_ = false;            // inside accessor()'s loop
  ir::ValueId pending_ = ir::kNoId;          // the operand a define_inlined() is waiting for
  std::set<ir::ValueId> computed_;           // compute_ lambdas defined
  std::set<ir::ValueId> partials_declared_;  // pt_ pointers of sliced reductions
  std::vector<size_t> used_inputs_;
  std::vector<ir::ValueId> written_;  // written_values()
  std::ostringstream defs_;
};

// The C++ type of a reduction's accumulator: float in the row-local schedules, the
// schedule's choice for warp and column mappings (double for sums and products).
std::string accumulator_type(int bytes);

}  // namespace stitch::emit
