// The global composition (emit/schedule.h, 4.): the always-correct schedule.
// Materialized values are computed in levels (the schedule's `levels` stages, each a
// grid-stride loop over a value's elements), separated by stitch_grid_sync in a
// cooperative launch, intermediates in the workspace.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"
#include "emit/compositions/stencil/stencil_plan.h"

namespace stitch::emit {

struct GlobalPlan {
  // 4b.: the one stage that evaluates the group's stencil walks its tiles.
  std::optional<StencilTile> stencil;
  std::string_view name() const { return "global"; }
};

// The composition's interface (emit/compositions/composition.h), defined in global_writer.cc.
template <>
struct Composition<GlobalPlan> : CompositionDefaults {
  static std::string detail(const ir::Graph&, const GroupSchedule& schedule, const GlobalPlan&);
  static void charge(const ChargeContext& context, const GlobalPlan& plan, Charges* shape);
  static const StencilTile* staged_tile(const GlobalPlan& plan) {
    return plan.stencil ? &*plan.stencil : nullptr;
  }
  // The stages' declarations, and the staged stencil tile's (4b.).
  static std::string prologue(const KernelWriter& w, const GlobalPlan& plan, const Written&) {
    return stage_prologue(w) +
           (plan.stencil ? Composition<StencilPlan>::stencil_tile_prologue(w, *plan.stencil) : "");
  }
  static Result<std::string> stages(KernelWriter& w, const GlobalPlan&, const Written& written) {
    return global_stages(w, written);
  }

  static Result<std::string> global_stages(KernelWriter& w, const Written& written);
  static std::string stage_prologue(const KernelWriter& w);
};

}  // namespace stitch::emit
