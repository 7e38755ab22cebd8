// The packing composition (emit/schedule.h, 3.): a single-stage group with
// independent parts, each part over its own range of blocks (FusionStitching's
// packing).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "emit/compositions/thread/thread_plan.h"
#include "ir/core/graph.h"

namespace stitch::emit {

struct PackingPlan {
  std::vector<std::vector<ir::NodeId>> parts;  // node ids of each independent part
  std::vector<int64_t> part_grids;             // blocks of each part, in order
  VectorAccess vector;                         // as the thread composition's (3b.)
  std::string_view name() const { return "packing"; }
};

}  // namespace stitch::emit
