// The rules of build_schedule (emit/schedule.h): an ordered list, one per
// composition (or family: the staged rule plans global, thread, packing and stencil),
// each planning the group as its composition or refusing with its reason. The first
// rule that plans wins; the last (staged) always does. Registered in rules.cc, in
// the order of schedule.h's algorithm.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cost_model/device_profile.h"
#include "emit/compositions/group_facts.h"
#include "emit/schedule.h"
#include "ir/core/status.h"

namespace stitch::emit {

// Why a rule did not plan the group. An empty reason: the rule does not apply and
// has nothing to say (the why line of the global composition lists only reasons).
struct Refusal {
  std::string_view composition;  // "row-local", "a tiled MatMul"
  std::string reason;
};

struct PlanningContext {
  GroupFacts& group;
  const cost_model::DeviceProfile& profile;
  const ScheduleOptions& options;
  std::vector<Refusal> refusals;  // of the rules before, in order
};

// nullopt: planned (the schedule's plan, values, launch and why are set); else the
// refusal, with the schedule's plan and launch untouched.
using RuleOutcome = std::optional<Refusal>;
using CompositionRule = Result<RuleOutcome> (*)(PlanningContext& context, GroupSchedule* schedule);

// The rules in order.
const std::vector<CompositionRule>& composition_rules();

}  // namespace stitch::emit
