// The row-local compositions' rule (emit/schedule.h, 2.): every reduction reduces
// the last axes of the same rows and every read stays in its row; a warp or a block
// per row, or few long rows split across blocks. Refuses saying why it is not
// row-local (the global composition's why line repeats it).
#pragma once

#include "emit/compositions/composition_rule.h"

namespace stitch::emit {

Result<RuleOutcome> try_rows(PlanningContext& context, GroupSchedule* schedule);

}  // namespace stitch::emit
