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
  // 4c.: stages [last_block_first, last_block_end) that need no more threads than one
  // block (a squeeze-excitation's MatMuls over one pixel) run on the last block to
  // finish stage last_block_first - 1, __syncthreads between them, instead of on the
  // whole grid behind a grid barrier each. That block is found by an arrival count in
  // the workspace at done_offset (artifact::kArrivalCounterOffset, which the launcher
  // zeroes with the barrier's counter before each launch), its verdict shared through
  // the arena at arrival_offset. A run from stage 1 to the last leaves the kernel no
  // grid barrier. No run: last_block_first < 0.
  int last_block_first = -1;
  int last_block_end = -1;
  int64_t done_offset = -1;
  int64_t arrival_offset = -1;
  bool last_block_run() const { return last_block_first >= 0; }
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
