// The attention composition's rule (emit/schedule.h, 1b.): a group holding one
// attention core whole, its prologue and epilogue inlined, whose tiles fit the
// per-block shared memory.
#pragma once

#include "emit/compositions/composition_rule.h"

namespace stitch::emit {

Result<RuleOutcome> try_attention(PlanningContext& context, GroupSchedule* schedule);

}  // namespace stitch::emit
