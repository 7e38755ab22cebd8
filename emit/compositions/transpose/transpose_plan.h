// The transpose composition (emit/schedule.h, 1c.): one Transpose that moves its
// input's last axis, as the batched swap [batch, rows, cols] -> [batch, cols, rows] of
// its collapsed dims; a block per 32 x 32 tile, read along the input's rows and
// written along the output's rows through a shared tile (XLA's tiled transpose,
// CUDA's transpose sample).
#pragma once

#include <cstdint>
#include <string_view>

namespace stitch::emit {

struct TransposePlan {
  int64_t batch = 1, rows = 0, cols = 0;
  std::string_view name() const { return "transpose"; }
};

}  // namespace stitch::emit
