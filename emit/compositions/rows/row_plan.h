// The row-local compositions (emit/schedule.h, 2.): every reduction reduces the last
// axes of the same rows and every read stays in its row, so one warp ("warp") or one
// block ("block") owns each row (AStitch 4.2); few long rows split each row across
// several blocks (split rows, phases separated by grid barriers).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"
#include "emit/compositions/vector_access.h"

namespace stitch::emit {

struct RowPlan {
  bool warp = true;        // a warp per row (else a block per row, or per slice of one)
  int64_t rows = 0;        // R
  int64_t row_length = 0;  // the longest row (k) among the group's values
  int rows_per_block = 1;  // warp: rows per block
  // Warp: the lanes that share a row, a power of two; a warp holds 32 / lanes_per_row
  // rows (short rows: each lane still reads several elements).
  int lanes_per_row = 32;
  // Block with split rows (AStitch 4.2, few long rows): each row is cut into
  // `blocks_per_row` slices of `slice` elements, one block per (row, slice);
  // reductions write per-slice partials to the workspace, and the schedule's `levels`
  // phases are separated by stitch_grid_sync (a phase combines the partials it reads).
  int blocks_per_row = 1;
  int64_t slice = 0;
  // Split rows whose last phase would only combine the partials of reduction outputs
  // (a softmax's row sums, written for the next kernel): that phase and its grid
  // barrier are dropped, and the last block of a row to write its partial combines the
  // row's partials and writes the result. Blocks count their arrivals per row in
  // `done_offset`'s [rows] counters of the workspace, which phase 0 zeroes (the runtime
  // zeroes only the barrier's counter, and the arrivals come after a grid barrier).
  bool last_block_done = false;
  int64_t done_offset = -1;
  // 128-bit accesses (row_planner.cc, plan_row_vectors): with width 4, each lane walks
  // its row in runs of 4 consecutive elements; `inputs` are read through 16-byte
  // windows their accessors load (windows_follow_reads), and float32 row values are
  // stored a run at a time.
  VectorAccess vector;
  bool split() const { return blocks_per_row >= 2; }
  std::string_view name() const { return warp ? "warp" : "block"; }
};

// The composition's interface (emit/compositions/composition.h), defined in row_writer.cc.
template <>
struct Composition<RowPlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const RowPlan& plan);
  static std::string detail(const ir::Graph&, const GroupSchedule& schedule, const RowPlan& plan);
  static const VectorAccess* vector_access(const RowPlan& plan) { return &plan.vector; }
  // Every lane of a row evaluates what the row reads.
  static bool lanes_follow_reductions(const RowPlan&) { return false; }
  static std::string prologue(const KernelWriter& w, const RowPlan& plan, const Written& written);
  // A split row's phases, or each row by a warp or a block.
  static Result<std::string> stages(KernelWriter& w, const RowPlan& plan, const Written& written) {
    return plan.split() ? split_row_stages(w, written) : row_stages(w, written);
  }

  // `id`'s code; a reduction stores `stored` (kNoId: nothing) in its own loop.
  static Result<std::string> row_code(KernelWriter& w, ir::ValueId id, const std::string& indent,
                                      ir::ValueId stored = ir::kNoId);
  // For each reduction of `values` that reduces a group output of `values` computed
  // inline (not materialized, not moved, at the reduction's own row index): that output,
  // which the reduction's loop stores as it reads it instead of a loop of its own
  // evaluating it a second time (a softmax's Exp written for outside and summed).
  static std::map<ir::ValueId, ir::ValueId> stores_in_reductions(const KernelWriter& w,
                                                                 const Written& values);
  static std::string moved_row(const KernelWriter& w, ir::ValueId id);
  static Result<std::string> values_code(KernelWriter& w, const Written& values,
                                         const std::string& indent);
  static Result<std::string> split_row_stages(KernelWriter& w, const Written& written);
  static Result<std::string> row_stages(KernelWriter& w, const Written& written);
};

}  // namespace stitch::emit
