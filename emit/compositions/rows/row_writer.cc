// The rows composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "emit/cuda_text.h"
#include "ir/core/op_registry.h"
#include "support/escape.h"

namespace stitch::emit {

// Row-local code for value `id` inside the row loop (warp/block composition).
Result<std::string> Composition<RowPlan>::row_code(KernelWriter& w, ir::ValueId id,
                                                   const std::string& indent, ir::ValueId stored) {
  if (ir::op_kind(w.producer(id)) == ir::OpKind::kReduction)
    return w.row_reduction_code(id, indent, stored);
  const ValueSchedule& value = w.schedule_.values.at(id);
  const std::string sync = w.plan<RowPlan>().warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
  const std::string& base = w.names_.at(id);
  std::string code = indent + "// " + comment_name(w.producer(id)) + " -> " +
                     ir::to_string(w.graph_.value(id).type) + "\n";
  const int64_t k = value.row_elements;
  const std::string index = "row * " + num(k) + " + j";
  // Rows moved by a Transpose: its operand at this row, written to the row it lands on.
  STITCH_ASSIGN_OR_RETURN(std::string function, value.rows_moved
                                                    ? w.accessor(w.producer(id).inputs[0])
                                                    : w.value_function(id));
  std::string target;
  if (value.rows_moved) {
    target = w.pointer_name(id) + "[" + moved_row(w, id) + " * " + num(k) + " + j]";
  } else if (w.output_index_.count(id)) {
    target = w.pointer_name(id) + "[" + index + "]";
  } else if (value.storage == Storage::kShared) {
    target = "sh_" + base + "[j]";
  } else {
    target = "ws_" + base + "[" + index + "]";
  }
  // A clamped row group computes but does not write (shared rows are its own).
  const bool guarded =
      w.row_guarded() && (w.output_index_.count(id) || value.storage == Storage::kWorkspace);
  if (w.row_runs(k) && w.output_index_.count(id) && !value.rows_moved &&
      w.dtype(id) == ir::DType::kFloat32) {
    // A run of 4 elements, stored with one 128-bit store.
    code += indent + (guarded ? "if (row_in) " : "") + w.row_run_loop(k) + " {\n";
    code += indent + "  float4 run{};\n";
    code += indent + "  for (index_t j = j4; j < j4 + 4; ++j) stitch_set_lane4(run, " +
            "static_cast<int>(j - j4), " + function + "(" + index + "));\n";
    code += indent + "  stitch_store4(" + w.pointer_name(id) + " + row * " + num(k) +
            " + j4, run, vec4);\n";
    code += indent + "}\n";
  } else {
    code += indent + (guarded ? "if (row_in) " : "") + w.row_loop(k) + " " + target + " = " +
            store(w.dtype(id), function + "(" + index + ")") + ";\n";
  }
  if (value.materialized) code += indent + sync + "\n";
  return code;
}

std::map<ir::ValueId, ir::ValueId> Composition<RowPlan>::stores_in_reductions(
    const KernelWriter& w, const Written& values) {
  std::map<ir::ValueId, ir::ValueId> stores;
  if (w.row_guarded()) return stores;
  std::set<ir::ValueId> taken;
  for (ir::ValueId id : values) {
    const ir::Node& node = w.producer(id);
    if (ir::op_kind(node) != ir::OpKind::kReduction || node.inputs.empty()) continue;
    const ir::ValueId x = node.inputs[0];
    if (x == ir::kNoId || taken.count(x) || !w.output_index_.count(x)) continue;
    if (std::find(values.begin(), values.end(), x) == values.end()) continue;
    const ValueSchedule& value = w.schedule_.values.at(x);
    if (value.materialized || value.rows_moved || value.storage == Storage::kShared) continue;
    const int64_t rows = std::max<int64_t>(w.plan<RowPlan>().rows, 1);
    if (value.row_elements * rows != elements_of(w.graph_, x)) continue;
    stores[id] = x;
    taken.insert(x);
  }
  return stores;
}

// The row a Transpose that moves whole rows (rows_moved) writes the current row to:
// the row's coordinates over the operand's row axes, each scaled by the stride of
// the output axis it moves to.
std::string Composition<RowPlan>::moved_row(const KernelWriter& w, ir::ValueId id) {
  const ir::Node& node = w.producer(id);
  const std::vector<int64_t>& in = w.dims(node.inputs[0]);
  const std::vector<int64_t>& out = w.dims(id);
  const std::vector<int64_t> perm = transpose_perm(node, in.size());
  // The row axes: the leading axes of the rows' elements (schedule.cc checked that
  // the Transpose leaves the others in place).
  size_t q = 0;
  for (int64_t running = 1; q < in.size() && running < w.plan<RowPlan>().rows; ++q)
    running *= in[q];
  return "(" + transposed_index(in, out, perm, q, "row") + ")";
}

// The code of `values` in order, each output a reduction stores in its loop
// (stores_in_reductions) written there instead of by a loop of its own.
Result<std::string> Composition<RowPlan>::values_code(KernelWriter& w, const Written& values,
                                                      const std::string& indent) {
  const std::map<ir::ValueId, ir::ValueId> stores = stores_in_reductions(w, values);
  std::set<ir::ValueId> stored;
  for (const auto& [reduction, output] : stores) stored.insert(output);
  std::string code;
  for (ir::ValueId id : values) {
    if (stored.count(id)) continue;
    auto it = stores.find(id);
    STITCH_ASSIGN_OR_RETURN(std::string text,
                            row_code(w, id, indent, it == stores.end() ? ir::kNoId : it->second));
    code += text;
  }
  return code;
}

// Split rows: phases separated by grid barriers; in each, a block per (row, part)
// combines the partials of the reductions the phase reads, then writes its values.
Result<std::string> Composition<RowPlan>::split_row_stages(KernelWriter& w,
                                                           const Written& written) {
  std::ostringstream stages;
  const int64_t parts = w.plan<RowPlan>().blocks_per_row;
  const int64_t length = w.plan<RowPlan>().row_length;
  for (int phase = 0; phase < w.schedule_.levels; ++phase) {
    if (phase > 0) stages << "  stitch_grid_sync(barrier);\n";
    stages << "  // Phase " << phase << ": block (row, part) over the row slice [j0, j1)\n";
    stages << "  for (index_t vb = blockIdx.x; vb < " << w.plan<RowPlan>().rows * parts
           << "; vb += gridDim.x) {\n";
    stages << "    row = vb / " << parts << ";\n";
    stages << "    const index_t part = vb % " << parts << ";\n";
    stages << "    [[maybe_unused]] const index_t j0 = part * " << w.plan<RowPlan>().slice << ";\n";
    stages << "    [[maybe_unused]] const index_t j1 = j0 + " << w.plan<RowPlan>().slice << " < "
           << length << " ? j0 + " << w.plan<RowPlan>().slice << " : " << length << ";\n";
    if (phase == 0 && w.plan<RowPlan>().last_block_done) {
      stages
          << "    if (part == 0 && threadIdx.x == 0) done[row] = 0u;  // counted after a barrier\n";
    }
    for (ir::ValueId id : written) {
      const ValueSchedule& value = w.schedule_.values.at(id);
      bool reduction = ir::op_kind(w.producer(id)) == ir::OpKind::kReduction;
      if (!reduction || value.level + 1 > phase) continue;
      bool needed = value.level + 1 == phase && w.output_index_.count(id) > 0;
      for (ir::ValueId other : written) {
        if (w.schedule_.values.at(other).level == phase && w.reads_through_registers(other, id)) {
          needed = true;
        }
      }
      if (!needed) continue;
      STITCH_ASSIGN_OR_RETURN(std::string code,
                              w.combine_code(id, value.level + 1 == phase, "    "));
      stages << code;
    }
    Written in_phase;
    for (ir::ValueId id : written) {
      if (w.schedule_.values.at(id).level == phase) in_phase.push_back(id);
    }
    STITCH_ASSIGN_OR_RETURN(std::string code, values_code(w, in_phase, "    "));
    stages << code;
    stages << "    __syncthreads();\n  }\n";
  }
  return stages.str();
}

// A warp or a block per row: one loop over the rows writing every value.
Result<std::string> Composition<RowPlan>::row_stages(KernelWriter& w, const Written& written) {
  std::ostringstream stages;
  const bool warp = w.plan<RowPlan>().warp;
  const std::string sync = warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
  if (warp && w.plan<RowPlan>().lanes_per_row < 32) {
    // The loop runs over the warp's first row, the same for all its lanes, so that
    // every lane reaches the shuffles; each group of lanes_per_row takes its row.
    const int lanes = w.plan<RowPlan>().lanes_per_row;
    stages << "  for (index_t first = static_cast<index_t>(blockIdx.x) * "
           << w.plan<RowPlan>().rows_per_block << " + threadIdx.x / 32 * " << 32 / lanes
           << "; first < " << w.plan<RowPlan>().rows
           << "; first += static_cast<index_t>(gridDim.x) * " << w.plan<RowPlan>().rows_per_block
           << ") {\n";
    stages << "    row = first + threadIdx.x % 32 / " << lanes << ";\n";
    if (w.row_guarded()) {
      stages << "    const bool row_in = row < " << w.plan<RowPlan>().rows << ";\n";
      stages << "    if (!row_in) row = " << w.plan<RowPlan>().rows - 1 << ";\n";
    }
  } else if (warp) {
    stages << "  for (row = static_cast<index_t>(blockIdx.x) * " << w.plan<RowPlan>().rows_per_block
           << " + threadIdx.x / 32; row < " << w.plan<RowPlan>().rows
           << "; row += static_cast<index_t>(gridDim.x) * " << w.plan<RowPlan>().rows_per_block
           << ") {\n";
  } else {
    stages << "  for (row = blockIdx.x; row < " << w.plan<RowPlan>().rows
           << "; row += gridDim.x) {\n";
  }
  STITCH_ASSIGN_OR_RETURN(std::string code, values_code(w, written, "    "));
  stages << code;
  stages << "    " << sync << "\n  }\n";
  return stages.str();
}

std::string Composition<RowPlan>::prologue(const KernelWriter& w, const RowPlan& plan,
                                           const Written& written) {
  std::ostringstream body;
  if (plan.warp && plan.lanes_per_row < 32) {
    body << "  const index_t lane = threadIdx.x % " << plan.lanes_per_row
         << ";  // within the row's " << plan.lanes_per_row << " lanes\n";
  } else if (plan.warp) {
    body << "  const index_t lane = threadIdx.x % 32;\n";
  }
  body << "  index_t row = 0;\n";
  if (plan.split()) {
    body << w.barrier_declaration();
    for (ir::ValueId id : written) {
      const ValueSchedule& value = w.schedule_.values.at(id);
      if (value.partial_offset < 0) continue;
      body << "  float* pt_" << w.names_.at(id) << " = reinterpret_cast<float*>(workspace + "
           << value.partial_offset << ");  // [" << plan.rows << ", " << plan.blocks_per_row
           << "] partials of " << comment_name(w.producer(id)) << "\n";
    }
    if (plan.last_block_done) {
      body << "  unsigned int* done = reinterpret_cast<unsigned int*>(workspace + "
           << plan.done_offset << ");  // [" << plan.rows
           << "] blocks of the row that wrote their last partials\n";
    }
  }
  if (plan.vector.width == 4) {
    // The runs' 128-bit path, the same for every thread: every window read and every
    // row stored a run at a time is 16-byte aligned.
    std::string aligned;
    auto add = [&](ir::ValueId id) {
      aligned += (aligned.empty() ? "" : " && ") + std::string("stitch_aligned16(") +
                 w.pointer_name(id) + ")";
    };
    for (ir::ValueId id : w.schedule_.boundary.inputs) {
      if (plan.vector.inputs.count(id) && w.defined_.count(id)) add(id);
    }
    for (ir::ValueId id : w.schedule_.boundary.outputs) {
      if (ir::op_kind(w.producer(id)) != ir::OpKind::kReduction &&
          w.dtype(id) == ir::DType::kFloat32) {
        add(id);
      }
    }
    body << "  [[maybe_unused]] const bool vec4 = " << (aligned.empty() ? "true" : aligned)
         << ";  // 128-bit loads and stores of the rows' runs, else element by element\n";
  }
  int64_t slot_bytes = w.schedule_.shared_bytes - (plan.warp ? 0 : kBlockScratchBytes);
  if (slot_bytes > 0) {
    body << "  const index_t row_slot = "
         << (plan.warp ? "(threadIdx.x / " + num(plan.lanes_per_row) + ") * " +
                             num(slot_bytes / plan.rows_per_block)
                       : std::string("0"))
         << ";\n";
  }
  return body.str();
}

// The template entry's attributes: the row dims over the grid (a warp or a block per
// row, or per slice of one), the rest within the block.
TemplateAttrs Composition<RowPlan>::template_attrs(const TemplateContext& context,
                                                   const RowPlan& plan) {
  const std::vector<int64_t>& dims = context.dims;
  TemplateAttrs attrs;
  int64_t running = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (plan.rows == 1) {  // a scalar: the whole value is the row
      attrs.push_back(d == 0 && plan.split() ? "GRID-SPLIT_" + num(plan.blocks_per_row) + "-CTA"
                                             : "CTA");
      continue;
    }
    bool row_dim = running < plan.rows;
    running *= dims[d];
    if (row_dim) {
      bool last_row_dim = running >= plan.rows;
      std::string attr = "GRID";
      if (last_row_dim && plan.warp) {
        attr = "GRID-WARP_" + num(plan.rows_per_block);
        if (plan.lanes_per_row < 32) attr += "-LANES_" + num(plan.lanes_per_row);
      } else if (last_row_dim && plan.split()) {
        attr = "GRID-SPLIT_" + num(plan.blocks_per_row);
      }
      attrs.push_back(attr);
    } else {
      attrs.push_back("CTA");
    }
  }
  return attrs;
}

// The .cu header's explanation: the rows and how they map.
std::string Composition<RowPlan>::detail(const ir::Graph& /*graph*/, const GroupSchedule& schedule,
                                         const RowPlan& plan) {
  std::ostringstream cu;
  cu << " (" << plan.rows << " rows of " << plan.row_length << ", "
     << (plan.warp && plan.lanes_per_row < 32
             ? num(plan.lanes_per_row) + " lanes per row, " + num(32 / plan.lanes_per_row) +
                   " rows per warp, " + num(plan.rows_per_block) + " rows per block"
         : plan.warp ? "a warp per row, " + num(plan.rows_per_block) +
                           (plan.rows_per_block == 1 ? " row per block" : " rows per block")
         : plan.split() ? "each row split across " + num(plan.blocks_per_row) + " blocks of " +
                              num(plan.slice) + " elements, " + num(schedule.levels) +
                              " phases separated by grid barriers"
                        : std::string("a block per row"))
     << ")";
  return cu.str();
}

}  // namespace stitch::emit
