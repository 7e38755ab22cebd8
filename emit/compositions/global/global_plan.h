// The global composition (emit/schedule.h, 4.): the always-correct schedule.
// Materialized values are computed in levels (the schedule's `levels` stages, each a
// grid-stride loop over a value's elements), separated by stitch_grid_sync in a
// cooperative launch, intermediates in the workspace.
#pragma once

#include <optional>
#include <string_view>

#include "emit/compositions/stencil/stencil_plan.h"

namespace stitch::emit {

struct GlobalPlan {
  // 4b.: the one stage that evaluates the group's stencil walks its tiles.
  std::optional<StencilTile> stencil;
  std::string_view name() const { return "global"; }
};

}  // namespace stitch::emit
