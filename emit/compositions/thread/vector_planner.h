// 128-bit accesses of the thread and packing compositions (emit/schedule.h, 3b.),
// used by the staged rule (global/stage_planner.h).
#pragma once

#include "emit/compositions/group_facts.h"

namespace stitch::emit {

// Vectorizes the thread or packing plan's stage when every output is float32 in runs
// of 4 and every input is read in runs or per run; else leaves it scalar.
void plan_vector_access(const GroupFacts& group, const cost_model::DeviceProfile& profile,
                        GroupSchedule* schedule);

}  // namespace stitch::emit
