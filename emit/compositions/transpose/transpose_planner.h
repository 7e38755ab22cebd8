// The transpose composition's rule (emit/schedule.h, 1c.): one Transpose that moves
// its input's last axis, both swapped dims at least 8 elements.
#pragma once

#include "emit/compositions/composition_rule.h"

namespace stitch::emit {

Result<RuleOutcome> try_transpose(PlanningContext& context, GroupSchedule* schedule);

}  // namespace stitch::emit
