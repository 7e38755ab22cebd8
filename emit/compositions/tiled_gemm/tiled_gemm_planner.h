// The tiled MatMul composition's rule (emit/schedule.h, 2b.): one fine-grained
// MatMul read at its readers' own index, A and B tiles in shared memory. Refuses
// saying why when the group holds a GEMM it cannot tile.
#pragma once

#include "emit/compositions/composition_rule.h"

namespace stitch::emit {

Result<RuleOutcome> try_tiled_gemm(PlanningContext& context, GroupSchedule* schedule);

}  // namespace stitch::emit
