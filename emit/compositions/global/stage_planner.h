// The staged rule, last and always planning (emit/schedule.h, 3.-5.): cheap
// producers recomputed, reductions mapped, values in levels; several levels are the
// global composition (its stencil staged when it pays, 4b.), one level the thread,
// warp, block or packing composition (vectorized, 3b.) or the stencil composition
// (3c.).
#pragma once

#include "emit/compositions/composition_rule.h"

namespace stitch::emit {

Result<RuleOutcome> try_stages(PlanningContext& context, GroupSchedule* schedule);

}  // namespace stitch::emit
