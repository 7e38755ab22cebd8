// The row-local compositions (emit/schedule.h, 2.): every reduction reduces the last
// axes of the same rows and every read stays in its row, so one warp ("warp") or one
// block ("block") owns each row (AStitch 4.2); few long rows split each row across
// several blocks (split rows, phases separated by grid barriers).
#pragma once

#include <cstdint>
#include <string_view>

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
  bool split() const { return blocks_per_row >= 2; }
  std::string_view name() const { return warp ? "warp" : "block"; }
};

}  // namespace stitch::emit
